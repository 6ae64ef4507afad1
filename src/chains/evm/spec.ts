import { z } from 'zod';
import { defineFamily, sharedSendFields } from '../../core/family-spec.js';
import { evmAddress, hexData, int64, rfc3339, u128 } from '../../lib/validate.js';

// The EVM family's contract (core/family-spec.ts): what the rest of the service knows of it.

export const SPEEDS = ['fastest', 'fast', 'average', 'safeLow'] as const;

export const evmPolicy = z
  .object({
    eip1559_pricing: z.boolean(),
    gas_limit_estimation: z.boolean(),
    gas_price_cap: u128,
    min_balance: u128,
    private_transactions: z.boolean(),
    whitelist_receivers: z.array(evmAddress),
  })
  .partial()
  .strict();

export type EvmPolicy = z.output<typeof evmPolicy>;

/** Stored EVM policies with integer fields back as bigint. */
export function readEvmPolicy(stored: unknown): EvmPolicy {
  const p = (stored ?? {}) as Record<string, unknown>;
  const big = (x: unknown) => (x === undefined || x === null ? undefined : BigInt(x as string));
  return {
    eip1559_pricing: p.eip1559_pricing as boolean | undefined,
    gas_limit_estimation: p.gas_limit_estimation as boolean | undefined,
    gas_price_cap: big(p.gas_price_cap),
    min_balance: big(p.min_balance),
    private_transactions: p.private_transactions as boolean | undefined,
    whitelist_receivers: p.whitelist_receivers as string[] | undefined,
  };
}

/** Shape A of the send route (spec 4.1), in GraphQL field names. */
export const evmShape = z
  .object({
    value: u128,
    to: evmAddress.nullish(),
    data: hexData.nullish(),
    gasLimit: int64.nullish(),
    gasPrice: u128.optional(),
    maxFeePerGas: u128.optional(),
    maxPriorityFeePerGas: u128.optional(),
    speed: z.enum(SPEEDS).optional(),
    validUntil: rfc3339.optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    const eip1559 = r.maxFeePerGas !== undefined || r.maxPriorityFeePerGas !== undefined;
    if (r.gasPrice !== undefined && eip1559) {
      ctx.addIssue({ code: 'custom', path: ['gasPrice'], message: 'cannot be combined with max_fee_per_gas / max_priority_fee_per_gas' });
    }
    if (eip1559 && (r.maxFeePerGas === undefined || r.maxPriorityFeePerGas === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [r.maxFeePerGas === undefined ? 'maxFeePerGas' : 'maxPriorityFeePerGas'],
        message: 'max_fee_per_gas and max_priority_fee_per_gas must be given together',
      });
    }
    if (r.maxFeePerGas !== undefined && r.maxPriorityFeePerGas !== undefined && r.maxPriorityFeePerGas > r.maxFeePerGas) {
      ctx.addIssue({ code: 'custom', path: ['maxPriorityFeePerGas'], message: 'must not exceed max_fee_per_gas' });
    }
    if ((r.gasPrice !== undefined || eip1559) && r.speed !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['speed'], message: 'cannot be combined with explicit gas prices' });
    }
    if (!r.to && !r.data) ctx.addIssue({ code: 'custom', path: ['data'], message: 'required when to is absent (contract creation)' });
  });

export type EvmRequest = z.output<typeof evmShape>;

export const evmSpec = defineFamily({
  type: 'evm',
  label: 'EVM',
  signerKind: 'evm',
  network: {
    fields: {
      chain_id: z.number().int().positive().optional(),
      required_confirmations: z.number().int().min(0).optional(),
      features: z.array(z.string()).optional(),
      symbol: z.string().optional(),
    },
    required: ['chain_id'],
    probe: 'eth_chainId',
  },
  policy: {
    schema: evmPolicy as z.ZodType<Record<string, unknown>>,
    integers: ['gas_price_cap', 'min_balance'],
    document: {
      name: 'EvmPolicy',
      schema: {
        type: 'object',
        properties: {
          eip1559_pricing: { type: 'boolean' },
          gas_limit_estimation: { type: 'boolean' },
          gas_price_cap: { type: 'integer', minimum: 0 },
          min_balance: { type: 'integer', minimum: 0 },
          private_transactions: { type: 'boolean' },
          whitelist_receivers: { type: 'array', items: { type: 'string' } },
        },
        additionalProperties: false,
      },
    },
  },
  send: {
    letter: 'A',
    name: 'EvmTransactionRequest',
    description: 'Shape A, for EVM relayers.',
    summary: 'EVM relayers take value/to/data/gas fields',
    fields: {
      value: {
        type: { kind: 'u128' },
        required: true,
        description: 'Shape A (EVM), required: wei to send (u128, >= 0).',
        gqlDescription: 'EVM: wei to send (u128), required.',
      },
      to: { type: { kind: 'string' }, nullable: true, description: 'Shape A: recipient address; absent for contract creation.' },
      data: { type: { kind: 'string' }, nullable: true, description: 'Shape A: 0x-prefixed call data.' },
      gas_limit: { type: { kind: 'int64' }, nullable: true, description: 'Shape A: int64, >= 0; estimated when absent (policy gas_limit_estimation).' },
      gas_price: { type: { kind: 'u128' }, description: 'Shape A: legacy gas price (wei, >= 0).' },
      max_fee_per_gas: { type: { kind: 'u128' }, description: 'Shape A: EIP-1559 max fee per gas (wei, >= 0).' },
      max_priority_fee_per_gas: { type: { kind: 'u128' }, description: 'Shape A: EIP-1559 priority fee per gas (wei, >= 0).' },
      speed: {
        type: { kind: 'enum', name: 'Speed', values: SPEEDS },
        description: 'Shape A: pricing speed when no explicit gas price is given (default fast).',
      },
      valid_until: sharedSendFields.valid_until,
    },
    schema: evmShape,
  },
  record: {
    fields: ['from', 'to', 'value', 'data', 'nonce', 'gas_limit', 'gas_price', 'max_fee_per_gas', 'max_priority_fee_per_gas', 'speed', 'signature'],
  },
  load: () => import('./pipeline.js').then((m) => m.evmFamily),
  direct: () => import('./sign-and-forward.js').then((m) => m.evmDirect),
});
