// The Solana pipeline's decisions, as pure functions of what the chain answered.
import type { Transaction } from '../../generated/prisma/client.js';
import type { TransactionPatch } from '../../core/transactions/rows.js';
import type { SignatureStatus } from './rpc-client.js';

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

// ---------------------------------------------------------------------------------------------
// The step: what each row needs next, and what each effect's outcome means. family.ts performs.

/** What the pipeline keeps about the transaction (transactions.chain_state). */
export interface SolanaState {
  /** The current signed wire transaction, written before it is sent so that a restart sends the same bytes. */
  wire: string;
  signature: string;
  blockhash: string;
  /** Past this block height it can no longer land; null for durable-nonce transactions. */
  lastValidBlockHeight: string | null;
  /** A node accepted this wire transaction. */
  accepted: boolean;
  /** Which signing path made the current wire transaction (names its crash points). */
  kind?: 'send' | 'resign';
  /**
   * Every signing ever made of this transaction, oldest first, each written before it was sent:
   * any of them may be the one on chain, so all are looked up.
   */
  signings?: SolanaSigning[];
  /** Published as the record's network fields (REST, webhooks, GraphQL networkData). */
  public: Record<string, unknown>;
}

/** A signing as made by the sign effect. */
export interface MadeSigning extends SolanaSigning {
  wire: string;
  fee?: bigint;
}

export type SolanaEffect =
  /** Sign the request (again, with a fresh blockhash: `resubmit`). */
  | { stage: 'sign'; point: 'send' | 'resign'; request: unknown; resubmit: boolean }
  /** Send the wire transaction (`again`: the same bytes once more, without preflight, while it may land). */
  | { stage: 'send'; point?: 'send' | 'resign'; wire: string; again?: boolean }
  /** Look up every signing on chain. */
  | { stage: 'read'; signings: SolanaSigning[] };

export type SolanaOutcome =
  | { signed: true; signing: MadeSigning }
  /** Signing refused: the request cannot be signed (`blockhashExpired`: co-signed, its blockhash gone). */
  | { signed: false; refused: string; blockhashExpired: boolean }
  | { submitted: 'submitted' }
  | { submitted: 'expired' | 'rejected'; reason: string }
  | { verdict: SolanaVerdict }
  /** The effect failed (the network did not answer): nothing is known. */
  | { error: string; reason?: string };

export interface SolanaDecision {
  tx: Transaction;
  patch: TransactionPatch;
  effects: SolanaEffect[];
  nextInMs: number | null;
  state: SolanaState | null;
  /** The node's refusal, kept while every signing is looked up before deciding on it. */
  refused?: { submitted: 'expired' | 'rejected'; reason: string };
  /** Why it is signed again (with a resign effect). */
  why?: string;
  pace: SolanaPace;
}

/** How often a sent transaction is looked at, and how long a row whose effect failed waits. */
export interface SolanaPace {
  pollMs: number;
}
const RETRY_MS = 5_000;

export const FINAL: readonly Transaction['status'][] = ['confirmed', 'failed', 'expired', 'canceled'];
export const stateOf = (tx: Transaction) => tx.chainState as unknown as SolanaState | null;

/**
 * Every signing of the transaction: those chain_state lists, plus any signature the record lists
 * (hashes) that chain_state does not (rows written before signings were kept).
 */
export function signingsOf(tx: Transaction, state: SolanaState): SolanaSigning[] {
  const list = state.signings ? [...state.signings] : [];
  const known = new Set(list.map((s) => s.signature));
  const current: SolanaSigning = { signature: state.signature, blockhash: state.blockhash, lastValidBlockHeight: state.lastValidBlockHeight };
  for (const sig of tx.hashes) {
    if (known.has(sig)) continue;
    known.add(sig);
    // Its blockhash is unknown: it expired no later than the current one (it was replaced by it).
    list.push(sig === current.signature ? current : { ...current, signature: sig });
  }
  if (!known.has(current.signature)) list.push(current);
  return list;
}

const asJson = (state: SolanaState) => state as unknown as TransactionPatch['chainState'];
const long = (n: bigint): number | string => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString());

function stateAfterSigning(s: MadeSigning, kind: 'send' | 'resign', earlier: SolanaSigning[]): SolanaState {
  const signing = { signature: s.signature, blockhash: s.blockhash, lastValidBlockHeight: s.lastValidBlockHeight };
  return {
    wire: s.wire,
    ...signing,
    accepted: false,
    kind,
    signings: [...earlier, signing],
    public: { signature: s.signature, recent_blockhash: s.blockhash, fee: s.fee === undefined ? null : long(s.fee), transaction: s.wire },
  };
}

const base = (tx: Transaction, state: SolanaState | null, pace: SolanaPace): SolanaDecision => ({ tx, patch: {}, effects: [], nextInMs: null, state, pace });
const end = (d: SolanaDecision, patch: TransactionPatch): SolanaDecision => ({ ...d, patch, effects: [], nextInMs: null });
const later = (d: SolanaDecision, ms: number, patch: TransactionPatch = {}): SolanaDecision => ({ ...d, patch, effects: [], nextInMs: ms });

/** What the step does first for a row, given the chain's verdict on an accepted one (`seen`). */
export function decideSolana(tx: Transaction, seen: SolanaVerdict | { error: string } | undefined, pace: SolanaPace, now: Date): SolanaDecision {
  const state = stateOf(tx);
  const d = base(tx, state, pace);
  if (FINAL.includes(tx.status)) return d;
  if (!state?.wire) {
    if (now.getTime() >= tx.validUntil!.getTime()) return end(d, { status: 'expired', statusReason: 'valid_until passed before the transaction was sent' });
    return { ...d, effects: [{ stage: 'sign', point: 'send', request: tx.request, resubmit: false }] };
  }
  if (!state.accepted) return { ...d, effects: [{ stage: 'send', point: state.kind ?? 'send', wire: state.wire }] };
  if (!seen || 'error' in seen) return later(d, RETRY_MS);
  switch (seen.kind) {
    case 'landed':
      if (seen.status === 'mined' && tx.status === 'mined' && seen.signature === tx.hash) return later(d, pace.pollMs);
      return landed(d, state, seen, pace, now);
    case 'gone':
      return resign(d, `its blockhash expired before it was included (${seen.reason})`, now);
    case 'open':
      // Nodes drop what they cannot forward in time: keep sending the same bytes while it can land.
      return { ...d, effects: [{ stage: 'send', wire: state.wire, again: true }] };
  }
}

/** The decision once the effects of `d` gave `outcomes`. */
export function recordSolana(d: SolanaDecision, outcomes: SolanaOutcome[], now: Date): SolanaDecision {
  const { pace } = d;
  const [effect] = d.effects;
  const [o] = outcomes;
  // A custody's failure is told on the transaction; it keeps its place and is tried again.
  if ('error' in o) return later(d, effect.stage === 'send' && effect.again ? pace.pollMs : RETRY_MS, o.reason ? { statusReason: o.reason } : {});
  const state = d.state!;
  if ('signed' in o && effect.stage === 'sign') {
    const resign = effect.point === 'resign';
    if (!o.signed) {
      if (o.blockhashExpired)
        return end(d, {
          status: 'expired',
          statusReason: resign
            ? `${d.why}; other signers signed it, so it cannot be signed again with a fresh one`
            : 'its blockhash expired before it was sent; other signers signed it, so it cannot be given a fresh one',
        });
      return end(d, { status: 'failed', statusReason: `could not be signed${resign ? ' again' : ''}: ${o.refused}` });
    }
    const earlier = resign ? signingsOf(d.tx, state) : [];
    const next = stateAfterSigning(o.signing, effect.point, earlier);
    const patch: TransactionPatch = { hash: o.signing.signature, hashes: [...d.tx.hashes, o.signing.signature], chainState: asJson(next) };
    return { ...later(d, 0, resign ? patch : { status: 'sent', statusReason: null, ...patch }), refused: undefined, why: undefined };
  }
  if ('submitted' in o) {
    if (effect.stage === 'send' && effect.again) return later(d, pace.pollMs);
    if (o.submitted === 'submitted') return later(d, pace.pollMs, { status: 'submitted', chainState: asJson({ ...state, accepted: true }) });
    // An earlier signing, or an earlier broadcast of this one whose answer was lost, may be on
    // chain: look before deciding anything.
    return { ...d, refused: o, effects: [{ stage: 'read', signings: signingsOf(d.tx, state) }] };
  }
  if ('verdict' in o && d.refused) {
    const v = o.verdict;
    if (v.kind === 'landed') return landed(d, state, v, pace, now);
    if (d.refused.submitted === 'rejected') return end(d, { status: 'failed', statusReason: `rejected by the network: ${d.refused.reason}` });
    if (v.kind === 'gone') return resign(d, 'its blockhash expired before a node accepted it', now);
    // The node does not know the blockhash, but it may still land elsewhere: wait and send again.
    return later(d, pace.pollMs);
  }
  throw new Error('an outcome that does not answer the effect');
}

/** Records the signing found on chain as the transaction's, with the status it has there. */
function landed(d: SolanaDecision, state: SolanaState, v: Extract<SolanaVerdict, { kind: 'landed' }>, pace: SolanaPace, now: Date): SolanaDecision {
  const chainState = asJson({ ...state, accepted: true, public: { ...state.public, signature: v.signature, slot: v.slot } });
  const at = { hash: v.signature, chainState };
  switch (v.status) {
    case 'mined':
      return later(d, pace.pollMs, { ...at, status: 'mined', statusReason: null });
    case 'confirmed':
      return end(d, { ...at, status: 'confirmed', statusReason: null, confirmedAt: now });
    case 'failed':
      return end(d, { ...at, status: 'failed', statusReason: `included in slot ${v.slot} but failed: ${v.reason}` });
  }
}

/**
 * Signs it again with a fresh blockhash. Only on a 'gone' verdict: no signing is on chain and
 * none can land any more. Ends expired past valid_until.
 */
function resign(d: SolanaDecision, why: string, now: Date): SolanaDecision {
  if (now.getTime() >= d.tx.validUntil!.getTime()) return end(d, { status: 'expired', statusReason: `${why}, and valid_until has passed` });
  return { ...d, patch: {}, nextInMs: 0, why, effects: [{ stage: 'sign', point: 'resign', request: d.tx.request, resubmit: true }] };
}
