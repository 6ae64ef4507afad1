import { decodeErrorResult, type Hex } from 'viem';
import { RpcError, RpcUnavailableError } from './rpc-client.js';

/** What a node's refusal of eth_sendRawTransaction means for the pipeline. */
export type BroadcastVerdict =
  /** The node has it (or had it): treat as accepted. */
  | 'known'
  /** The nonce is already used on chain: by one of our broadcasts, or by someone else. */
  | 'nonce-used'
  /** A future nonce the node will not queue: a lower nonce is missing. */
  | 'nonce-gap'
  /** Another transaction at this nonce pays more: bump to replace it. */
  | 'underpriced'
  /** Fees below what the next block needs: price again. */
  | 'fee-too-low'
  /** The account cannot pay value + gas: wait for funds. */
  | 'no-funds'
  /** The network could not be reached: try again later. */
  | 'unreachable'
  /** The node refuses this transaction as such: it can never be sent. */
  | 'invalid';

export function classifyBroadcastError(e: unknown): BroadcastVerdict {
  if (e instanceof RpcUnavailableError) return 'unreachable';
  if (!(e instanceof RpcError)) return 'unreachable';
  const m = e.message.toLowerCase();
  if (/already (known|imported)|known transaction|alreadyknown/.test(m)) return 'known';
  if (/nonce too low|nonce is too low|oldnonce|nonce has already been used/.test(m)) return 'nonce-used';
  if (/nonce too high|nonce gap|future nonce/.test(m)) return 'nonce-gap';
  if (/underpriced|replacement/.test(m)) return 'underpriced';
  if (/less than block base fee|fee cap less than|max fee per gas less than|feecap too low|fee too low|gas price too low/.test(m)) return 'fee-too-low';
  if (/insufficient funds|insufficient balance/.test(m)) return 'no-funds';
  return 'invalid';
}

const PANICS: Record<number, string> = {
  1: 'assertion failed',
  17: 'arithmetic overflow or underflow',
  18: 'division by zero',
  33: 'invalid enum value',
  49: 'pop on an empty array',
  50: 'array index out of bounds',
  65: 'out of memory',
  81: 'call to an uninitialised function',
};

/** Words for revert data: Error(string) reason, Panic code, else the raw custom error data. */
export function describeRevertData(data: unknown): string | undefined {
  const hex = typeof data === 'string' ? data : typeof (data as { data?: unknown })?.data === 'string' ? (data as { data: string }).data : undefined;
  if (!hex || !/^0x[0-9a-f]*$/i.test(hex) || hex.length < 10) return undefined;
  try {
    const decoded = decodeErrorResult({ data: hex as Hex });
    if (decoded.errorName === 'Error') return String(decoded.args?.[0] ?? '');
    if (decoded.errorName === 'Panic') {
      const code = Number(decoded.args?.[0] ?? 0);
      return `panic: ${PANICS[code] ?? `code 0x${code.toString(16)}`}`;
    }
  } catch {
    // A custom error we have no ABI for.
  }
  return `custom error ${hex.slice(0, 10)}${hex.length > 10 ? ` (data ${hex.length > 138 ? `${hex.slice(0, 138)}…` : hex})` : ''}`;
}

/** "execution reverted: <reason>" from an eth_call / eth_estimateGas error. */
export function revertReason(e: RpcError): string {
  const fromData = describeRevertData(e.data);
  const message = e.message.trim();
  if (fromData && !message.includes(fromData)) return `execution reverted: ${fromData}`;
  return /revert/i.test(message) ? message : `execution reverted: ${message}`;
}

export const isRevert = (e: unknown): e is RpcError =>
  e instanceof RpcError && (e.code === 3 || /revert|invalid opcode|out of gas|gas required exceeds/i.test(e.message));
