// The Solana pipeline's decisions, as pure functions of what the chain answered.
import type { SignatureStatus } from './rpc.js';

/** One signed form of a transaction, kept for as long as the transaction is tracked. */
export interface SolanaSigning {
  signature: string;
  blockhash: string;
  /** Past this block height it can no longer land; null for durable-nonce transactions (never expires). */
  lastValidBlockHeight: string | null;
}

/** What the chain says about the transaction, looking at every signing at once. */
export type SolanaVerdict =
  /** One signing is on chain (at most one can be: they all spend the same payload). */
  | { kind: 'landed'; signature: string; slot: number; status: 'mined' | 'confirmed' | 'failed'; reason?: string }
  /** None is on chain and none can land any more: a fresh signing is safe. */
  | { kind: 'gone'; reason: string }
  /** None is on chain yet, and one still may land. */
  | { kind: 'open'; reason: string };

const describeErr = (err: unknown) => (typeof err === 'string' ? err : JSON.stringify(err));

/**
 * `statuses[i]` is getSignatureStatuses (with searchTransactionHistory) for `signings[i]`;
 * `finalizedHeight` is the finalized block height read before the statuses, or null when it was
 * not read. A re-signing is allowed only on evidence: every signing's blockhash is past its
 * lastValidBlockHeight at the finalized height AND none of the signatures is on chain.
 */
export function solanaVerdict(signings: SolanaSigning[], statuses: (SignatureStatus | null)[], finalizedHeight: bigint | null): SolanaVerdict {
  if (statuses.length !== signings.length) throw new Error('one status per signing is needed');
  let best: SolanaVerdict | undefined;
  const rank = { failed: 3, confirmed: 3, mined: 1 } as const;
  statuses.forEach((st, i) => {
    if (!st) return;
    const commitment = st.confirmationStatus ?? 'processed';
    const v: SolanaVerdict =
      st.err && commitment !== 'processed'
        ? { kind: 'landed', signature: signings[i].signature, slot: st.slot, status: 'failed', reason: describeErr(st.err) }
        : commitment === 'finalized'
          ? { kind: 'landed', signature: signings[i].signature, slot: st.slot, status: 'confirmed' }
          : { kind: 'landed', signature: signings[i].signature, slot: st.slot, status: 'mined' };
    if (best?.kind !== 'landed' || rank[v.status] > rank[best.status]) best = v;
  });
  if (best) return best;
  if (signings.length === 0) return { kind: 'open', reason: 'nothing was signed yet' };
  if (signings.some((s) => s.lastValidBlockHeight === null)) return { kind: 'open', reason: 'it uses a durable nonce, which does not expire' };
  if (finalizedHeight === null) return { kind: 'open', reason: 'the block height is unknown' };
  const last = signings.reduce((m, s) => (BigInt(s.lastValidBlockHeight!) > m ? BigInt(s.lastValidBlockHeight!) : m), 0n);
  if (finalizedHeight > last) return { kind: 'gone', reason: `not included by block height ${last} (finalized height is ${finalizedHeight})` };
  return { kind: 'open', reason: `its blockhash may still land until block height ${last} (finalized height is ${finalizedHeight})` };
}
