import { z } from 'zod';
import { badRequest } from '../../graphql/errors.js';
import { describeIssues, evmAddress, hexData, int64, u128 } from '../../lib/validate.js';
import type { NetworkType } from '../relayers/policies.js';

// The three request shapes of the send route (spec 4.1), selected by the relayer's network type.
// GraphQL field names; the REST adapter maps the spec's snake_case names onto them.

export const DEFAULT_VALIDITY_MS = 8 * 60 * 60 * 1000;
export const DEFAULT_STELLAR_MAX_FEE = 1_000_000n;

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

export const solanaShape = z
  .object({ transaction: z.string().min(1, 'required').regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64') })
  .strict();

const bytes32 = z.array(z.number().int().min(0).max(255)).length(32, 'must be 32 bytes');
export const memoShape = z.discriminatedUnion('type', [
  z.object({ type: z.literal('none') }).strict(),
  z.object({ type: z.literal('text'), value: z.string().refine((s) => Buffer.byteLength(s) <= 28, 'must be at most 28 bytes') }).strict(),
  z.object({ type: z.literal('id'), value: u128.refine((n) => n < 1n << 64n, 'must fit in uint64') }).strict(),
  z.object({ type: z.literal('hash'), value: bytes32 }).strict(),
  z.object({ type: z.literal('return'), value: bytes32 }).strict(),
]);

export const stellarShape = z
  .object({
    network: z.string().min(1, 'required'),
    operations: z.array(z.record(z.string(), z.unknown())).min(1, 'must not be empty').max(100).nullish(),
    transactionXdr: z.string().min(1).regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64').nullish(),
    sourceAccount: z.string().nullish(),
    memo: memoShape.nullish(),
    validUntil: rfc3339.nullish(),
    feeBump: z.boolean().nullish(),
    maxFee: int64.nullish(),
  })
  .strict()
  .superRefine((r, ctx) => {
    if (r.operations && r.transactionXdr) ctx.addIssue({ code: 'custom', path: ['transactionXdr'], message: 'operations and transaction_xdr are mutually exclusive' });
    if (!r.operations && !r.transactionXdr) ctx.addIssue({ code: 'custom', path: ['operations'], message: 'one of operations or transaction_xdr is required' });
    if (r.feeBump && !r.transactionXdr) ctx.addIssue({ code: 'custom', path: ['feeBump'], message: 'fee_bump is valid only with a signed transaction_xdr' });
    if (r.transactionXdr && r.memo) ctx.addIssue({ code: 'custom', path: ['memo'], message: 'cannot be combined with transaction_xdr' });
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
    throw badRequest(detail);
  }
  return result.data as ShapeOf<T>;
}

export { describeIssues };
