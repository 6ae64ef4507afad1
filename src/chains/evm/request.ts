import { z } from 'zod';
import { camelName, camelShape, graphqlInfo, validUntilInfo } from '../../core/family-spec.js';
import { atMost, checkRules, excludes, requiredWithout, rulesJson, together } from '../../lib/field-rules.js';
import { userOperationsPolicy } from './aa/policy.js';
import { boundedInt, evmAddress, hexData, INT64_MAX, readStored, rfc3339, u128 } from '../../lib/validate.js';

// The EVM family's policy and send request (spec.ts offers them; the pipeline reads them).

/** The gas of a plain transfer: no transaction takes less. */
export const TRANSFER_GAS = 21_000n;

/** Pricing speeds, slowest first (fees.ts reads fee history percentiles in this order). */
export const SPEEDS = ['safeLow', 'average', 'fast', 'fastest'] as const;
export type Speed = (typeof SPEEDS)[number];

export const evmPolicy = z
  .object({
    eip1559_pricing: z.boolean(),
    gas_limit_estimation: z.boolean(),
    gas_price_cap: u128,
    min_balance: u128,
    private_transactions: z.boolean(),
    whitelist_receivers: z.array(evmAddress),
    /** Ours: the relayer as an ERC-4337 bundler and paymaster (aa/policy.ts). */
    user_operations: userOperationsPolicy,
  })
  .partial()
  .strict();

export type EvmPolicy = z.output<typeof evmPolicy>;

/** Stored EVM policies with integer fields back as bigint. */
export const readEvmPolicy = (stored: unknown): EvmPolicy => readStored(evmPolicy, stored);

const FEES_1559 = ['max_fee_per_gas', 'max_priority_fee_per_gas'];

/** The rules between shape A's fields, in the order the service reports them. */
const evmRules = [
  excludes('gas_price', FEES_1559, 'cannot be combined with max_fee_per_gas / max_priority_fee_per_gas'),
  together(FEES_1559, 'max_fee_per_gas and max_priority_fee_per_gas must be given together'),
  atMost('max_priority_fee_per_gas', 'max_fee_per_gas', 'must not exceed max_fee_per_gas'),
  excludes('speed', ['gas_price', ...FEES_1559], 'cannot be combined with explicit gas prices'),
  requiredWithout('data', 'to', 'required when to is absent (contract creation)'),
];

/** Shape A of the send route (spec 4.1), by REST name, with the rules between its fields. */
export const evmFields = z
  .object({
    value: u128
      .meta({ description: 'Shape A (EVM), required: wei to send (u128, >= 0).' })
      .register(graphqlInfo, { description: 'EVM: wei to send (u128), required.' }),
    to: evmAddress.nullish().meta({ description: 'Shape A: recipient address; absent for contract creation.' }),
    data: hexData.nullish().meta({ description: 'Shape A: 0x-prefixed call data.' }),
    gas_limit: boundedInt(TRANSFER_GAS, INT64_MAX, 'int64')
      .nullish()
      .meta({ description: `Shape A: int64, >= ${TRANSFER_GAS}; estimated when absent (policy gas_limit_estimation).` }),
    gas_price: u128.optional().meta({ description: 'Shape A: legacy gas price (wei, >= 0).' }),
    max_fee_per_gas: u128.optional().meta({ description: 'Shape A: EIP-1559 max fee per gas (wei, >= 0).' }),
    max_priority_fee_per_gas: u128.optional().meta({ description: 'Shape A: EIP-1559 priority fee per gas (wei, >= 0).' }),
    speed: z.enum(SPEEDS).meta({ id: 'Speed' }).optional().meta({ description: 'Shape A: pricing speed when no explicit gas price is given (default fast).' }),
    valid_until: rfc3339
      .nullish()
      .meta({ description: 'Shapes A and C: RFC 3339 expiry (default 8 hours).', format: 'date-time' })
      .register(graphqlInfo, validUntilInfo),
  })
  .strict()
  .meta(rulesJson(evmRules));

/** Shape A in GraphQL field names, with the rules between its fields. */
export const evmShape = z.object(camelShape(evmFields.shape)).strict().superRefine(checkRules(evmRules, camelName));

export type EvmRequest = z.output<typeof evmShape>;
