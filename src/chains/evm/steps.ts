// The EVM family's half of a step (core/step-runner.ts runs it): reading the chain, signing and
// broadcasting, for one relayer's leased transactions at a time; what each answer means is
// decided in decide.ts, and the core writes every row.
import { signerFor } from '../../core/signers.js';
import type { Address, Hex } from 'viem';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import type { Decision, Steps } from '../../core/transactions/pipeline.js';
import { moveToNewNonce } from '../../core/transactions/store.js';
import { slot } from '../../core/state.js';
import { ExpiringMap } from '../../lib/expiring.js';
import type { Runtime } from '../../core/runtime.js';
import { readPayload, TRANSFER_GAS } from './accept.js';
import { evmContext, type EvmContext } from './context.js';
import {
  actionOf,
  atNonce,
  beyondWindow,
  MIN_WINDOW,
  type Pace,
  broadcastOf,
  type ChainAnswer,
  failBeforeSending,
  movedTo,
  minedWithinMs,
  newWork,
  nonceOf,
  onBroadcast,
  patchOf,
  plan,
  planFees,
  type Receipt,
  recordSigning,
  resolve,
  resumeSigned,
  searchDue,
  sendWindow,
  signedHashes,
  toResolve,
  unreachable,
  unsigned,
  wait,
  type Work,
} from './decide.js';
import { type BroadcastVerdict, classifyBroadcastError, revertReason } from './node-errors.js';
import { minedAt } from './evidence.js';
import { blocksOf, type Eip1559Fees, estimateGasWithMargin } from './fees.js';
import { chainNonces, latestNonce, reconcileNonces } from './nonces.js';
import {
  bidInLine,
  blockGasLimit,
  feesFromJson,
  feesToJson,
  maxPricePerGas,
  type PriceRequest,
  pricedBySpeed,
  replacementFees,
  requestFees,
} from './pricing.js';
import { RpcError, RpcUnavailableError } from './rpc-client.js';
import { readState, type Broadcast } from './state.js';
import { unsignedTransaction } from './unsigned.js';
import { lineLevel, othersInFlight, placeInLine, untilMined, watchMined } from './watch.js';

/** Steps of at least this many rows wait for their broadcasts to be mined (see decide)... */
const WAIT_ROWS = 32;
/** ...on chains with blocks at least this often. */
const WAIT_BLOCKTIME_MS = 2_000;

/** The step's context: the relayer's (null when it cannot be built: why). */
interface Ctx {
  rt: Runtime;
  relayer: Relayer;
  evm: EvmContext | null;
  setupError?: string;
  log: Runtime['log'];
}

type EvmEffect =
  /** Sign at the row's nonce (a new signing, a higher bid, or the same bytes again when no bid helps). */
  | { stage: 'sign'; point?: undefined }
  /** Broadcast the row's latest signed bytes. */
  | { stage: 'send'; point: string }
  /** The chain took its nonce with another transaction of the account (`usedBy`): move it to a new nonce. */
  | { stage: 'read'; renonce: Hex }
  /**
   * Read receipts again (after a broadcast: a fast chain may have mined it already); with `waits`,
   * once the chain's nonce passed the step's broadcasts or a block and a half went by.
   */
  | { stage: 'read'; resolve: true; waits?: true }
  /** Make sure every nonce below is held by a transaction (it is stuck behind a lower one). */
  | { stage: 'read'; fillGaps: true };

type EvmOutcome =
  | { signed: true; point: string; signing: Parameters<typeof recordSigning>[1]; gasLimit: bigint }
  /** No new signing: the same bytes go out again (planFees set that), or it waits, or its gas cannot be estimated. */
  | { signed: false; resend?: true; wait?: string; gasFailed?: string }
  | { verdict: BroadcastVerdict | 'ok'; error?: Error }
  | { moved: bigint | null }
  | { answer: ChainAnswer | null; head: bigint }
  | { unreachable: Error }
  | { done: true };

interface EvmDecision extends Decision<EvmEffect> {
  work: Work;
  pace: Pace;
  /** The account's mined nonce read at the start of the step, and since when it is there. */
  latest?: bigint;
  lineSince: number;
  /** The send window (decide.ts), when the step has rows far enough ahead for it to matter. */
  window?: number;
  /** What its broadcasts wait behind on the chain (lineAhead). */
  ahead?: Ahead;
  /** Its broadcast waits in the step for the chain to mine it (see decide). */
  waits: boolean;
  /** Something an operator should know, logged once the step is saved. */
  note?: { msg: string; fields: Record<string, unknown> };
}

interface Seen {
  pace: Pace;
  setupError?: string;
  latest?: bigint;
  lineSince: number;
  window?: number;
  ahead?: Ahead;
  head: bigint;
  answers: Map<string, ChainAnswer>;
  unreachable?: Error;
}

// When each relayer's mined nonce last moved, as seen here: only a timing hint for resubmission
// (a restart or another instance just starts a new clock), so it lives in memory.
const LINES = slot('EVM mined-nonce lines', () => new Map<string, { nonce: bigint; since: number }>());

function lineOf(rt: Runtime, relayerId: string, latest: bigint, now: number) {
  const lines = rt.state(LINES);
  const line = lines.get(relayerId);
  if (line && line.nonce === latest) return line;
  const fresh = { nonce: latest, since: now };
  lines.set(relayerId, fresh);
  return fresh;
}

/** A decision of the work as it stands, with `effects` next. */
const decisionOf = (w: Work, effects: EvmEffect[], base: Omit<EvmDecision, keyof Decision | 'work'>): EvmDecision => ({
  ...base,
  tx: w.tx,
  patch: patchOf(w),
  via: [...w.via],
  effects,
  nextInMs: w.st.phase === 'done' ? null : w.dueInMs,
  work: w,
});

/** The work of a decision, after the core wrote it (or did not). */
function workOf(d: EvmDecision): Work {
  const w = d.work;
  if (d.tx !== w.tx) {
    w.tx = d.tx;
    w.via = [];
    w.patch = {};
    w.reason = undefined;
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// Reading the chain

// When each transaction's nonce was first seen passed with no receipt of ours served (see
// searchDue): only a timing hint (a restart just starts a new clock), so it lives in memory.
const MISSING = slot('EVM receipts missing since', () => new ExpiringMap<string, number>(10 * 60_000));

/**
 * Receipts of every signing of each work (at any nonce it ever had), and for those without one,
 * whose transaction took the nonce, once searchDue says so.
 */
async function readChain(rt: Runtime, ctx: EvmContext, works: Work[], latest: bigint): Promise<{ head: bigint; answers: Map<string, ChainAnswer> }> {
  const look = works.filter((w) => toResolve(w, latest));
  if (look.length === 0) return { head: 0n, answers: new Map() };
  const calls = look.flatMap((w) => signedHashes(w).map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })));
  const [head, ...replies] = await ctx.rpc.gather<Receipt | null>([{ method: 'eth_blockNumber' }, ...calls]);
  if (!head.ok) throw head.error;
  const headBlock = BigInt(head.result as unknown as Hex);
  const answers = new Map<string, ChainAnswer>();
  const missing = rt.state(MISSING);
  let i = 0;
  const reverted: { w: Work; r: Receipt }[] = [];
  for (const w of look) {
    let receipt: Receipt | null = null;
    let unanswered = false;
    for (const _ of signedHashes(w)) {
      const a = replies[i++];
      if (!a.ok) unanswered = true;
      else if (!receipt && a.result) receipt = a.result;
    }
    if (receipt) {
      missing.delete(w.tx.id);
      answers.set(w.tx.id, { kind: 'receipt', receipt });
      if (BigInt(receipt.status) !== 1n && broadcastOf(w, receipt.transactionHash).kind === 'payload') reverted.push({ w, r: receipt });
    } else if (unanswered) answers.set(w.tx.id, { kind: 'unanswered' });
    else if (w.st.phase === 'mined') answers.set(w.tx.id, { kind: 'none', minedAt: null });
    else if (!searchDue(ctx, missing.getOrCreate(w.tx.id, Date.now), Date.now())) answers.set(w.tx.id, { kind: 'late' });
    else {
      missing.delete(w.tx.id);
      answers.set(w.tx.id, { kind: 'none', minedAt: await minedAt(ctx.rpc, ctx.relayer.address as Address, nonceOf(w), headBlock) });
    }
  }
  if (reverted.length) await explainReverts(ctx, reverted, answers);
  return { head: headBlock, answers };
}

/** The revert reason of mined failures, by replaying each call on the state before its block. */
async function explainReverts(ctx: EvmContext, reverted: { w: Work; r: Receipt }[], answers: Map<string, ChainAnswer>) {
  const calls = reverted.map(({ w, r }) => ({
    method: 'eth_call',
    params: [
      {
        from: w.tx.from,
        ...(w.tx.to ? { to: w.tx.to } : {}),
        ...(w.tx.data ? { data: w.tx.data } : {}),
        value: `0x${BigInt(w.tx.value).toString(16)}`,
        gas: `0x${BigInt(broadcastOf(w, r.transactionHash).gasLimit).toString(16)}`,
      },
      `0x${(BigInt(r.blockNumber) - 1n).toString(16)}`,
    ],
  }));
  const replies = await ctx.rpc.batch(calls).catch(() => null);
  reverted.forEach(({ w, r }, i) => {
    const gasLimit = broadcastOf(w, r.transactionHash).gasLimit;
    let why: string;
    if (BigInt(r.gasUsed) >= BigInt(gasLimit)) why = `ran out of gas (gas limit ${gasLimit})`;
    else {
      const a = replies?.[i];
      why = a && !a.ok ? revertReason(a.error as RpcError) : 'execution reverted (no reason given)';
    }
    answers.set(w.tx.id, { kind: 'receipt', receipt: r, revert: `${why}; mined in block ${BigInt(r.blockNumber)}` });
  });
}

const min = (xs: bigint[]) => xs.reduce((a, b) => (a < b ? a : b));
const max = (xs: bigint[]) => xs.reduce((a, b) => (a > b ? a : b));

/**
 * The send window for a step's rows (decide.ts), read only when a row not yet signed is at least
 * MIN_WINDOW ahead of the mined nonce: a step of a few rows costs no call for it. None when the
 * chain's block gas limit cannot be read (every row is signed, as without a window).
 */
async function windowFor(c: Ctx, ctx: EvmContext, rows: Transaction[], latest: bigint) {
  if (!rows.some((tx) => beyondWindow(tx, readState(tx), latest, MIN_WINDOW))) return undefined;
  try {
    return sendWindow(await blockGasLimit(ctx.rpc), TRANSFER_GAS);
  } catch (err) {
    c.log.debug({ err }, 'block gas limit not read: no send window this step');
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Signing

type Ahead = { others: bigint; blockGas: bigint; last: bigint };

/**
 * What the relayer's broadcasts wait behind on its chain: the other relayers' broadcasts this
 * instance has out there, and the chain's block gas limit (to count them in blocks). None for a
 * line shorter than the window's floor with the step's rows (no block is read for a lone client),
 * nor when the limit cannot be read: nothing is then counted.
 */
async function lineAhead(c: Ctx, ctx: EvmContext, rows: Transaction[], latest: bigint): Promise<Ahead | undefined> {
  const others = othersInFlight(c.rt, ctx.rpc, ctx.relayer.id);
  const last = rows.reduce((m, tx) => (tx.nonce !== null && tx.nonce > m ? tx.nonce : m), latest);
  if (others + last - latest < BigInt(MIN_WINDOW)) return undefined;
  const blockGas = await blockGasLimit(ctx.rpc).catch(() => undefined);
  return blockGas === undefined ? undefined : { others, blockGas, last };
}

/** When a line's level no longer covers it, it is raised for this many more full blocks than the line fills. */
const LEVEL_HEADROOM_BLOCKS = 24;
/** How long a read of the relayer's balance serves the bids made meanwhile. */
const BALANCE_MS = 5_000;

/**
 * Where a work's bid stands: `backlog`, the full blocks expected to be mined before its nonce (the
 * relayer's own below it, exactly, and the others'); `line`, when a line waits on the chain, the
 * blocks the whole line fills (the step's last nonce included), the relayer's mined nonce and its
 * own transactions in line.
 */
type Queue = { backlog: number; line?: { blocks: number; latest: bigint; own: bigint } };

function queueOf(d: Pick<EvmDecision, 'ahead' | 'latest'>, w: Work): Queue {
  if (!d.ahead || d.latest === undefined) return { backlog: 0 };
  const place = nonceOf(w) > d.latest ? nonceOf(w) - d.latest : 0n;
  const { others, blockGas, last } = d.ahead;
  return {
    backlog: blocksOf(others + place, TRANSFER_GAS, blockGas),
    line: { blocks: blocksOf(others + last - d.latest, TRANSFER_GAS, blockGas), latest: d.latest, own: last - d.latest + 1n },
  };
}

/**
 * A first bid in the chain's line (bidInLine): at its level, raised past what the line needs when
 * that is above it. None when the relayer's balance (read at most every few seconds) could not
 * carry its transactions in line at that bid: nodes refuse a transaction whose gas × cap + value
 * the balance does not cover, some counting the account's other pending ones too.
 */
async function lineBid(rt: Runtime, ctx: EvmContext, req: PriceRequest, line: NonNullable<Queue['line']>, nonce: bigint, gas: bigint, value: bigint) {
  const need = await requestFees(ctx, req, line.blocks);
  const raised = await requestFees(ctx, req, line.blocks + LEVEL_HEADROOM_BLOCKS);
  const level = lineLevel(rt, ctx.rpc, maxPricePerGas(need), maxPricePerGas(raised));
  const bid = bidInLine(need as Eip1559Fees, level, placeInLine(rt, ctx, line.latest, nonce));
  const limit = await affordable(ctx, line.own * gas, line.own * value);
  return limit !== undefined && limit >= bid.maxFeePerGas ? bid : undefined;
}

/** The relayer's balance, read at most every BALANCE_MS; undefined when it cannot be read. */
const balanceOf = (ctx: EvmContext) =>
  ctx.rpc
    .memo(`balance ${ctx.relayer.address}`, BALANCE_MS, () => ctx.rpc.request<Hex>('eth_getBalance', [ctx.relayer.address, 'latest']).then(BigInt))
    .catch(() => undefined);

/**
 * The highest price a gas the relayer's balance covers for `gas` and `value` (one transaction's, or
 * all of its line's): a bid above it would be refused, and the transaction left waiting for funds
 * that a lower bid did not need. Undefined when the balance cannot be read.
 */
async function affordable(ctx: EvmContext, gas: bigint, value: bigint): Promise<bigint | undefined> {
  const balance = await balanceOf(ctx);
  return balance === undefined ? undefined : balance > value ? (balance - value) / gas : 0n;
}

/**
 * Signs the next transaction at the row's nonce. No new signing when no better bid is possible
 * (planFees marks the same bytes to go out again), when the signer is missing, or when the
 * payload's gas cannot be estimated (it then fails, and a NOOP takes its nonce). A bid is raised
 * to outlast the full blocks expected to be mined before it; a first bid in a line, to the line's
 * level (bidInLine).
 */
async function sign(rt: Runtime, ctx: EvmContext, w: Work, q: Queue): Promise<EvmOutcome> {
  if (!ctx.signer) return { signed: false, wait: `the relayer's signer "${ctx.relayer.signerId}" is not available` };
  const noop = w.st.goal === 'noop';
  let gasLimit = noop ? TRANSFER_GAS : w.tx.gasLimit;
  if (gasLimit === null) {
    try {
      gasLimit = await estimateGasWithMargin(ctx.rpc, {
        from: w.tx.from as Address,
        to: (w.tx.to ?? undefined) as Address | undefined,
        data: (w.tx.data ?? undefined) as Hex | undefined,
        value: BigInt(w.tx.value),
      });
    } catch (e) {
      if (!(e instanceof RpcError)) throw e;
      return { signed: false, gasFailed: `gas estimation failed: ${revertReason(e)}` };
    }
  }
  const req = noop ? { speed: 'fast' as const } : readPayload(w.tx.request);
  const value = noop ? 0n : BigInt(w.tx.value);
  const fresh = await requestFees(ctx, req, q.backlog);
  const inLine = q.line && 'maxFeePerGas' in fresh && pricedBySpeed(req) ? await lineBid(rt, ctx, req, q.line, nonceOf(w), gasLimit, value) : undefined;
  const prev = atNonce(w)[0];
  // A bid again never goes past what the balance covers: the bid before stays out instead.
  const limit = prev ? await affordable(ctx, gasLimit, value) : undefined;
  const fees = planFees(w, prev && { kind: prev.kind, version: prev.version, fees: feesFromJson(prev.fees) }, prev ? fresh : (inLine ?? fresh), (p, f) =>
    replacementFees(ctx, p, inLine ?? f, limit),
  );
  if (fees === 'resend') return { signed: false, resend: true };
  const base = { chainId: ctx.chainId, nonce: Number(nonceOf(w)), gas: gasLimit };
  const body = noop
    ? { to: ctx.relayer.address as Address, value: 0n, ...base }
    : { to: (w.tx.to ?? undefined) as Address | undefined, value, data: (w.tx.data ?? undefined) as Hex | undefined, ...base };
  const unsigned = unsignedTransaction(body, fees, noop ? undefined : readPayload(w.tx.request).authorizationList);
  const { raw, hash, signature } = await ctx.signer.signTransaction(unsigned);
  // The signing path it is on (its crash points), as recordSigning will file it.
  const filed = { kind: noop ? 'noop' : 'payload', version: noop ? undefined : w.st.version, nonce: nonceOf(w).toString() } as Broadcast;
  return {
    signed: true,
    point: actionOf({ ...w, st: { ...w.st, broadcasts: [...w.st.broadcasts, filed] } }, filed),
    gasLimit,
    signing: {
      raw,
      hash,
      gasLimit,
      fees,
      feesJson: feesToJson(fees),
      signature: noop ? undefined : { r: signature.r, s: signature.s, v: signature.yParity },
      now: new Date(),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Broadcasting, in nonce order, in one batch

async function broadcast(c: Ctx, ctx: EvmContext, works: Work[]): Promise<EvmOutcome[]> {
  const order = works.map((w, i) => ({ w, i })).sort((a, b) => (nonceOf(a.w) < nonceOf(b.w) ? -1 : 1));
  const outcomes: EvmOutcome[] = new Array(works.length);
  let replies: { ok: boolean; error?: unknown }[];
  try {
    replies = await ctx.rpc.gather(order.map(({ w }) => ({ method: 'eth_sendRawTransaction', params: [w.st.raw] })));
  } catch (e) {
    for (const { i } of order) outcomes[i] = { verdict: 'unreachable', error: e as Error };
    return outcomes;
  }
  let gap = false;
  order.forEach(({ w, i }, k) => {
    const a = replies[k];
    const verdict = a.ok ? 'ok' : classifyBroadcastError(a.error);
    outcomes[i] = { verdict, error: a.error as Error | undefined };
    if (verdict === 'nonce-gap') gap = true;
    if (verdict === 'invalid') c.log.warn({ transactionId: w.tx.id, error: (a.error as Error).message }, 'broadcast refused');
  });
  if (gap) await fillGapsNow(c, ctx);
  return outcomes;
}

// When each relayer's nonces were last reconciled here, so a stuck relayer is not reconciled on
// every step; any instance may do it, at most this often each.
const RECONCILED = slot('EVM nonce reconciliations', () => new Map<string, number>());

async function fillGapsNow(c: Ctx, ctx: EvmContext) {
  const reconciled = c.rt.state(RECONCILED);
  if (Date.now() - (reconciled.get(ctx.relayer.id) ?? 0) < 10_000) return;
  reconciled.set(ctx.relayer.id, Date.now());
  await reconcileNonces(c.rt, ctx).catch((err) => c.log.warn({ err }, 'nonce reconciliation failed'));
}

async function performOne(c: Ctx, ctx: EvmContext, effect: EvmEffect, d: EvmDecision, q: Queue = { backlog: 0 }): Promise<EvmOutcome> {
  const w = d.work;
  try {
    if ('renonce' in effect) {
      const { pending } = await chainNonces(ctx);
      return { moved: await moveToNewNonce(c.rt, w.tx, pending) };
    }
    if ('fillGaps' in effect) {
      await fillGapsNow(c, ctx);
      return { done: true };
    }
    // Not loaded here yet (a relayer made on another instance, a signer let go after a change).
    if (!ctx.signer) {
      const signer = await signerFor(c.rt, ctx.relayer.signerId, 'evm').catch(() => undefined);
      if (signer?.kind === 'evm' && signer.address.toLowerCase() === ctx.relayer.address.toLowerCase()) ctx.signer = signer;
    }
    return await sign(c.rt, ctx, w, q);
  } catch (e) {
    if (e instanceof RpcUnavailableError) return { unreachable: e };
    if (effect.stage !== 'sign') throw e;
    c.log.error({ err: e, transactionId: w.tx.id }, 'could not sign');
    return { signed: false, wait: `could not be signed: ${(e as Error).message}` };
  }
}

// ---------------------------------------------------------------------------------------------
// The decisions of a step

/** What a work does next in this step (sign or send), from where it stands. */
function next(d: EvmDecision, w: Work, effects: EvmEffect[]): EvmDecision {
  const todo = effects.length === 0 && d.latest !== undefined ? plan(d.pace, w, Date.now(), d.lineSince, d.latest, d.window) : undefined;
  return decisionOf(w, todo === 'sign' ? [{ stage: 'sign' }] : todo === 'send' ? [sendOf(w)] : effects, d);
}

const sendOf = (w: Work): EvmEffect => ({ stage: 'send', point: actionOf(w, w.st.broadcasts[w.st.broadcasts.length - 1]) });

export const evmSteps: Steps<Ctx, Seen, EvmEffect, EvmOutcome, EvmDecision> = {
  context(rt, relayer) {
    const log = rt.log.child({ relayerId: relayer.id });
    try {
      return { rt, relayer, evm: evmContext(rt, relayer), log };
    } catch (e) {
      return { rt, relayer, evm: null, setupError: (e as Error).message, log };
    }
  },

  async observe(c, rows) {
    const seen: Seen = {
      pace: c.evm ?? { blocktimeMs: 1_000, requiredConfirmations: 1 },
      setupError: c.setupError,
      lineSince: Date.now(),
      head: 0n,
      answers: new Map(),
    };
    if (!c.evm) return seen;
    try {
      seen.latest = await latestNonce(c.evm);
      seen.lineSince = lineOf(c.rt, c.relayer.id, seen.latest, Date.now()).since;
      seen.window = await windowFor(c, c.evm, rows, seen.latest);
      seen.ahead = await lineAhead(c, c.evm, rows, seen.latest);
      const { head, answers } = await readChain(
        c.rt,
        c.evm,
        rows.map((tx) => newWork(tx, readState(tx))),
        seen.latest,
      );
      Object.assign(seen, { head, answers });
    } catch (e) {
      if (!(e instanceof RpcUnavailableError)) throw e;
      seen.latest = undefined;
      seen.unreachable = e;
    }
    return seen;
  },

  decide(rows, seen, now) {
    // A relayer under load (a step of many rows) on a fast chain: the step waits for its broadcasts
    // to be mined and writes once, with the receipts, instead of writing the broadcast's answer,
    // giving the rows back and having the mined-nonce watch claim them again: two writes of each
    // row fewer. A few rows (a lone client) are written at once, so their status shows submitted.
    const waits = rows.length >= WAIT_ROWS && seen.pace.blocktimeMs <= WAIT_BLOCKTIME_MS;
    const base = { pace: seen.pace, latest: seen.latest, lineSince: seen.lineSince, window: seen.window, ahead: seen.ahead, waits };
    const ds = rows.map((tx) => {
      const w = newWork(tx, readState(tx));
      resumeSigned(w);
      if (seen.latest === undefined) {
        // Nothing could be read: the step is a wait.
        if (w.st.phase !== 'done') {
          if (seen.unreachable) unreachable(w, seen.unreachable);
          else wait(w, `cannot work on this transaction: ${seen.setupError}`, 30_000);
        }
        return decisionOf(w, [], base);
      }
      if (tx.nonce === null) wait(w, 'waiting for a nonce', 1_000);
      const answer = seen.answers.get(tx.id);
      const moved = answer && resolve(seen.pace, w, answer, seen.head, now);
      if (moved) return decisionOf(w, [{ stage: 'read', renonce: moved.move }], base);
      const d = next(decisionOf(w, [], base), w, []);
      if (answer?.kind === 'none' && w.st.unattributed)
        d.note = {
          msg: 'nonce used on chain by a transaction that could not be found: not sending again until it is',
          fields: { nonce: nonceOf(w).toString() },
        };
      return d;
    });
    // Stuck behind a lower nonce: make sure every nonce below is held by a transaction, before signing.
    const first = ds.find((d) => d.effects[0]?.stage === 'sign' && d.work.behind);
    if (first) first.effects = [{ stage: 'read', fillGaps: true }, ...first.effects];
    return ds;
  },

  async perform(c, todo) {
    const ctx = c.evm!;
    const outcomes: EvmOutcome[] = new Array(todo.length);
    const indexed = todo.map((t, i) => ({ i, effect: t.effect, d: t.d }));
    const at = (pick: (e: EvmEffect) => boolean) => indexed.filter((t) => pick(t.effect));
    // Gaps first, then moves, each work in turn; then the signings at once (a remote signer's round
    // trips overlap); receipts and broadcasts in one batch each.
    for (const t of [...at((e) => 'fillGaps' in e), ...at((e) => 'renonce' in e)]) {
      outcomes[t.i] = await performOne(c, ctx, t.effect, t.d);
    }
    await Promise.all(
      at((e) => e.stage === 'sign').map(async (t) => {
        outcomes[t.i] = await performOne(c, ctx, t.effect, t.d, queueOf(t.d, t.d.work));
      }),
    );
    const looks = at((e) => 'resolve' in e);
    const waits = looks.filter((t) => 'waits' in t.effect);
    if (waits.length > 0) {
      const upTo = max(waits.map((t) => nonceOf(t.d.work)));
      const { latest = 0n, window } = waits[0].d;
      await untilMined(c.rt, ctx, upTo, latest, minedWithinMs(ctx, latest, upTo, window), window);
    }
    if (looks.length > 0) {
      const latest = await latestNonce(ctx).catch(() => null);
      const read =
        latest === null
          ? null
          : await readChain(
              c.rt,
              ctx,
              looks.map((t) => t.d.work),
              latest,
            ).catch(() => null);
      for (const t of looks) outcomes[t.i] = { answer: read?.answers.get(t.d.work.tx.id) ?? null, head: read?.head ?? 0n };
    }
    const sends = at((e) => e.stage === 'send');
    if (sends.length > 0) {
      const answers = await broadcast(
        c,
        ctx,
        sends.map((t) => t.d.work),
      );
      sends.forEach((t, k) => {
        outcomes[t.i] = answers[k];
      });
    }
    return outcomes;
  },

  record(d, outcomes, now) {
    const w = workOf(d);
    const { pace } = d;
    const effects: EvmEffect[] = [];
    let replan = false;
    d.effects.forEach((effect, i) => {
      const o = outcomes[i];
      if ('unreachable' in o) unreachable(w, o.unreachable);
      else if ('moved' in o) {
        if (o.moved === null) return;
        const from = nonceOf(w);
        movedTo(w, from, o.moved, (effect as { renonce: Hex }).renonce);
        d = {
          ...d,
          note: {
            msg: 'nonce used by another transaction of this account: transaction moved to a new nonce',
            fields: { from: from.toString(), to: o.moved.toString() },
          },
        };
        replan = true;
      } else if ('signed' in o) {
        if (o.signed) {
          recordSigning(w, o.signing);
          effects.push(sendOf(w));
        } else if (o.resend) effects.push(sendOf(w));
        else if (o.gasFailed) {
          failBeforeSending(w, o.gasFailed);
          effects.push({ stage: 'sign' }); // its NOOP
        } else if (o.wait) unsigned(w, o.wait);
      } else if ('verdict' in o) {
        if (onBroadcast(pace, w, o.verdict, o.error, now)) effects.push({ stage: 'read', resolve: true });
        else if (d.waits && w.st.phase === 'broadcast' && (o.verdict === 'ok' || o.verdict === 'known'))
          effects.push({ stage: 'read', resolve: true, waits: true });
      } else if ('answer' in o) {
        const moved = o.answer && resolve(pace, w, o.answer, o.head, now);
        if (moved) effects.push({ stage: 'read', renonce: moved.move });
      }
    });
    // Moved to a new nonce: it is signed there in this step.
    return replan ? next(d, w, []) : decisionOf(w, effects, d);
  },

  settled(c, ds) {
    for (const d of ds) if (d.note) c.log.warn({ ...d.note.fields, transactionId: d.tx.id }, d.note.msg);
    const { latest, window: size } = ds.find((d) => d.latest !== undefined) ?? {};
    if (!c.evm || latest === undefined) return;
    const out = ds.filter((d) => d.work.st.phase === 'broadcast').map((d) => nonceOf(d.work));
    // Rows the send window held (decide.ts): the watch hands them over as the chain lets them in.
    const held =
      size === undefined ? [] : ds.filter((d) => d.work.st.phase === 'new' && beyondWindow(d.tx, d.work.st, latest, size)).map((d) => nonceOf(d.work));
    if (out.length + held.length === 0) return;
    const window = held.length > 0 ? { size: size!, from: min(held) } : undefined;
    watchMined(c.rt, c.evm, out.length > 0 ? max(out) : latest, latest, out.length > 0 ? min(out) : undefined, window);
  },
};
