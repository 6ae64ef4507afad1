import { z } from 'zod';
import { solanaPolicySchema } from '../../chains/solana/policy.js';
import { stellarPolicySchema } from '../../chains/stellar/policy.js';
import { evmAddress, u128 } from '../../lib/validate.js';

export type NetworkType = 'evm' | 'solana' | 'stellar';

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

// The Solana and Stellar policy fields are the reference system's; their chain modules own them.
const schemas: Record<NetworkType, z.ZodType<Record<string, unknown>>> = {
  evm: evmPolicy as z.ZodType<Record<string, unknown>>,
  solana: solanaPolicySchema as z.ZodType<Record<string, unknown>>,
  stellar: stellarPolicySchema as z.ZodType<Record<string, unknown>>,
};

/** Validates a policy object for a family; returns it in storable form (bigints as decimal strings). */
export function parsePolicies(type: NetworkType, raw: unknown): { ok: true; value: Record<string, unknown> } | { ok: false; error: z.ZodError } {
  const result = schemas[type].safeParse(raw ?? {});
  if (!result.success) return { ok: false, error: result.error };
  return { ok: true, value: toStorable(result.data) as Record<string, unknown> };
}

function toStorable(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(toStorable);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => [k, toStorable(x)]));
  return v;
}

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
