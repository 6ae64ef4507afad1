// The EVM pipeline's decisions: what a step does with what it saw (a receipt, a broadcast's answer,
// the chain's nonce, the clock). No I/O here: each function reads the work record and what was
// observed, and changes only that record; pipeline.ts performs the effects and writes the result.
import type { Hex } from 'viem';
import { canonicalJson } from '../../lib/json.js';
import type { Transaction, TransactionStatus } from '../../generated/prisma/client.js';
import { type Held, heldDueMs } from '../../core/transactions/held.js';
import type { TransactionPatch } from '../../core/transactions/rows.js';
import type { BroadcastVerdict } from './node-errors.js';
import { maxPricePerGas, type FeesJson } from './pricing.js';
import type { FeeParams } from './fees.js';
import { readState, type Broadcast, type EvmState, type NoopOutcome } from './state.js';

const FINAL: readonly TransactionStatus[] = ['confirmed', 'failed', 'expired', 'canceled'];
export const isFinal = (s: TransactionStatus) => FINAL.includes(s);

/** One transaction being worked on in a step. */
export interface Work {
  /** The row as last written (its lease fields guard the next write). */
  tx: Transaction;
  st: EvmState;
  status: TransactionStatus;
  via: TransactionStatus[];
  patch: TransactionPatch;
  /** Set when this step decided the reason users see (else it is derived from the state). */
  reason?: string | null;
  dueInMs: number | null;
  /** The lease was lost (another worker has the row): leave it alone. */
  lost?: boolean;
  /** Waiting behind a lower nonce of the account that is not mined yet. */
  behind?: boolean;
}

/** The network's pace, as decisions need it. */
export interface Pace {
  blocktimeMs: number;
  requiredConfirmations: number;
}

/** How often an in-flight transaction is looked at: a quarter block, within [100 ms, 3 s]. */
export const pollMs = (p: Pick<Pace, 'blocktimeMs'>) => Math.min(3_000, Math.max(100, Math.round(p.blocktimeMs / 4)));
/** How long a broadcast may stay unmined before it is resubmitted with higher fees. */
export const resubmitMs = (p: Pick<Pace, 'blocktimeMs'>) => Math.max(2_000, 3 * p.blocktimeMs);
/**
 * The send window: a transaction is first signed only once its nonce is fewer than this many
 * blocks' worth of transfers ahead of the chain's mined nonce. Signed further ahead, it would wait
 * in the node's pool behind full blocks, each raising the base fee by an eighth, and a bid of twice
 * the base fee is priced out after about six: every such transaction is then signed again, and
 * the account mines nothing until the first of them is.
 */
export const WINDOW_BLOCKS = 3;
/** The window's floor, in transactions (a chain with small blocks). */
export const MIN_WINDOW = 16;
/** The window for a chain whose blocks hold `blockGas` gas. */
export const sendWindow = (blockGas: bigint, transferGas: bigint) => Math.max(MIN_WINDOW, WINDOW_BLOCKS * Number(blockGas / transferGas));
/** The transfers a full block lets into a send window of `window`. */
const perBlock = (window: number) => Math.max(1, Math.floor(window / WINDOW_BLOCKS));
/**
 * How long a step waits for its broadcasts up to nonce `upTo` to be mined, the chain's mined nonce
 * being `latest`: the full blocks the send window's transfers take to get there (one at least, the
 * window's blocks at most), and half a block more.
 */
export function minedWithinMs(pace: Pick<Pace, 'blocktimeMs'>, latest: bigint, upTo: bigint, window: number | undefined): number {
  const ahead = Number(upTo - latest) + 1;
  const blocks = window === undefined ? 1 : Math.min(WINDOW_BLOCKS, Math.max(1, Math.ceil(ahead / perBlock(window))));
  return Math.round((blocks + 0.5) * pace.blocktimeMs);
}
/** A transaction never signed whose nonce is `window` or more ahead of the mined nonce `latest`. */
export const beyondWindow = (tx: Pick<Transaction, 'nonce'>, st: EvmState, latest: bigint, window: number) =>
  tx.nonce !== null && st.broadcasts.length === 0 && tx.nonce >= latest + BigInt(window);

/** How often a nonce whose use could not be attributed is looked at again. */
export const ATTRIBUTION_RETRY_MS = 30_000;

export type Receipt = {
  transactionHash: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  status: Hex;
  gasUsed: Hex;
  effectiveGasPrice?: Hex;
};

export const newWork = (tx: Transaction, st: EvmState): Work => ({ tx, st, status: tx.status, via: [], patch: {}, dueInMs: 0 });
export const nonceOf = (w: Work) => w.tx.nonce!;

export function setStatus(w: Work, status: TransactionStatus) {
  if (w.status === status) return;
  if (w.status !== w.tx.status) w.via.push(w.status);
  w.status = status;
}

/** Ends the transaction's story for users (its nonce may still need consuming). */
export function finish(w: Work, status: TransactionStatus, reason: string | null) {
  setStatus(w, status);
  w.reason = reason;
}

export function wait(w: Work, why: string, ms: number) {
  w.st.waiting = why;
  w.dueInMs = ms;
}

/** It could not be signed (the signer's custody away, slow or refusing): try again soon, then every 10 s. */
export function unsigned(w: Work, why: string) {
  w.patch.attempts = (w.patch.attempts ?? w.tx.attempts) + 1;
  wait(w, why, Math.min(10_000, 500 * 2 ** Math.min(5, w.patch.attempts)));
}

/** The network could not be reached: try again with a backoff that grows with the attempts. */
export function unreachable(w: Work, e: Error) {
  w.patch.attempts = (w.patch.attempts ?? w.tx.attempts) + 1;
  wait(w, `the network cannot be reached; retrying (${e.message.slice(0, 200)})`, Math.min(30_000, 1_000 * 2 ** Math.min(5, w.patch.attempts)));
}

/** The reason users see: one this step decided, the final one kept, else why it waits or a note. */
export const reasonOf = (w: Work) => (w.reason !== undefined ? w.reason : isFinal(w.status) ? w.tx.statusReason : (w.st.waiting ?? w.st.note ?? null));

/** A look that changed nothing (not mined yet): the row only needs giving back, due again. */
export const unchanged = (w: Work) =>
  w.status === w.tx.status &&
  w.reason === undefined &&
  Object.keys(w.patch).length === 0 &&
  reasonOf(w) === w.tx.statusReason &&
  canonicalJson(w.st) === storedCanonical(w.tx);

// A row read from the database never changes, and the worker decides on the same row object at
// every poll until it is written again: its state's canonical form is kept on the row itself.
const CANONICAL = Symbol('stored state, canonical');
function storedCanonical(tx: Transaction & { [CANONICAL]?: string }): string {
  // A new row's state is null: the same as the state it reads as.
  tx[CANONICAL] ??= canonicalJson(tx.chainState === null ? readState(tx) : tx.chainState);
  return tx[CANONICAL];
}

/** Every hash this transaction was ever signed as, at any nonce: any of them may be the one mined. */
export const signedHashes = (w: Work): Hex[] => w.st.broadcasts.map((b) => b.hash);
/** Signings at the row's current nonce, newest first. */
export const atNonce = (w: Work) => w.st.broadcasts.filter((b) => b.nonce === nonceOf(w).toString()).reverse();

/** Which signing path a broadcast belongs to (the crash points are named after it). */
export function actionOf(w: Work, b: Broadcast): 'send' | 'resubmit' | 'cancel' | 'replace' | 'expire' {
  if (b.kind === 'noop') return w.st.outcome?.status === 'expired' ? 'expire' : 'cancel';
  const earlier = w.st.broadcasts.slice(0, w.st.broadcasts.indexOf(b));
  if (earlier.some((x) => x.kind === 'payload' && x.nonce === b.nonce && x.version === b.version)) return 'resubmit';
  return (b.version ?? 0) > 0 ? 'replace' : 'send';
}

// ---------------------------------------------------------------------------------------------
// Receipts

/** A receipt of one of this transaction's signings was found: mined (and confirmed once deep enough). */
export function onReceipt(pace: Pace, w: Work, b: Broadcast, r: Receipt, head: bigint): 'mined' | 'reverted' | 'noop' {
  const success = BigInt(r.status) === 1n;
  const block = BigInt(r.blockNumber);
  if (b.nonce !== nonceOf(w).toString()) {
    // A signing at an earlier nonce of this transaction was mined after all (the chain reorganised
    // around the transaction that took that nonce): that is where it is.
    w.patch.nonce = BigInt(b.nonce);
    w.tx = { ...w.tx, nonce: BigInt(b.nonce) };
  }
  w.st.mined = { hash: r.transactionHash, blockNumber: block.toString(), blockHash: r.blockHash, success };
  w.st.phase = 'mined';
  w.st.unattributed = undefined;
  w.st.waiting = undefined;
  w.st.public = {
    block_number: Number(block),
    gas_used: BigInt(r.gasUsed).toString(),
    ...(r.effectiveGasPrice ? { effective_gas_price: BigInt(r.effectiveGasPrice).toString() } : {}),
  };
  w.patch.hash = r.transactionHash;
  if (b.kind === 'noop') {
    w.st.phase = 'done';
    w.dueInMs = null;
    if (!isFinal(w.status)) {
      const outcome: NoopOutcome = w.st.outcome ?? { status: 'canceled', reason: 'replaced by a 0-value self-transfer' };
      finish(w, outcome.status, `${outcome.reason} (replacement ${r.transactionHash} mined in block ${block})`);
    }
    return 'noop';
  }

  // A payload: possibly an earlier version than the current one (a replace that came too late).
  if (b.version !== undefined && b.version !== w.st.version) {
    const prev = w.st.previous?.[String(b.version)];
    if (prev) Object.assign(w.patch, { to: prev.to, value: prev.value, data: prev.data, gasLimit: prev.gasLimit === null ? null : BigInt(prev.gasLimit) });
    w.st.note = 'the replacement came too late: the earlier payload was mined';
  }
  w.patch.gasLimit = BigInt(b.gasLimit);
  if (!success) {
    w.st.phase = 'done';
    w.dueInMs = null;
    finish(w, 'failed', `reverted in block ${block}`);
    return 'reverted';
  }
  const late =
    w.st.goal === 'noop' && !isFinal(w.status)
      ? `mined before its ${w.st.outcome?.status === 'expired' ? 'expiry' : 'cancellation'} replacement could take its place`
      : (w.st.note ?? null);
  if (!isFinal(w.status)) {
    setStatus(w, 'mined');
    w.reason = late;
  }
  if (head - block + 1n >= BigInt(pace.requiredConfirmations)) {
    if (!isFinal(w.status)) {
      setStatus(w, 'confirmed');
      w.patch.confirmedAt = new Date();
    }
    w.st.phase = 'done';
    w.dueInMs = null;
  } else {
    w.dueInMs = pollMs(pace);
  }
  return 'mined';
}

/** Its receipt is gone (the block was reorganised away): it is back in the pool, or must be sent again at its nonce. */
export function reorganised(w: Work) {
  w.st.phase = w.st.raw ? 'signed' : 'new';
  w.st.mined = undefined;
  setStatus(w, 'submitted');
  w.st.note = 'the block that held this transaction was reorganised away; sending it again';
  w.dueInMs = 0;
}

// ---------------------------------------------------------------------------------------------
// Nonce attribution

/**
 * The chain passed this transaction's nonce and no receipt of any of its signings was found.
 * `minedHash` is the transaction the chain holds from the relayer's account at that nonce, as
 * found on chain; null when it could not be found (a pruned node, a node behind the others).
 * - 'ours': it is one of this transaction's signings: its receipt decides (look again soon);
 * - 'consumed': nothing is left to send (final already, or only a NOOP was wanted): done;
 * - 'move': proven to be someone else's: the payload goes out again at a new nonce;
 * - 'hold': no proof either way: nothing is sent again; the transaction keeps its nonce and says so.
 */
export function attribute(pace: Pace, w: Work, minedHash: Hex | null, now: Date): 'ours' | 'consumed' | 'move' | 'hold' {
  const n = nonceOf(w);
  if (minedHash && signedHashes(w).some((h) => h.toLowerCase() === minedHash.toLowerCase())) {
    w.dueInMs = pollMs(pace);
    return 'ours';
  }
  if (!minedHash) {
    w.st.unattributed = w.st.unattributed ?? now.toISOString();
    wait(
      w,
      `nonce ${n} was used on chain, but the transaction that used it could not be found to compare with this one's signings; ` +
        'it is not sent again until that is known (cancel it, or check the account on a full node)',
      ATTRIBUTION_RETRY_MS,
    );
    return 'hold';
  }
  w.st.unattributed = undefined;
  const used = `nonce ${n} was used by another transaction from this account`;
  if (isFinal(w.status) || w.st.goal === 'noop') {
    if (!isFinal(w.status)) finish(w, w.st.outcome?.status ?? 'canceled', `${w.st.outcome?.reason ?? 'canceled'}; ${used} (${minedHash})`);
    w.st.phase = 'done';
    w.dueInMs = null;
    return 'consumed';
  }
  return 'move';
}

/** After 'move': the transaction holds nonce `next` and its payload is signed afresh there. */
export function movedTo(w: Work, from: bigint, next: bigint, minedHash: Hex) {
  w.tx = { ...w.tx, nonce: next };
  w.patch.nonce = next;
  w.st.phase = 'new';
  w.st.raw = undefined;
  w.st.payloadOut = false;
  w.st.acceptedAt = undefined;
  w.st.waiting = undefined;
  w.st.note = `nonce ${from} was used by another transaction from this account; sent again at nonce ${next} (the chain holds ${minedHash} at nonce ${from})`;
  w.dueInMs = 0;
}

// ---------------------------------------------------------------------------------------------
// Expiry, resubmission, fees

/** Past valid_until: an unsigned payload expires now; a signed one is replaced by a NOOP at its nonce. */
export function expireIfDue(w: Work, now: number) {
  if (w.st.goal !== 'payload' || isFinal(w.status) || !w.tx.validUntil || w.tx.validUntil.getTime() > now) return;
  const when = w.tx.validUntil.toISOString();
  if (!w.st.broadcasts.some((b) => b.kind === 'payload')) {
    const reason = `not sent before valid_until (${when})`;
    finish(w, 'expired', reason);
    w.st.goal = 'noop';
    w.st.outcome = { status: 'expired', reason };
  } else {
    w.st.goal = 'noop';
    w.st.outcome = { status: 'expired', reason: `not mined before valid_until (${when}); replaced by a 0-value self-transfer` };
    w.st.note = `valid_until (${when}) passed: replacing it with a 0-value self-transfer`;
  }
  w.st.phase = 'new';
}

/** The payload can never be sent: the transaction fails now, and a NOOP takes its nonce. */
export function failBeforeSending(w: Work, reason: string) {
  if (!isFinal(w.status)) finish(w, 'failed', reason);
  w.st.goal = 'noop';
  w.st.outcome = { status: 'failed', reason };
  w.st.phase = 'new';
}

/**
 * Whether a broadcast transaction is due for a higher bid. The clock runs from the later of its
 * last accepted broadcast and the last time the account's nonce moved: while the chain keeps
 * mining the transactions before this one, it is in line, not stuck.
 */
export function dueForResubmit(pace: Pace, w: Work, now: number, lineSince: number, latest: bigint): boolean {
  const since = now - Math.max(Date.parse(w.st.acceptedAt ?? w.tx.updatedAt.toISOString()), lineSince);
  if (since < resubmitMs(pace)) {
    w.dueInMs = resubmitMs(pace) - since;
    return false;
  }
  w.behind = nonceOf(w) > latest;
  return true;
}

/** Whether fees `a` bid less than `b` on either the price cap or the tip. */
const below = (a: FeeParams, b: FeeParams) =>
  maxPricePerGas(a) < maxPricePerGas(b) || ('gasPrice' in a || 'gasPrice' in b ? false : a.maxPriorityFeePerGas < b.maxPriorityFeePerGas);
const sameFees = (a: FeeParams, b: FeeParams) =>
  maxPricePerGas(a) === maxPricePerGas(b) && ('gasPrice' in a ? true : a.maxPriorityFeePerGas === (b as typeof a).maxPriorityFeePerGas);

/**
 * The fees of the next signing at the row's nonce, or 'resend' when a new bid would not help (the
 * same bytes go out again, in case a node dropped them). `fresh`: today's price for the goal;
 * `replacement(prev, fresh)`: a bid that may replace `prev` in a node's pool.
 */
export function planFees(
  w: Work,
  prev: { kind: Broadcast['kind']; version?: number; fees: FeeParams } | undefined,
  fresh: FeeParams,
  replacement: (prev: FeeParams, fresh: FeeParams) => FeeParams,
): FeeParams | 'resend' {
  if (!prev) return fresh;
  const noop = w.st.goal === 'noop';
  const resubmission = w.st.phase === 'broadcast' || w.st.phase === 'signed';
  const same = prev.kind === (noop ? 'noop' : 'payload') && (prev.version ?? 0) === (noop ? 0 : w.st.version) && !!w.st.raw;
  if (same && resubmission && w.behind && !below(prev.fees, fresh)) {
    w.st.phase = 'signed';
    return 'resend';
  }
  const fees = replacement(prev.fees, fresh);
  const bid: FeeParams =
    'gasPrice' in fees ? { gasPrice: fees.gasPrice } : { maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas };
  if (same && sameFees(bid, prev.fees)) {
    w.st.phase = 'signed';
    w.st.waiting = 'fees are at the most the relayer can bid (its gas_price_cap, or what its balance covers): waiting for the network to take it';
    return 'resend';
  }
  return bid;
}

const RESUBMITTED = 'not mined in time: resubmitted';

const feeColumns = (f: FeeParams): TransactionPatch =>
  'gasPrice' in f
    ? { gasPrice: f.gasPrice.toString(), maxFeePerGas: null, maxPriorityFeePerGas: null }
    : { gasPrice: null, maxFeePerGas: f.maxFeePerGas.toString(), maxPriorityFeePerGas: f.maxPriorityFeePerGas.toString() };

/** A new signing at the row's nonce: recorded (with its raw bytes) before anything is broadcast. */
export function recordSigning(
  w: Work,
  s: { raw: Hex; hash: Hex; gasLimit: bigint; fees: FeeParams; feesJson: FeesJson; signature?: { r: Hex; s: Hex; v: number }; now: Date },
) {
  const noop = w.st.goal === 'noop';
  const resubmission = w.st.phase === 'broadcast' || w.st.phase === 'signed';
  const b: Broadcast = {
    hash: s.hash,
    kind: noop ? 'noop' : 'payload',
    ...(noop ? {} : { version: w.st.version }),
    nonce: nonceOf(w).toString(),
    gasLimit: s.gasLimit.toString(),
    fees: s.feesJson,
    signedAt: s.now.toISOString(),
  };
  w.st.broadcasts = [...w.st.broadcasts, b];
  w.st.raw = s.raw;
  w.st.phase = 'signed';
  w.st.waiting = undefined;
  w.patch.hash = s.hash;
  w.patch.hashes = [...(w.patch.hashes ?? w.tx.hashes), s.hash];
  Object.assign(w.patch, feeColumns(s.fees));
  if (!noop && s.signature) {
    const { r, s: sv, v } = s.signature;
    w.patch.signature = { r, s: sv, v, sig: `${r}${sv.slice(2)}${(v + 27).toString(16)}` };
    w.patch.gasLimit = s.gasLimit;
  }
  if (w.status === 'pending') {
    setStatus(w, 'sent');
    if (!w.tx.sentAt) w.patch.sentAt = s.now;
  }
  if (resubmission && !noop && (!w.st.note || w.st.note.startsWith(RESUBMITTED))) {
    const count = w.st.broadcasts.filter((x) => x.kind === 'payload' && x.nonce === b.nonce).length - 1;
    w.st.note = `${RESUBMITTED} with higher fees (${count} time${count === 1 ? '' : 's'})`;
  }
  return b;
}

// ---------------------------------------------------------------------------------------------
// Broadcasting

/**
 * What a node's answer to a broadcast means for the transaction. Returns whether receipts must be
 * read at once (the node says the nonce is used: by ours or another's). An answer that never came
 * counts as possibly sent.
 */
export function onBroadcast(pace: Pace, w: Work, verdict: BroadcastVerdict | 'ok', error: Error | undefined, now: Date): boolean {
  const last = w.st.broadcasts[w.st.broadcasts.length - 1];
  switch (verdict) {
    case 'ok':
    case 'known':
      w.st.phase = 'broadcast';
      w.st.acceptedAt = now.toISOString();
      w.st.waiting = undefined;
      w.patch.attempts = 0;
      if (last.kind === 'payload') {
        w.st.payloadOut = true;
        if (!w.tx.sentAt && !w.patch.sentAt) w.patch.sentAt = now;
        if (w.status === 'pending' || w.status === 'sent') setStatus(w, 'submitted');
      }
      // Its receipt is read when the mined-nonce watch (a tenth of a block) sees the nonce pass:
      // reading every receipt right after the broadcast cost a round trip a step, mostly for nothing.
      w.dueInMs = resubmitMs(pace);
      return false;
    case 'nonce-used':
      // Receipts decide: one of ours was mined, or someone else's.
      w.st.phase = 'broadcast';
      w.st.acceptedAt = w.st.acceptedAt ?? now.toISOString();
      w.dueInMs = pollMs(pace);
      return true;
    case 'nonce-gap':
      wait(w, 'waiting for lower nonces of this account to be mined', pace.blocktimeMs);
      return false;
    case 'underpriced':
      // Another transaction at this nonce bids more: outbid it at the next resubmission.
      w.st.phase = 'broadcast';
      w.st.acceptedAt = now.toISOString();
      w.st.waiting = 'another transaction with this nonce pays more; bidding higher at the next resubmission';
      w.dueInMs = pollMs(pace);
      return false;
    case 'fee-too-low':
      w.st.phase = 'new';
      wait(w, "fees below the network's current base fee; pricing again", Math.min(resubmitMs(pace), 1_000));
      return false;
    case 'no-funds':
      wait(w, "the relayer's balance does not cover value + gas; waiting for funds", resubmitMs(pace));
      return false;
    case 'unreachable':
      // The node may have taken it before the answer was lost.
      if (last.kind === 'payload') w.st.payloadOut = true;
      unreachable(w, error ?? new Error('no answer'));
      return false;
    case 'invalid': {
      const why = `rejected by the network: ${error?.message ?? 'invalid transaction'}`;
      if (last.kind === 'payload' && !w.st.payloadOut) {
        failBeforeSending(w, why);
        w.dueInMs = 0;
      } else {
        // An earlier broadcast is (or may be) out there and may still be mined: wait for it.
        w.st.phase = 'broadcast';
        w.st.acceptedAt = now.toISOString();
        wait(w, why, resubmitMs(pace));
      }
      return false;
    }
  }
}

/**
 * A row read in phase 'signed' was saved before a broadcast whose outcome nobody recorded (the
 * process died, or the step failed): its payload may be out there.
 */
export function resumeSigned(w: Work) {
  const last = w.st.broadcasts[w.st.broadcasts.length - 1];
  if (w.st.phase === 'signed' && last?.kind === 'payload') w.st.payloadOut = true;
}

// ---------------------------------------------------------------------------------------------
// The step (core/step-runner.ts runs it; steps.ts observes and performs)

/** What the chain answered about one transaction the chain's nonce passed (or that was mined). */
export type ChainAnswer =
  /** A receipt of one of its signings; `revert`: why a payload reverted (replayed), with its block. */
  | { kind: 'receipt'; receipt: Receipt; revert?: string }
  /** A receipt read got no answer: no evidence either way. */
  | { kind: 'unanswered' }
  /** The chain passed its nonce and no receipt is served yet, too recently to search for what took the nonce. */
  | { kind: 'late' }
  /** No signing has a receipt; `minedAt`: the transaction the chain holds at its nonce (null: not found). */
  | { kind: 'none'; minedAt: Hex | null };

/**
 * Whether to search for the transaction that took a nonce the chain passed while no receipt of ours
 * is served, `missingSince` when that was first seen. A node may report an account's nonce a moment
 * before it serves the block's receipts, and the search is costly (a scan of the account's history
 * on many nodes), so the receipts are read twice more first (half a block).
 */
export const searchDue = (pace: Pick<Pace, 'blocktimeMs'>, missingSince: number, now: number) => now - missingSince >= 2 * pollMs(pace);

/** Transactions whose receipts are worth reading: mined ones (confirmations, reorgs), and those whose nonce the chain passed. */
export const toResolve = (w: Work, latest: bigint) => w.tx.nonce !== null && w.st.phase !== 'done' && (w.st.phase === 'mined' || nonceOf(w) < latest);

/** The broadcast a receipt is for. */
export const broadcastOf = (w: Work, hash: Hex) => w.st.broadcasts.find((x) => x.hash.toLowerCase() === hash.toLowerCase())!;

/**
 * Applies what the chain answered: mined (and maybe confirmed or reverted), reorganised away, or
 * its nonce taken: by one of its own signings, by nothing found (held), or proven by another
 * transaction of the account, when it must move to a new nonce (returned: the hash that took it).
 */
export function resolve(pace: Pace, w: Work, a: ChainAnswer, head: bigint, now: Date): { move: Hex } | undefined {
  switch (a.kind) {
    case 'receipt':
      if (onReceipt(pace, w, broadcastOf(w, a.receipt.transactionHash), a.receipt, head) === 'reverted' && a.revert) w.reason = a.revert;
      return;
    case 'unanswered':
    case 'late':
      w.dueInMs = pollMs(pace); // no answer is no evidence: look again
      return;
    case 'none':
      if (w.st.phase === 'mined') {
        reorganised(w);
        return;
      }
      if (attribute(pace, w, a.minedAt, now) === 'move') return { move: a.minedAt! };
  }
}

/**
 * What a transaction needs at this point of the step: 'sign' (a new signing at its nonce, or a
 * higher bid), 'send' (its saved bytes, again), or nothing (waiting, mined, held, done).
 * `lineSince`: when the account's mined nonce last moved.
 */
export function plan(pace: Pace, w: Work, now: number, lineSince: number, latest: bigint, window?: number): 'sign' | 'send' | undefined {
  if (w.tx.nonce === null || w.st.phase === 'mined' || w.st.phase === 'done' || w.st.unattributed) return;
  expireIfDue(w, now);
  if (w.st.phase === 'new') return heldByWindow(pace, w, latest, window) ? undefined : 'sign';
  if (w.st.phase === 'signed') return 'send';
  if (w.st.phase === 'broadcast' && dueForResubmit(pace, w, now, lineSince, latest)) return 'sign';
}

/**
 * The send window's schedule, the mined nonce being `latest`: transactions `window` or more ahead
 * of it wait, each due about when the chain, mining full blocks, would let it in (a block after
 * the block that does).
 */
function windowHold(pace: Pick<Pace, 'blocktimeMs'>, latest: bigint, window: number): Held {
  return { from: latest + BigInt(window), per: perBlock(window), firstMs: 2 * pace.blocktimeMs, everyMs: pace.blocktimeMs };
}

/**
 * Whether the first signing of a transaction waits for the send window (none: no window), and
 * when it is due if so. The mined-nonce watch hands a held row over sooner when the chain gets
 * there first.
 */
export function heldByWindow(pace: Pick<Pace, 'blocktimeMs'>, w: Work, latest: bigint, window: number | undefined): boolean {
  if (window === undefined || !beyondWindow(w.tx, w.st, latest, window)) return false;
  w.dueInMs = heldDueMs(windowHold(pace, latest, window), nonceOf(w));
  return true;
}

/**
 * The new transactions the send window will hold, written free and due at intake: those a block's
 * worth of transfers or more beyond it (none of them can be let in while it is being written), on
 * the window's schedule.
 */
export function heldAtIntake(pace: Pick<Pace, 'blocktimeMs'>, latest: bigint, window: number): Held {
  const h = windowHold(pace, latest, window);
  return { ...h, from: h.from + BigInt(h.per), firstMs: h.firstMs + h.everyMs };
}

/** The patch a work writes: nothing when only looked at (the row is just given back, due again). */
export function patchOf(w: Work): TransactionPatch {
  if (unchanged(w)) return {};
  // A copy of the state's fields (as JSON keeps them): the work goes on changing them after this is written.
  const chainState: Record<string, unknown> = {};
  for (const k in w.st) {
    const v = w.st[k as keyof EvmState];
    if (v !== undefined) chainState[k] = v;
  }
  // w.patch never holds these three (they live in w.status, w.reason, w.st). Fields added after a
  // spread would give each copy a map of its own, several times slower.
  return { status: w.status, statusReason: reasonOf(w), chainState: chainState as TransactionPatch['chainState'], ...w.patch };
}
