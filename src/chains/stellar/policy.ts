import { z } from 'zod';
import { StellarRequestError } from './request-error.js';

// Field names and shapes follow OpenZeppelin Relayer's Stellar relayer policy.
// Of these, only min_balance and max_fee bear on a single transaction and are
// enforced here; timeout_seconds is the default validity window used by the
// builder; the rest are accepted so configs round-trip.

const uint = z.number().int().nonnegative();
const percentage = z.number().min(0).max(100);

const swapConfigForToken = z.strictObject({
  slippage_percentage: percentage.optional(),
  min_amount: uint.optional(),
  max_amount: uint.optional(),
  retain_min_amount: uint.optional(),
});

const tokenMetadata = z.strictObject({
  kind: z.union([
    z.literal('native'),
    z.strictObject({ classic: z.strictObject({ code: z.string().min(1).max(12), issuer: z.string() }) }),
    z.strictObject({ contract: z.strictObject({ contract_id: z.string() }) }),
  ]),
  decimals: uint,
  canonical_asset_id: z.string(),
});

export const stellarPolicySchema = z.strictObject({
  /** Stroops the relayer account must keep after paying a transaction's fee. */
  min_balance: uint.optional(),
  /** Highest total fee (stroops) the relayer pays for one transaction. */
  max_fee: uint.max(0xffffffff).optional(),
  timeout_seconds: z.number().int().positive().optional(),
  concurrent_transactions: z.boolean().optional(),
  allowed_tokens: z
    .array(
      z.strictObject({
        asset: z.string().min(1),
        metadata: tokenMetadata.optional(),
        max_allowed_fee: uint.optional(),
        /** Ours: a fixed price, whole tokens per 1 XLM, for networks with no market (else Horizon's paths). */
        conversion_rate: z.number().positive().optional(),
        swap_config: swapConfigForToken.optional(),
      }),
    )
    .optional(),
  fee_payment_strategy: z.enum(['user', 'relayer']).optional(),
  slippage_percentage: percentage.optional(),
  fee_margin_percentage: z.number().min(0).optional(),
  swap_config: z
    .strictObject({
      strategies: z.array(z.enum(['order-book', 'soroswap'])).default([]),
      cron_schedule: z.string().optional(),
      min_balance_threshold: uint.optional(),
    })
    .optional(),
});

export type StellarPolicy = z.infer<typeof stellarPolicySchema>;

/**
 * Checks the fee a transaction will cost the relayer against the policy.
 * `balance` (stroops) is only needed when the policy sets min_balance.
 */
export function checkStellarPolicy(policy: StellarPolicy | undefined, ctx: { fee: bigint; balance?: bigint }): void {
  if (!policy) return;
  if (policy.max_fee !== undefined && ctx.fee > BigInt(policy.max_fee)) {
    throw new StellarRequestError(`policy max_fee: transaction fee ${ctx.fee} stroops exceeds the relayer's max_fee of ${policy.max_fee}`, 'policy.max_fee');
  }
  if (policy.min_balance !== undefined) {
    if (ctx.balance === undefined) throw new Error('checkStellarPolicy: balance is required when min_balance is set');
    if (ctx.balance - ctx.fee < BigInt(policy.min_balance)) {
      throw new StellarRequestError(
        `policy min_balance: paying ${ctx.fee} stroops would leave the relayer below its min_balance of ${policy.min_balance}`,
        'policy.min_balance',
      );
    }
  }
}
