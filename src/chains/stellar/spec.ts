import { z } from 'zod';
import { camelName, defineFamily } from '../../core/family-spec.js';
import { StellarRequestError } from './request-error.js';
import { stellarPolicySchema } from './policy.js';
import { parseStellarRequest, stellarTransactionRequestSchema, type StellarTransactionRequest } from './request.js';

// The Stellar family's contract (core/family-spec.ts): what the rest of the service knows of it.

/** Shape C by REST name: the fields of request.ts, each but network also taking null (as absent), and its rules between them. */
const stellarFields = z
  .strictObject(Object.fromEntries(Object.entries(stellarTransactionRequestSchema.shape).map(([k, v]) => [k, k === 'network' ? v : v.nullable()])))
  .meta(stellarTransactionRequestSchema.meta() ?? {});

/** GraphQL names to the spec's. */
const restName = Object.fromEntries(Object.keys(stellarFields.shape).map((k) => [camelName(k), k]));

/** null means absent in every shape C field (and in a memo's value). */
const withoutNulls = (v: unknown): unknown =>
  v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined)) : v;

/**
 * Shape C of the send route (spec 4.1) in GraphQL names. Its fields and rules (exclusivity, memo
 * variants, operations, max_fee default) live in one place, the request schema of request.ts, which
 * takes the spec's names.
 */
export const stellarShape = z
  .object(Object.fromEntries(Object.keys(restName).map((k) => [k, z.unknown().optional()])) as Record<string, z.ZodOptional<z.ZodUnknown>>)
  .strict()
  .transform((input, ctx): StellarTransactionRequest => {
    const body = Object.fromEntries(
      Object.entries(withoutNulls(input) as Record<string, unknown>).map(([k, v]) => [restName[k], k === 'memo' ? withoutNulls(v) : v]),
    );
    try {
      return parseStellarRequest(body);
    } catch (e) {
      if (!(e instanceof StellarRequestError)) throw e;
      ctx.addIssue({ code: 'custom', message: e.message });
      return z.NEVER;
    }
  });

export type StellarRequest = z.output<typeof stellarShape>;

export const stellarSpec = defineFamily({
  type: 'stellar',
  label: 'Stellar',
  signerKind: 'stellar',
  network: {
    fields: {
      passphrase: z.string().min(1).optional(),
      /** Horizon, for gasless fees priced on the order books (default: the public one of mainnet and testnet). */
      horizon_url: z.url({ protocol: /^https?$/ }).optional(),
    },
    required: ['passphrase'],
    probe: 'getHealth',
  },
  policy: { schema: stellarPolicySchema, name: 'StellarPolicy' },
  send: {
    letter: 'C',
    name: 'StellarTransactionRequest',
    description: 'Shape C, for Stellar relayers: exactly one of operations and transaction_xdr.',
    summary: 'Stellar relayers network/operations/transactionXdr/...',
    restHint: '(`network`, `operations` or `transaction_xdr`, ...)',
    fields: stellarFields,
    schema: stellarShape,
  },
  record: { fields: ['network_type', 'from'], networkData: true },
  load: () => import('./pipeline.js').then((m) => m.stellarFamily),
  direct: () => import('./sign-and-forward.js').then((m) => m.stellarDirect),
});
