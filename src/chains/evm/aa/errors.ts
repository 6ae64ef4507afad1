// ERC-7769's error codes for the bundler JSON-RPC methods, and the error that carries one.

export const USEROP_CODES = {
  invalidParams: -32602,
  /** Rejected by the EntryPoint's simulation: the account's validation or the operation itself. */
  rejected: -32500,
  /** Rejected by the paymaster's validatePaymasterUserOp. */
  paymaster: -32501,
  /** A forbidden opcode in validation. */
  opcode: -32502,
  /** The account or the paymaster returned a time range that is over or not yet begun. */
  timeRange: -32503,
  /** The paymaster or the signature aggregator is throttled or banned (our policy limits answer this too). */
  throttled: -32504,
  /** Stake or unstake delay too low. */
  stake: -32505,
  /** The account asked for a signature aggregator, which this bundler does not support. */
  aggregator: -32506,
  /** The account's (or the paymaster's) signature check failed. */
  signature: -32507,
} as const;

export type UserOpCode = (typeof USEROP_CODES)[keyof typeof USEROP_CODES];

export class UserOpError extends Error {
  constructor(
    readonly code: UserOpCode,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const invalidParams = (message: string) => new UserOpError(USEROP_CODES.invalidParams, message);

/**
 * The ERC code for an EntryPoint FailedOp reason ("AAnn ..."): AA1x creation and AA2x account
 * validation are -32500, except AA22 (time range) and AA24 (signature); AA3x are the paymaster's,
 * except AA32 (time range) and AA34 (signature).
 */
export function codeOfReason(reason: string): UserOpCode {
  const m = /^AA(\d)(\d)/.exec(reason);
  if (!m) return USEROP_CODES.rejected;
  const key = `${m[1]}${m[2]}`;
  if (key === '22' || key === '32') return USEROP_CODES.timeRange;
  if (key === '24' || key === '34') return USEROP_CODES.signature;
  if (key === '96') return USEROP_CODES.aggregator;
  if (m[1] === '3') return USEROP_CODES.paymaster;
  return USEROP_CODES.rejected;
}
