import { z } from 'zod';
import { FAMILIES, NETWORK_TYPES, type NetworkType } from '../chains/families.js';
import { urlText } from '../lib/validate.js';

// The config file format of OpenZeppelin Relayer, so a team moving from it keeps its file.

export const secret = z.union([
  z.object({ type: z.literal('plain'), value: z.string() }).strict(),
  z.object({ type: z.literal('env'), value: z.string().min(1) }).strict(),
]);
export type Secret = z.infer<typeof secret>;

export const rpcUrl = z.union([urlText.url(), z.object({ url: urlText.url(), weight: z.number().int().min(0).max(100).default(100) }).strict()]);

export const rpcConfig = z.object({ url: urlText.url(), weight: z.number().int().min(0).max(100).default(100) }).strict();

const networkBase = {
  network: z.string().min(1),
  from: z.string().min(1).optional(),
  rpc_urls: z.array(rpcUrl).optional(),
  explorer_urls: z.array(z.string()).optional(),
  average_blocktime_ms: z.number().int().positive().optional(),
  is_testnet: z.boolean().optional(),
  tags: z.array(z.string()).optional(),
};

/** A network entry of each family's type: the common fields and the family's own (its spec's network.fields). */
export const networkEntry = z.discriminatedUnion(
  'type',
  // Typed by the common fields; the family's own are read by name (config/load.ts).
  FAMILIES.map((f) => z.object({ type: z.literal(f.type), ...networkBase, ...f.network.fields }).passthrough()) as unknown as [
    z.ZodObject<{ type: z.ZodLiteral<NetworkType> } & typeof networkBase>,
  ],
);
export type NetworkEntry = z.infer<typeof networkEntry>;

export const signerEntry = z
  .object({
    id: z.string().min(1),
    type: z.string().min(1),
    config: z
      .object({ path: z.string().min(1), passphrase: secret })
      .passthrough()
      .optional(),
    path: z.string().min(1).optional(),
    passphrase: secret.optional(),
  })
  .passthrough();

export const notificationEntry = z
  .object({
    id: z.string().min(1),
    type: z.literal('webhook').default('webhook'),
    url: urlText.url(),
    signing_key: secret.nullish(),
  })
  .passthrough();

export const relayerEntry = z
  .object({
    id: z.string().min(1),
    name: z.string().min(1),
    network: z.string().min(1),
    network_type: z.enum(NETWORK_TYPES).meta({ id: 'NetworkType' }),
    paused: z.boolean().default(false),
    signer_id: z.string().min(1),
    notification_id: z.string().min(1).nullish(),
    policies: z.record(z.string(), z.unknown()).nullish(),
    custom_rpc_urls: z.array(rpcUrl).nullish(),
  })
  .passthrough();

export const configFile = z
  .object({
    relayers: z.array(z.unknown()).default([]),
    signers: z.array(z.unknown()).default([]),
    notifications: z.array(z.unknown()).default([]),
    networks: z.union([z.string().min(1), z.array(z.unknown())]).default([]),
    plugins: z.array(z.unknown()).optional(),
  })
  .passthrough();
