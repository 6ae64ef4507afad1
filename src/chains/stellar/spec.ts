import { z } from 'zod';
import { defineFamily, sharedSendFields, type RequestField } from '../../core/family-spec.js';
import { StellarRequestError } from './request-error.js';
import { stellarPolicySchema } from './policy.js';
import { parseStellarRequest, type StellarTransactionRequest } from './request.js';

// The Stellar family's contract (core/family-spec.ts): what the rest of the service knows of it.

const fields = {
  network: { type: { kind: 'string' }, required: true, description: 'Shape C (Stellar), required: the network name.' },
  operations: {
    type: { kind: 'list', items: { kind: 'object' } },
    nullable: true,
    description: 'Shape C: operations to build the transaction from; exclusive with transaction_xdr.',
  },
  transaction_xdr: {
    type: { kind: 'string' },
    nullable: true,
    description: 'Shape C: a pre-built base64 XDR transaction, signed or unsigned; exclusive with operations.',
  },
  source_account: { type: { kind: 'string' }, nullable: true, description: 'Shape C: the source account (default: the relayer).' },
  memo: {
    type: {
      kind: 'object',
      name: 'MemoInput',
      fields: {
        type: { type: { kind: 'string' }, required: true, description: 'none, text, id, hash or return', gqlDescription: 'none, text, id, hash or return' },
        value: { type: { kind: 'any' }, nullable: true },
      },
    },
    nullable: true,
    description:
      'Shape C: `{"type": "none"}`, `{"type": "text", "value": string}`, `{"type": "id", "value": integer}`, `{"type": "hash" | "return", "value": [32 bytes]}`.',
  },
  valid_until: sharedSendFields.valid_until,
  fee_bump: { type: { kind: 'boolean' }, nullable: true, description: 'Shape C: wrap in a fee-bump transaction; only with a signed transaction_xdr.' },
  max_fee: { type: { kind: 'int64' }, nullable: true, description: 'Shape C: fee cap in stroops (int64, default 1,000,000).' },
} satisfies Record<string, RequestField>;

const camel = (s: string) => s.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
/** GraphQL names to the spec's. */
const restName = Object.fromEntries(Object.keys(fields).map((k) => [camel(k), k]));

/** null means absent in every shape C field (and in a memo's value). */
const withoutNulls = (v: unknown): unknown =>
  v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined)) : v;

/**
 * Shape C of the send route (spec 4.1). Its field rules (exclusivity, memo variants, operations,
 * max_fee default) live in one place, the request schema of request.ts, which takes the spec's names.
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
  network: { fields: { passphrase: z.string().min(1).optional() }, required: ['passphrase'], probe: 'getHealth' },
  policy: { schema: stellarPolicySchema as z.ZodType<Record<string, unknown>> },
  send: {
    letter: 'C',
    name: 'StellarTransactionRequest',
    description: 'Shape C, for Stellar relayers: exactly one of operations and transaction_xdr.',
    summary: 'Stellar relayers network/operations/transactionXdr/...',
    restHint: '(`network`, `operations` or `transaction_xdr`, ...)',
    fields,
    schema: stellarShape,
  },
  record: { fields: ['network_type', 'from'], networkData: true },
  load: () => import('./pipeline.js').then((m) => m.stellarFamily),
  direct: () => import('./sign-and-forward.js').then((m) => m.stellarDirect),
});
