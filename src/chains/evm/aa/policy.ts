import { z } from 'zod';
import { evmAddress, U128_MAX } from '../../../lib/validate.js';
import { ENTRY_POINT_V07, ENTRY_POINT_V08 } from './canonical.js';

// An EVM relayer's `policies.user_operations`: which EntryPoints its bundler serves, where its
// paymaster comes from, and what the paymaster agrees to pay for. Amounts of wei are decimal
// strings (they pass 2^53), kept as written.

const wei = z
  .string({ error: 'must be a decimal string of wei' })
  .regex(/^(0|[1-9][0-9]{0,38})$/, 'must be a decimal string of wei')
  .refine((s) => BigInt(s) <= U128_MAX, 'must fit in u128');

const KNOWN = [ENTRY_POINT_V07, ENTRY_POINT_V08].map((a) => a.toLowerCase());

export const userOperationsPolicy = z.strictObject({
  /** The EntryPoints served (default: both). */
  entry_points: z
    .array(evmAddress.refine((a) => KNOWN.includes(a.toLowerCase()), `must be EntryPoint v0.7 (${ENTRY_POINT_V07}) or v0.8 (${ENTRY_POINT_V08})`))
    .min(1)
    .optional(),
  paymaster: z.union([
    z.strictObject({
      /** The relayer deploys its own paymaster, deposits `deposit`, and tops it up below `min_deposit`. */
      deploy: z.literal(true),
      deposit: wei,
      min_deposit: wei.optional(),
    }),
    /** A paymaster already deployed whose signer is the relayer's signer. */
    z.strictObject({ address: evmAddress }),
  ]),
  sponsorship: z
    .strictObject({
      allowed_targets: z.array(evmAddress).optional(),
      max_cost_per_operation: wei.optional(),
      max_operations_per_sender_per_hour: z.number().int().min(1).max(1_000_000).optional(),
    })
    .optional(),
});

export type UserOperationsPolicy = z.output<typeof userOperationsPolicy>;

/** The EntryPoints a policy serves, lower-case. */
export const servedEntryPoints = (p: UserOperationsPolicy): string[] => (p.entry_points ?? [ENTRY_POINT_V07, ENTRY_POINT_V08]).map((a) => a.toLowerCase());
