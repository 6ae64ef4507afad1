import { isAddress } from '@solana/kit';
import { z } from 'zod';
import { SolanaRequestError } from './request-error.js';
import { SYSTEM_PROGRAM, type DecodedSolanaTx } from './transaction.js';

// Field names and shapes follow OpenZeppelin Relayer's Solana relayer policy.
// Enforced per transaction: allowed_programs, allowed_accounts,
// disallowed_accounts, allowed_tokens (mints of SPL transfers),
// max_signatures, max_tx_data_size, max_allowed_fee_lamports, min_balance.
// fee_payment_strategy, fee_margin_percentage and swap_config concern
// user-paid fees and token swaps, which this relayer does not do yet.

const address = z.string().refine((s) => isAddress(s), 'must be a base58 Solana address');
const uint = z.number().int().nonnegative();

export const solanaPolicySchema = z
  .strictObject({
    allowed_programs: z.array(address).optional(),
    max_signatures: z.number().int().min(1).max(255).optional(),
    max_tx_data_size: z.number().int().min(1).max(65_535).optional(),
    /** Lamports the relayer must keep after paying a transaction's fee. */
    min_balance: uint.optional(),
    allowed_tokens: z
      .array(
        z.strictObject({
          mint: address,
          decimals: z.number().int().min(0).max(255).optional(),
          symbol: z.string().optional(),
          max_allowed_fee: uint.optional(),
          /** Ours: a fixed price, whole tokens per 1 SOL, for networks with no market (else Jupiter's quote). */
          conversion_rate: z.number().positive().optional(),
          swap_config: z
            .strictObject({
              slippage_percentage: z.number().min(0).max(100).optional(),
              min_amount: uint.optional(),
              max_amount: uint.optional(),
              retain_min_amount: uint.optional(),
            })
            .optional(),
        }),
      )
      .optional(),
    fee_payment_strategy: z.enum(['user', 'relayer']).optional(),
    fee_margin_percentage: z.number().min(0).optional(),
    allowed_accounts: z.array(address).optional(),
    disallowed_accounts: z.array(address).optional(),
    max_allowed_fee_lamports: uint.optional(),
    swap_config: z
      .strictObject({
        strategy: z.enum(['jupiter-swap', 'jupiter-ultra', 'noop']).optional(),
        cron_schedule: z.string().optional(),
        min_balance_threshold: uint.optional(),
        jupiter_swap_options: z
          .strictObject({
            priority_fee_max_lamports: uint.optional(),
            priority_level: z.string().optional(),
            dynamic_compute_unit_limit: z.boolean().optional(),
          })
          .optional(),
      })
      .optional(),
  })
  .refine((p) => !(p.allowed_accounts && p.disallowed_accounts), {
    message: 'allowed_accounts and disallowed_accounts cannot both be set',
    path: ['allowed_accounts'],
  });

export type SolanaPolicy = z.infer<typeof solanaPolicySchema>;

const TOKEN_PROGRAMS = new Set(['TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb']);
const TOKEN_TRANSFER = 3;
const TOKEN_TRANSFER_CHECKED = 12;
const SYSTEM_ADVANCE_NONCE = 4;

function violation(rule: string, reason: string): SolanaRequestError {
  return new SolanaRequestError(`policy ${rule}: ${reason}`, `policy.${rule}`);
}

/**
 * Throws SolanaRequestError naming the first rule the transaction breaks.
 * `fee` (lamports) is needed for max_allowed_fee_lamports and min_balance,
 * `balance` (the relayer's, lamports) for min_balance.
 *
 * Independently of the policy, the relayer's account may appear in the
 * transaction only as the fee payer (or as a durable nonce authority): any
 * other use would let the request spend the relayer's own funds.
 */
export function checkSolanaPolicy(
  tx: DecodedSolanaTx,
  policy: SolanaPolicy | undefined,
  ctx: { fee?: bigint; balance?: bigint; exempt?: ReadonlySet<number> } = {},
): void {
  const { message } = tx;
  const accounts = message.staticAccounts;
  const accountAt = (i: number): string | undefined => accounts[i];
  const programs = message.instructions.map((ix) => accounts[ix.programAddressIndex]);

  // The fee instructions of a sponsored transaction (gasless.ts) pay the relayer: the rules below are for the user's.
  const exempt = ctx.exempt ?? new Set<number>();
  message.instructions.forEach((ix, i) => {
    if (exempt.has(i)) return;
    (ix.accountIndices ?? []).forEach((acc, pos) => {
      if (acc !== 0) return;
      const data = ix.data;
      const isNonceAuthority = programs[i] === SYSTEM_PROGRAM && data?.[0] === SYSTEM_ADVANCE_NONCE && pos === 2;
      if (!isNonceAuthority) {
        throw violation('relayer_account', `instruction ${i} (program ${programs[i]}) uses the relayer's account; the relayer only pays fees`);
      }
    });
  });

  if (!policy) return;

  if (policy.allowed_programs) {
    const allowed = new Set(policy.allowed_programs);
    programs.forEach((p, i) => {
      if (!exempt.has(i) && !allowed.has(p)) throw violation('allowed_programs', `instruction ${i} calls program ${p}, which is not allowed`);
    });
  }

  if (policy.allowed_accounts || policy.disallowed_accounts) {
    if (message.version === 0 && (message.addressTableLookups?.length ?? 0) > 0) {
      const rule = policy.allowed_accounts ? 'allowed_accounts' : 'disallowed_accounts';
      throw violation(rule, 'transactions using address lookup tables cannot be checked against the account lists');
    }
  }
  if (policy.disallowed_accounts) {
    const banned = new Set(policy.disallowed_accounts);
    const hit = accounts.find((a) => banned.has(a));
    if (hit) throw violation('disallowed_accounts', `account ${hit} is disallowed`);
  }
  if (policy.allowed_accounts) {
    const allowed = new Set(policy.allowed_accounts);
    const programSet = new Set(programs);
    const hit = accounts.slice(1).find((a) => !programSet.has(a) && !allowed.has(a));
    if (hit) throw violation('allowed_accounts', `account ${hit} is not in allowed_accounts`);
  }

  if (policy.allowed_tokens) {
    const mints = new Set<string>(policy.allowed_tokens.map((t) => t.mint));
    message.instructions.forEach((ix, i) => {
      if (exempt.has(i) || !TOKEN_PROGRAMS.has(programs[i])) return;
      const kind = ix.data?.[0];
      if (kind === TOKEN_TRANSFER) {
        throw violation('allowed_tokens', `instruction ${i} is an SPL Transfer; use TransferChecked so the mint can be checked`);
      }
      if (kind === TOKEN_TRANSFER_CHECKED) {
        const mint = accountAt(ix.accountIndices?.[1] ?? -1);
        if (!mint || !mints.has(mint))
          throw violation('allowed_tokens', `instruction ${i} transfers token mint ${mint ?? '(from a lookup table)'}, which is not allowed`);
      }
    });
  }

  if (policy.max_signatures !== undefined && message.header.numSignerAccounts > policy.max_signatures) {
    throw violation('max_signatures', `transaction needs ${message.header.numSignerAccounts} signatures, more than ${policy.max_signatures}`);
  }
  if (policy.max_tx_data_size !== undefined && tx.wireSize > policy.max_tx_data_size) {
    throw violation('max_tx_data_size', `transaction is ${tx.wireSize} bytes, more than ${policy.max_tx_data_size}`);
  }
  if (policy.max_allowed_fee_lamports !== undefined || policy.min_balance !== undefined) {
    if (ctx.fee === undefined) throw new Error('checkSolanaPolicy: fee is required for max_allowed_fee_lamports/min_balance');
  }
  if (policy.max_allowed_fee_lamports !== undefined && ctx.fee! > BigInt(policy.max_allowed_fee_lamports)) {
    throw violation('max_allowed_fee_lamports', `fee ${ctx.fee} lamports exceeds ${policy.max_allowed_fee_lamports}`);
  }
  if (policy.min_balance !== undefined) {
    if (ctx.balance === undefined) throw new Error('checkSolanaPolicy: balance is required for min_balance');
    if (ctx.balance - ctx.fee! < BigInt(policy.min_balance)) {
      throw violation('min_balance', `paying ${ctx.fee} lamports would leave the relayer below its min_balance of ${policy.min_balance}`);
    }
  }
}
