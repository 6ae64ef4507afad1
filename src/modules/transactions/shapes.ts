import { z } from 'zod';
import { invalid } from '../../core/errors.js';
import { describeIssues, evmAddress, hexData, int64, u128 } from '../../lib/validate.js';
import { parseStellarRequest, StellarRequestError, type StellarTransactionRequest } from '../../chains/stellar/index.js';
import type { NetworkType } from '../relayers/policies.js';

// The three request shapes of the send route (spec 4.1), selected by the relayer's network type.
// GraphQL field names; the REST adapter maps the spec's snake_case names onto them.

export const DEFAULT_VALIDITY_MS = 8 * 60 * 60 * 1000;

const rfc3339 = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i, 'must be an RFC 3339 timestamp')
  .transform((s, ctx) => {
    const d = new Date(s);
    if (Number.isNaN(d.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid date' });
      return z.NEVER;
    }
    return d;
  });

export const evmShape = z
  .object({
    value: u128,
    to: evmAddress.nullish(),
    data: hexData.nullish(),
    gasLimit: int64.nullish(),
    gasPrice: u128.optional(),
    maxFeePerGas: u128.optional(),
    maxPriorityFeePerGas: u128.optional(),
    speed: z.enum(['fastest', 'fast', 'average', 'safeLow']).optional(),
    validUntil: rfc3339.optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    const eip1559 = r.maxFeePerGas !== undefined || r.maxPriorityFeePerGas !== undefined;
    if (r.gasPrice !== undefined && eip1559) {
      ctx.addIssue({ code: 'custom', path: ['gasPrice'], message: 'cannot be combined with max_fee_per_gas / max_priority_fee_per_gas' });
    }
    if (eip1559 && (r.maxFeePerGas === undefined || r.maxPriorityFeePerGas === undefined)) {
      ctx.addIssue({ code: 'custom', path: [r.maxFeePerGas === undefined ? 'maxFeePerGas' : 'maxPriorityFeePerGas'], message: 'max_fee_per_gas and max_priority_fee_per_gas must be given together' });
    }
    if (r.maxFeePerGas !== undefined && r.maxPriorityFeePerGas !== undefined && r.maxPriorityFeePerGas > r.maxFeePerGas) {
      ctx.addIssue({ code: 'custom', path: ['maxPriorityFeePerGas'], message: 'must not exceed max_fee_per_gas' });
    }
    if ((r.gasPrice !== undefined || eip1559) && r.speed !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['speed'], message: 'cannot be combined with explicit gas prices' });
    }
    if (!r.to && !r.data) ctx.addIssue({ code: 'custom', path: ['data'], message: 'required when to is absent (contract creation)' });
  });

// Shape B: the chain module judges the encoding and the transaction itself.
export const solanaShape = z.object({ transaction: z.string('required').min(1, 'required') }).strict();

// Shape C: GraphQL names to the spec's. Its field rules (exclusivity, memo variants, operations,
// max_fee default) live in one place, the Stellar chain module's request schema.
const STELLAR_FIELDS = {
  network: 'network',
  operations: 'operations',
  transactionXdr: 'transaction_xdr',
  sourceAccount: 'source_account',
  memo: 'memo',
  validUntil: 'valid_until',
  feeBump: 'fee_bump',
  maxFee: 'max_fee',
} as const;

/** null means absent in every shape C field (and in a memo's value). */
const withoutNulls = (v: unknown): unknown =>
  v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined)) : v;

export const stellarShape = z
  .object(Object.fromEntries(Object.keys(STELLAR_FIELDS).map((k) => [k, z.unknown().optional()])) as Record<keyof typeof STELLAR_FIELDS, z.ZodOptional<z.ZodUnknown>>)
  .strict()
  .transform((input, ctx): StellarTransactionRequest => {
    const body = Object.fromEntries(
      Object.entries(withoutNulls(input) as Record<string, unknown>).map(([k, v]) => [STELLAR_FIELDS[k as keyof typeof STELLAR_FIELDS], k === 'memo' ? withoutNulls(v) : v]),
    );
    try {
      return parseStellarRequest(body);
    } catch (e) {
      if (!(e instanceof StellarRequestError)) throw e;
      ctx.addIssue({ code: 'custom', message: e.message });
      return z.NEVER;
    }
  });

export type EvmRequest = z.output<typeof evmShape>;
export type SolanaRequest = z.output<typeof solanaShape>;
export type StellarRequest = z.output<typeof stellarShape>;
export type ShapeOf<T extends NetworkType> = T extends 'evm' ? EvmRequest : T extends 'solana' ? SolanaRequest : StellarRequest;

const shapes = { evm: evmShape, solana: solanaShape, stellar: stellarShape } as const;

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Validates a send request for a relayer of `type`, naming fields as the REST spec does. */
export function parseShape<T extends NetworkType>(type: T, input: Record<string, unknown>): ShapeOf<T> {
  const defined = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  const result = shapes[type].safeParse(defined);
  if (!result.success) {
    const detail = result.error.issues
      .map((i) => {
        const path = i.path.map((p) => snake(String(p))).join('.');
        if (i.code === 'unrecognized_keys') {
          if (path) return `${i.keys.map((k) => `${path}.${snake(k)}`).join(', ')}: unknown field`;
          return `${i.keys.map(snake).join(', ')}: not a field of ${type} transactions`;
        }
        return path ? `${path}: ${i.message}` : i.message;
      })
      .join('; ');
    throw invalid(detail);
  }
  return result.data as ShapeOf<T>;
}

export { describeIssues };
