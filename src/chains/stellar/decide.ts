// The Stellar pipeline's decisions, as pure functions of what the chain answered.
import type { Transaction } from '../../generated/prisma/client.js';
import type { TransactionPatch } from '../../core/transactions/rows.js';

/** A transaction the chain recorded from the relayer's account at one sequence number. */
export interface RecordedAtSequence {
  /** Hash of the recorded envelope (the fee bump's, when it was wrapped in one). */
  hash: string;
  /** Hash of the inner transaction when the envelope is a fee bump, else the same as `hash`. */
  innerHash: string;
}

/**
 * Who consumed sequence number `n` of the relayer's account, judged on evidence only:
 * - unused: the account's sequence on chain is below `n`, so nothing is recorded at `n` yet.
 * - ours: the chain recorded one of this transaction's signings at `n` (it landed).
 * - other: the chain recorded a transaction at `n` that is none of this transaction's signings:
 *   it can never land (its number is gone), so it may take another number.
 * - unproven: `n` is used on chain, but what used it was not found; nothing may be concluded.
 */
export type SequenceAttribution = { kind: 'unused' } | { kind: 'ours'; hash: string } | { kind: 'other'; hash: string } | { kind: 'unproven'; reason: string };

export function attributeSequence(input: {
  n: bigint;
  chainSequence: bigint;
  /** What a search of the chain found at `n` from the relayer's account; null when it found nothing. */
  recorded: RecordedAtSequence | null;
  /** Every signing of this transaction (hex hashes), at whatever sequence each was made. */
  signings: string[];
}): SequenceAttribution {
  const { n, chainSequence, recorded } = input;
  if (chainSequence < n) return { kind: 'unused' };
  if (!recorded)
    return {
      kind: 'unproven',
      reason: `sequence number ${n} is used on chain (the account is at ${chainSequence}), but the transaction that used it was not found`,
    };
  const ours = new Set(input.signings.map((h) => h.toLowerCase()));
  for (const h of [recorded.hash, recorded.innerHash]) if (ours.has(h.toLowerCase())) return { kind: 'ours', hash: h.toLowerCase() };
  return { kind: 'other', hash: recorded.hash.toLowerCase() };
}

/**
 * Where a transaction whose number `n` the network refused (tx_bad_seq) goes next, once its
 * number's attribution is known:
 * - landed: one of its signings used `n`: track it.
 * - up: another transaction used `n`: take a new number above the counter and the chain.
 * - retry: `n` is the next valid number (the refusal was a race) or transactions below may still
 *   land: send again later.
 * - down: `n` is above the next valid number and nothing below can land: take the next valid one.
 * - hold: no proof of who used `n`: keep it, and report it for a person to decide.
 */
export type SequenceMove =
  | { kind: 'landed'; hash: string }
  | { kind: 'up'; target: bigint; usedBy: string }
  | { kind: 'down'; target: bigint }
  | { kind: 'retry' }
  | { kind: 'hold'; reason: string };

export function nextSequenceMove(input: {
  n: bigint;
  chainSequence: bigint;
  attribution: SequenceAttribution;
  /** The relayer's counter: the next number it hands out (null when unset). */
  counter: bigint | null;
  /** Whether a transaction holding a number between chainSequence and n may still land. */
  openBelow: boolean;
}): SequenceMove {
  const { n, chainSequence, attribution: a, counter } = input;
  switch (a.kind) {
    case 'ours':
      return { kind: 'landed', hash: a.hash };
    case 'unproven':
      return { kind: 'hold', reason: a.reason };
    case 'other': {
      const next = chainSequence + 1n;
      return { kind: 'up', target: counter !== null && counter > next ? counter : next, usedBy: a.hash };
    }
    case 'unused':
      if (n === chainSequence + 1n || input.openBelow) return { kind: 'retry' };
      return { kind: 'down', target: chainSequence + 1n };
  }
}

// ---------------------------------------------------------------------------------------------
// The step: what each row needs next, and what each effect's outcome means. family.ts performs.

/** What the pipeline keeps about the transaction's current envelope (transactions.chain_state). */
export interface StellarState {
  /** The signed envelope, written before it is sent so that a restart sends the same bytes. */
  envelope: string;
  hash: string;
  sequence: string;
  /** Upper time bound of the envelope (RFC 3339); null when it has none. */
  maxTime: string | null;
  /** A node accepted this envelope (PENDING or DUPLICATE). */
  accepted: boolean;
  /** Look-ups since it was accepted; it is sent again every RESEND_EVERY while the node has no result. */
  polls: number;
  /** Included in a ledger: its sequence number is used. */
  landed?: boolean;
  /** Which signing path made the current envelope (names its crash points). */
  kind?: 'send' | 'resubmit';
  /**
   * Every signing ever made of this transaction, oldest first, each written before it was sent:
   * any of them may be the one on chain, so all are looked up.
   */
  signings?: { hash: string; sequence: string }[];
  /**
   * Why it is held: its sequence number was used on chain by a transaction not found. Nothing is
   * broadcast while it is held; it is only looked at again, for proof either way.
   */
  held?: string;
  /** Published as the record's network fields (REST, webhooks, GraphQL networkData). */
  public: Record<string, unknown>;
}

/** A signing of this transaction found in a ledger, with its result. */
export type Landed = { hash: string; status: 'confirmed'; ledger: number } | { hash: string; status: 'failed'; ledger: number; code: string; reason: string };

/** What the chain answered about the transaction's signings. */
export interface LookedUp {
  landed: Landed | null;
  latestLedgerCloseTime: number;
}

/** The submit answer, as stellar/status.ts gives it. */
export type Submitted = { outcome: 'submitted' } | { outcome: 'retry' } | { outcome: 'rejected'; code: string; reason: string };

/**
 * What reconciling a refused sequence number read: the account (null when it does not exist) and,
 * when the number is used, the look-up of every signing and the search of the chain at it.
 */
export interface Reconciliation {
  n: bigint;
  chainSequence: bigint | null;
  landed: Landed | null;
  /** What the search found at n from the account (with its result), null when nothing. */
  recorded: (RecordedAtSequence & { landed: Landed }) | null;
  /** Every signing of this transaction, with the inner transaction's hash for a fee bump of someone else's. */
  signings: string[];
  /** Own sequence numbers: the relayer's counter, and whether a row below n may still land. */
  counter: bigint | null;
  openBelow: boolean;
  /** A fee bump's inner transaction: its source. */
  foreign?: string;
}

export type StellarEffect =
  /** Build and sign the request at `sequence` (taking it, for a `move`). */
  | { stage: 'sign'; point: 'send' | 'resubmit'; sequence?: bigint; move?: { target: bigint; direction: 'up' | 'down' } }
  /** Take sequence number `target` for this row: raise the counter (up) or free it from final rows (down). */
  | { stage: 'read'; take: { target: bigint; direction: 'up' | 'down' } }
  | { stage: 'read'; look: string[] }
  | { stage: 'read'; reconcile: 'own' | 'foreign' }
  /** Send the envelope (`again`: a tracked one, once more). */
  | { stage: 'send'; point?: 'send' | 'resubmit'; envelope: string; again?: boolean }
  /** After a move down was written: the counter comes down with the row that held the highest number. */
  | { stage: 'send'; lower: bigint };

export type StellarOutcome =
  | { signed: true; state: StellarState }
  | { signed: false; refused: string; expired: boolean }
  | { taken: boolean }
  | { looked: LookedUp }
  | { reconciled: Reconciliation }
  | { submitted: Submitted }
  | { lowered: true }
  | { error: string; reason?: string };

export interface StellarPace {
  /** How often a sent transaction is looked up: about one ledger. */
  pollMs: number;
}

export interface StellarDecision {
  tx: Transaction;
  patch: TransactionPatch;
  effects: StellarEffect[];
  nextInMs: number | null;
  state: StellarState | null;
  pace: StellarPace;
  /** The node's refusal, kept while what it means is looked up. */
  refused?: Extract<Submitted, { outcome: 'rejected' }>;
  /** A signing made for a move, kept while its number is taken. */
  moved?: StellarState;
  /** Something an operator should know, logged once the step is saved. */
  note?: { level: 'info' | 'warn'; msg: string; fields: Record<string, unknown> };
}

export const FINAL: readonly Transaction['status'][] = ['confirmed', 'failed', 'expired', 'canceled'];
export const RESEND_EVERY = 5;
/** How long a transaction whose sequence number was used by an unknown transaction waits before it is looked at again. */
export const HOLD_MS = 60_000;
const RETRY_MS = 5_000;

export const stateOf = (tx: Transaction) => tx.chainState as unknown as StellarState | null;
const asJson = (state: StellarState) => state as unknown as TransactionPatch['chainState'];

/** Every hash signed for this transaction, oldest first (chain_state's list and the record's). */
export function signingsOf(tx: Transaction, state: StellarState): string[] {
  const all = [...(state.signings ?? []).map((s) => s.hash), ...tx.hashes, state.hash];
  return [...new Set(all.map((h) => h.toLowerCase()))];
}

/** The hashes a check looks up: the current envelope first (the one most likely to land), then every earlier signing. */
export function checkOrder(tx: Transaction, state: StellarState): string[] {
  const current = state.hash.toLowerCase();
  return [current, ...signingsOf(tx, state).filter((h) => h !== current)];
}

// Result codes in plain words; the code itself follows in brackets.
const CODE_WORDS: Record<string, string> = {
  tx_bad_auth: 'a signature is missing or invalid',
  tx_bad_auth_extra: 'it carries signatures that are not needed',
  tx_insufficient_fee: 'its fee is below what the network requires',
  tx_insufficient_balance: 'the fee payer cannot pay the fee and keep its reserve',
  tx_no_account: 'its source account does not exist',
  tx_too_early: 'its time bounds have not started yet',
  tx_too_late: 'its time bounds have passed',
  tx_bad_seq: 'its sequence number is not the next one of its source account',
  tx_failed: 'an operation failed',
  tx_missing_operation: 'it has no operations',
  tx_malformed: 'it is malformed',
  tx_not_supported: 'the network does not support it',
  tx_soroban_invalid: 'its contract resources are invalid',
};

/** "a signature is missing or invalid (tx_fee_bump_inner_failed (inner tx_bad_auth))" */
export function explain(reason: string): string {
  const code = /inner (tx_\w+)/.exec(reason)?.[1] ?? /^(tx_\w+)/.exec(reason)?.[1] ?? '';
  const words = CODE_WORDS[code];
  return words ? `${words} (${reason})` : reason;
}

const end = (d: StellarDecision, patch: TransactionPatch): StellarDecision => ({ ...d, patch, effects: [], nextInMs: null });
const later = (d: StellarDecision, ms: number, patch: TransactionPatch = {}): StellarDecision => ({ ...d, patch, effects: [], nextInMs: ms });
const next = (d: StellarDecision, effect: StellarEffect): StellarDecision => ({ ...d, patch: {}, effects: [effect], nextInMs: null });

/** What a row needs first: signing, sending, a check of what the chain has (`seen`), or reconciling a held number. */
export function decideStellar(
  tx: Transaction,
  seen: { looked: LookedUp; chainSequence: bigint | null } | { reconciled: Reconciliation } | { error: string } | undefined,
  pace: StellarPace,
  now: Date,
): StellarDecision {
  const state = stateOf(tx);
  const d: StellarDecision = { tx, patch: {}, effects: [], nextInMs: null, state, pace };
  if (FINAL.includes(tx.status)) return d;
  if (!state?.envelope) {
    if (now.getTime() >= tx.validUntil!.getTime()) return end(d, { status: 'expired', statusReason: 'valid_until passed before the transaction was sent' });
    return next(d, { stage: 'sign', point: 'send', sequence: tx.nonce ?? undefined });
  }
  if (!state.held && !state.accepted) return next(d, { stage: 'send', point: state.kind ?? 'send', envelope: state.envelope });
  if (!seen || 'error' in seen) return later(d, RETRY_MS);
  if ('reconciled' in seen) return reconciled(d, state, seen.reconciled, now);
  // A check of an accepted envelope.
  const { landed, latestLedgerCloseTime } = seen.looked;
  if (landed) return recordLanded(d, state, landed, now);
  const deadline = state.maxTime ?? tx.validUntil!.toISOString();
  if (latestLedgerCloseTime > Math.floor(Date.parse(deadline) / 1000)) {
    // Not found is no proof by itself (the RPC keeps a limited history): when its number is used
    // on chain, find out by what first.
    if (tx.nonce !== null && seen.chainSequence !== null && seen.chainSequence >= tx.nonce) return next(d, { stage: 'read', reconcile: 'own' });
    // Past the current envelope's time bound no ledger can include it, and every earlier signing
    // was at a number proven used by another transaction.
    return end(d, {
      status: 'expired',
      statusReason: state.maxTime
        ? `not included before its time bound ${state.maxTime}`
        : `not included by valid_until ${deadline}; it has no time bound, so it could still be included later`,
    });
  }
  const polls = state.polls + 1;
  const tracked = { ...d, state: { ...state, polls } };
  // Nodes may drop queued transactions: send the same envelope again now and then. A node that
  // accepted it once may still hold it, so only a verdict on the sequence number or the time
  // bound changes anything; otherwise it is tracked until its time bound passes.
  if (polls % RESEND_EVERY === 0) return next(tracked, { stage: 'send', envelope: state.envelope, again: true });
  return later(tracked, pace.pollMs, { chainState: asJson(tracked.state) });
}

/** The decision once the effects of `d` gave `outcomes`. */
export function recordStellar(d: StellarDecision, outcomes: StellarOutcome[], now: Date): StellarDecision {
  const [effect] = d.effects;
  const [o] = outcomes;
  const state = d.state!;
  // A custody's failure is told on the transaction; it keeps its place and is tried again.
  if ('error' in o) return later(d, RETRY_MS, o.reason ? { statusReason: o.reason } : {});
  if ('signed' in o && effect.stage === 'sign') {
    if (effect.move) {
      if (!o.signed) return end(d, { status: 'failed', statusReason: `could not be rebuilt with sequence number ${effect.move.target}: ${o.refused}` });
      return { ...next(d, { stage: 'read', take: effect.move }), moved: { ...o.state, signings: [...(state.signings ?? []), ...(o.state.signings ?? [])] } };
    }
    if (!o.signed) return end(d, { status: o.expired ? 'expired' : 'failed', statusReason: `could not be built: ${o.refused}` });
    return later({ ...d, state: o.state }, 0, {
      status: 'sent',
      statusReason: null,
      hash: o.state.hash,
      hashes: [...d.tx.hashes, o.state.hash],
      chainState: asJson(o.state),
    });
  }
  if ('taken' in o && 'take' in effect) {
    // Another transaction took the number first: look again later.
    if (!o.taken) return retry(d, state);
    const { target, direction } = effect.take;
    const moved = d.moved!;
    const patch: TransactionPatch = { nonce: target, hash: moved.hash, hashes: [...d.tx.hashes, moved.hash], statusReason: null, chainState: asJson(moved) };
    const n = d.tx.nonce!;
    const note = { level: 'info' as const, msg: 'stellar sequence number reassigned', fields: { from: n.toString(), to: target.toString() } };
    // When this one held the highest number, the counter comes down with it (once the row is written).
    if (direction === 'down') return { ...d, patch, effects: [{ stage: 'send', lower: n }], nextInMs: 0, state: moved, moved: undefined, note };
    return { ...later(d, 0, patch), state: moved, moved: undefined, note };
  }
  if ('lowered' in o) return later(d, 0);
  if ('submitted' in o) return afterSend(d, state, o.submitted);
  if ('looked' in o && d.refused) {
    // A refusal says nothing about an earlier broadcast whose answer was lost, nor about an
    // earlier signing: every one of them was looked for on chain first.
    if (o.looked.landed) return recordLanded(d, state, o.looked.landed, now);
    if (d.refused.code === 'tx_too_late')
      return end(d, { status: 'expired', statusReason: `not included before its time bound: ${explain(d.refused.reason)}` });
    return end(d, { status: 'failed', statusReason: `rejected by the network: ${explain(d.refused.reason)}` });
  }
  if ('reconciled' in o) return reconciled(d, state, o.reconciled, now);
  throw new Error('an outcome that does not answer the effect');
}

/**
 * Broadcasts answer: an answer that never came (the call failed: timeout, reset, 5xx) leaves it
 * unaccepted, so it is sent again later: it may have been sent, and the same envelope can be
 * applied at most once. Past its time bound the network answers tx_too_late (expired): the
 * ledger's clock decides, not ours.
 */
function afterSend(d: StellarDecision, state: StellarState, s: Submitted): StellarDecision {
  const again = d.effects[0]?.stage === 'send' && 'again' in d.effects[0] && d.effects[0].again;
  if (again) {
    // A tracked envelope sent once more: only a verdict on its number or time bound changes anything.
    if (s.outcome !== 'rejected' || (s.code !== 'tx_bad_seq' && s.code !== 'tx_too_late')) return later(d, d.pace.pollMs, { chainState: asJson(state) });
  }
  switch (s.outcome) {
    case 'submitted':
      return later(d, d.pace.pollMs, { status: 'submitted', chainState: asJson({ ...state, accepted: true, polls: state.accepted ? state.polls : 0 }) });
    case 'retry':
      return later(d, d.pace.pollMs);
    case 'rejected':
      if (s.code === 'tx_bad_seq' && d.tx.nonce !== null) return next(d, { stage: 'read', reconcile: 'own' });
      if (d.tx.nonce === null && (s.code === 'tx_bad_seq' || /inner tx_bad_seq/.test(s.reason)))
        return { ...next(d, { stage: 'read', reconcile: 'foreign' }), refused: s };
      return { ...next(d, { stage: 'read', look: signingsOf(d.tx, state) }), refused: s };
  }
}

/** Records the signing the chain applied as the transaction's, with its result. */
function recordLanded(d: StellarDecision, state: StellarState, landed: Landed, now: Date): StellarDecision {
  const at = { ...state, hash: landed.hash, held: undefined, accepted: true, landed: true };
  if (landed.status === 'confirmed') {
    return end(d, {
      status: 'confirmed',
      statusReason: null,
      confirmedAt: now,
      hash: landed.hash,
      chainState: asJson({ ...at, public: { ...state.public, ledger: landed.ledger } }),
    });
  }
  return end(d, {
    status: 'failed',
    statusReason: `included in ledger ${landed.ledger} but failed: ${explain(landed.reason)}`,
    hash: landed.hash,
    chainState: asJson({ ...at, public: { ...state.public, ledger: landed.ledger, result_code: landed.code } }),
  });
}

const retry = (d: StellarDecision, state: StellarState) =>
  later(d, d.pace.pollMs, { statusReason: state.held ? null : undefined, chainState: asJson({ ...state, accepted: false, held: undefined }) });

/** Keeps the transaction as it is and reports it: what used its sequence number is not known. */
function hold(d: StellarDecision, state: StellarState, why: string, r: Reconciliation): StellarDecision {
  const reason = `${why}: left for a person to decide`;
  return {
    ...later(d, HOLD_MS, { statusReason: reason, chainState: asJson({ ...state, accepted: false, held: reason }) }),
    note: {
      level: 'warn',
      msg: `stellar sequence number used by an unknown transaction: ${reason}`,
      fields: { sequence: r.n.toString(), chainSequence: String(r.chainSequence) },
    },
  };
}

/**
 * The network refused the envelope with tx_bad_seq (or a held one is looked at again). With the
 * account's sequence S on chain (the next valid one is S+1) and this transaction holding n, what
 * used n is established on evidence (attributeSequence), then nextSequenceMove decides:
 * - n <= S: n is used. When one of this transaction's signings used it, it landed. When the
 *   transaction found at n from the relayer's account is none of them, it takes a new number
 *   above both the counter and the chain. When nothing is found at n, nothing is re-sent: it keeps
 *   its number and is reported for a person to decide.
 * - n > S+1: a transaction below is missing. While one that may still land holds a number in
 *   between, wait for it; when none does (those rows ended without using theirs), move down to
 *   S+1, so the gap closes instead of every later transaction failing.
 * A fee bump of someone else's transaction (`foreign`): the inner transaction itself landed (in
 * this or any other envelope), or another transaction used its number and it never can, or
 * nothing found proves nothing, so it is held and reported.
 */
function reconciled(d: StellarDecision, state: StellarState, r: Reconciliation, now: Date): StellarDecision {
  if (r.landed) return recordLanded(d, state, r.landed, now);
  if (r.foreign !== undefined) {
    const a = attributeSequence({ n: r.n, chainSequence: r.chainSequence ?? 0n, recorded: r.recorded, signings: r.signings });
    if (a.kind === 'ours') return recordLanded(d, state, r.recorded!.landed, now);
    if (a.kind === 'unproven') return hold(d, state, `${a.reason} (the inner transaction's source ${r.foreign})`, r);
    return end(d, { status: 'failed', statusReason: `rejected by the network: ${explain(d.refused?.reason ?? 'tx_bad_seq')}` });
  }
  if (r.chainSequence === null) return end(d, { status: 'failed', statusReason: `the relayer account ${d.tx.from} does not exist on the network` });
  const attribution: SequenceAttribution =
    r.n <= r.chainSequence ? attributeSequence({ n: r.n, chainSequence: r.chainSequence, recorded: r.recorded, signings: r.signings }) : { kind: 'unused' };
  const move = nextSequenceMove({ n: r.n, chainSequence: r.chainSequence, attribution, counter: r.counter, openBelow: r.openBelow });
  switch (move.kind) {
    case 'landed':
      // Found by the search (getTransaction no longer knows it): its record there is the result.
      return recordLanded(d, state, r.recorded!.landed, now);
    case 'hold':
      return hold(d, state, `${move.reason}; it is not sent again with another number without proof that it did not land`, r);
    case 'retry':
      return retry(d, state);
    case 'up':
    case 'down': {
      const note =
        move.kind === 'up'
          ? { level: 'info' as const, msg: 'stellar sequence number used by another transaction', fields: { sequence: r.n.toString(), usedBy: move.usedBy } }
          : undefined;
      if (now.getTime() >= d.tx.validUntil!.getTime()) {
        const why =
          move.kind === 'up' ? `sequence number ${r.n} was used by another transaction` : `sequence number ${r.n} cannot be used before a gap below it closes`;
        return { ...end(d, { status: 'expired', statusReason: `${why}, and valid_until has passed` }), note };
      }
      // Signed again at the target, which is then taken (the counter, or the number given up by
      // final rows below) and the row saved under its lease; a crash between leaves a number no
      // row holds, a gap that closes like any other.
      return { ...next(d, { stage: 'sign', point: 'resubmit', sequence: move.target, move: { target: move.target, direction: move.kind } }), note };
    }
  }
}
