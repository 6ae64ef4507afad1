import { z } from 'zod';
import type { NetworkType } from '../family-list.js';
import { rpcEntries } from '../rpc-urls.js';

/**
 * A relayer as the config file writes it (OpenZeppelin Relayer's format, snake_case), of one of
 * `types`: the file's entries and the API's created relayers are checked by the same schema.
 */
export const relayerEntry = (types: readonly [NetworkType, ...NetworkType[]]) =>
  z
    .object({
      id: z.string().min(1),
      name: z.string().min(1),
      network: z.string().min(1),
      network_type: z.enum(types).meta({ id: 'NetworkType' }),
      paused: z.boolean().default(false),
      signer_id: z.string().min(1),
      notification_id: z.string().min(1).nullish(),
      policies: z.record(z.string(), z.unknown()).nullish(),
      custom_rpc_urls: rpcEntries.nullish(),
    })
    .passthrough();
