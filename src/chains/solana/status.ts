import { getBase58Decoder, getTransactionDecoder } from '@solana/kit';
import { JsonRpcError } from '../jsonrpc.js';
import type { SolanaRpc } from './rpc-client.js';

/**
 * - pending: not seen yet, blockhash still valid.
 * - mined: processed or confirmed (could still be rolled back).
 * - confirmed: finalized.
 * - failed: landed (confirmed or finalized) with an error; the fee was paid.
 * - expired: not seen and the blockhash can no longer land it; safe to resubmit with a fresh blockhash.
 */
export type SolanaTxStatus =
  | { status: 'pending' }
  | { status: 'mined'; slot: number; commitment: 'processed' | 'confirmed' }
  | { status: 'confirmed'; slot: number }
  | { status: 'failed'; slot: number; reason: string }
  | { status: 'expired'; reason: string };

export type SolanaSubmitOutcome =
  | { outcome: 'submitted'; signature: string }
  /** The blockhash is unknown to the node: prepare again with `resubmit: true`. */
  | { outcome: 'expired'; reason: string }
  /** The node refused the transaction (bad signature, preflight failure, ...). */
  | { outcome: 'rejected'; reason: string };

function describeErr(err: unknown): string {
  return typeof err === 'string' ? err : JSON.stringify(err);
}

/**
 * Expiry is judged on the finalized block height, read before the status, so a
 * transaction reported expired cannot still land on any fork.
 */
export async function checkSolanaTx(rpc: SolanaRpc, signature: string, opts: { lastValidBlockHeight?: bigint | null } = {}): Promise<SolanaTxStatus> {
  const lastValid = opts.lastValidBlockHeight ?? null;
  const height = lastValid === null ? null : await rpc.getBlockHeight('finalized');
  const [st] = await rpc.getSignatureStatuses([signature], { searchTransactionHistory: true });
  if (st) {
    const commitment = st.confirmationStatus ?? 'processed';
    if (st.err && commitment !== 'processed') return { status: 'failed', slot: st.slot, reason: describeErr(st.err) };
    if (commitment === 'finalized') return { status: 'confirmed', slot: st.slot };
    return { status: 'mined', slot: st.slot, commitment };
  }
  if (height !== null && lastValid !== null && height > lastValid) {
    return { status: 'expired', reason: `not included by block height ${lastValid} (finalized height is ${height})` };
  }
  return { status: 'pending' };
}

function feePayerSignature(wireBase64: string): string {
  const tx = getTransactionDecoder().decode(Buffer.from(wireBase64, 'base64'));
  const first = Object.values(tx.signatures)[0];
  if (!first) throw new Error('transaction has no fee payer signature');
  return getBase58Decoder().decode(first);
}

// Solana RPC error codes for sendTransaction.
const PREFLIGHT_FAILURE = -32002;
const SIGNATURE_VERIFICATION_FAILURE = -32003;

export async function submitSolanaTx(rpc: SolanaRpc, wireBase64: string, opts: { skipPreflight?: boolean } = {}): Promise<SolanaSubmitOutcome> {
  try {
    const signature = await rpc.sendTransaction(wireBase64, { skipPreflight: opts.skipPreflight ?? false, maxRetries: 0 });
    return { outcome: 'submitted', signature };
  } catch (err) {
    if (!(err instanceof JsonRpcError)) throw err;
    if (err.code === SIGNATURE_VERIFICATION_FAILURE) return { outcome: 'rejected', reason: 'signature verification failed' };
    if (err.code === PREFLIGHT_FAILURE) {
      const txErr = (err.data as { err?: unknown } | undefined)?.err;
      if (txErr === 'BlockhashNotFound') return { outcome: 'expired', reason: 'blockhash not found' };
      if (txErr === 'AlreadyProcessed') return { outcome: 'submitted', signature: feePayerSignature(wireBase64) };
      if (txErr !== undefined) return { outcome: 'rejected', reason: `preflight failed: ${describeErr(txErr)}` };
    }
    return { outcome: 'rejected', reason: err.message };
  }
}
