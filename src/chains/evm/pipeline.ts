// The EVM pipeline's effects: reading the chain, signing, broadcasting and saving, for a batch of
// leased transactions. What to do with each answer is decided in decide.ts.
import { keccak256, parseTransaction, type Address, type Hex, type TransactionSerializable } from 'viem';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import { moveToNewNonce, releaseTransactions, saveTransactions, type TransactionPatch } from '../../core/transactions/store.js';
import { slot } from '../../core/state.js';
import type { Runtime } from '../../core/runtime.js';
import { readPayload, TRANSFER_GAS } from './accept.js';
import { evmContext, type EvmContext } from './context.js';
import {
  actionOf,
  attribute,
  atNonce,
  dueForResubmit,
  expireIfDue,
  failBeforeSending,
  movedTo,
  newWork,
  nonceOf,
  onBroadcast,
  onReceipt,
  planFees,
  pollMs,
  reasonOf,
  recordSigning,
  reorganised,
  resumeSigned,
  signedHashes,
  unchanged,
  unreachable,
  wait,
  type Receipt,
  type Work,
} from './decide.js';
import { classifyBroadcastError, revertReason } from './errors.js';
import { minedAt } from './evidence.js';
import { estimateGasWithMargin } from './fees.js';
import { chainNonces, latestNonce, reconcileNonces } from './nonces.js';
import { capFees, feesFromJson, feesToJson, marketFees, replacementFees, requestFees } from './pricing.js';
import { RpcError, RpcUnavailableError } from './rpc.js';
import { readState, type Broadcast } from './state.js';
import { watchMined } from './watch.js';

/** Advances a batch of leased EVM transactions: one group per relayer, a few RPC calls and two writes each. */
export async function processBatch(rt: Runtime, txs: Transaction[]): Promise<void> {
  const byRelayer = new Map<string, Transaction[]>();
  for (const tx of txs) byRelayer.set(tx.relayerId, [...(byRelayer.get(tx.relayerId) ?? []), tx]);
  const relayers = await rt.prisma.relayer.findMany({ where: { id: { in: [...byRelayer.keys()] } } });
  await Promise.all(relayers.map((r) => processRelayer(rt, r, byRelayer.get(r.id)!)));
}

async function processRelayer(rt: Runtime, relayer: Relayer, txs: Transaction[]): Promise<void> {
  const works = txs.map((tx) => newWork(tx, readState(tx)));
  works.forEach(resumeSigned);
  let ctx: EvmContext;
  try {
    ctx = evmContext(rt, relayer);
  } catch (e) {
    for (const w of works) wait(w, `cannot work on this transaction: ${(e as Error).message}`, 30_000);
    await persist(rt, works, true);
    return;
  }
  const log = rt.log.child({ relayerId: relayer.id });

  let latest: bigint | undefined;
  try {
    const active = () => works.filter((w) => !w.lost && w.st.phase !== 'done');
    for (const w of works.filter((x) => x.tx.nonce === null)) wait(w, 'waiting for a nonce', 1_000);

    // 1. What the chain already has: receipts for transactions whose nonce the chain has passed.
    latest = await latestNonce(ctx);
    const line = lineOf(rt, relayer.id, latest, Date.now());
    await resolve(
      rt,
      ctx,
      active().filter((w) => w.tx.nonce !== null),
      latest,
      log,
    );

    // 2. Decide what each needs, and sign; every signing is saved before it is broadcast.
    const toSign: Work[] = [];
    const toBroadcast: Work[] = [];
    let stuckAbove = false;
    const now = Date.now();
    for (const w of active()) {
      if (w.tx.nonce === null || w.st.phase === 'mined' || w.st.unattributed) continue;
      expireIfDue(w, now);
      if (w.st.phase === 'new') toSign.push(w);
      else if (w.st.phase === 'signed') toBroadcast.push(w);
      else if (w.st.phase === 'broadcast' && dueForResubmit(ctx, w, now, line.since, latest)) {
        toSign.push(w);
        rt.metrics.resubmissions.inc({ relayer_id: relayer.id });
        if (w.behind) stuckAbove = true;
      }
    }
    // Stuck behind a lower nonce: make sure every nonce below is held by a transaction.
    if (stuckAbove) await fillGapsNow(rt, ctx, log);
    const { signed, resend } = await signAll(ctx, toSign, log);
    crashAt(rt, signed, 'signed');
    await persist(rt, signed, false);
    crashAt(rt, signed, 'saved');
    toBroadcast.push(...resend, ...signed.filter((w) => !w.lost && w.st.phase === 'signed'));

    // 3. Broadcast, in nonce order, then look again at once: a fast chain may have mined them already.
    const accepted = await broadcastAll(rt, ctx, toBroadcast, log);
    if (accepted.length > 0) {
      const again = await latestNonce(ctx).catch(() => null);
      if (again !== null)
        await resolve(
          rt,
          ctx,
          accepted.filter((w) => !w.lost),
          again,
          log,
        );
    }
  } catch (e) {
    if (!(e instanceof RpcUnavailableError)) throw e;
    for (const w of works) if (!w.lost && w.st.phase !== 'done') unreachable(w, e);
  }
  await persist(rt, works, true);
  const out = works.filter((w) => !w.lost && w.st.phase === 'broadcast').map(nonceOf);
  if (out.length > 0 && latest !== undefined)
    watchMined(
      rt,
      ctx,
      out.reduce((a, b) => (a > b ? a : b)),
      latest,
    );
  const soonest = Math.min(...works.filter((w) => !w.lost && w.dueInMs !== null).map((w) => w.dueInMs!));
  if (Number.isFinite(soonest) && soonest < 250) setTimeout(() => rt.wake(), soonest).unref();
}

/** The crash point of each work's latest signing at `stage` (fault-injection tests only). */
function crashAt(rt: Runtime, works: Work[], stage: 'signed' | 'saved' | 'broadcast') {
  for (const w of works) {
    const b = w.st.broadcasts[w.st.broadcasts.length - 1];
    if (!w.lost && b) rt.crash(`evm.${actionOf(w, b)}.${stage}`);
  }
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

/** Writes every transaction of the step (with `endStep`, giving their leases back); only rows whose lease still holds are written. */
async function persist(rt: Runtime, works: Work[], endStep: boolean) {
  let live = works.filter((w) => !w.lost);
  if (live.length === 0) return;
  const dueAt = (w: Work) => (w.st.phase === 'done' || w.dueInMs === null ? null : new Date(Date.now() + w.dueInMs));
  if (endStep) {
    const same = live.filter(unchanged);
    await releaseTransactions(
      rt,
      same.map((w) => ({ tx: w.tx, dueAt: dueAt(w) })),
    );
    live = live.filter((w) => !same.includes(w));
    if (live.length === 0) return;
  }
  const changes = live.map((w) => {
    const patch: TransactionPatch = { ...w.patch, status: w.status, statusReason: reasonOf(w), chainState: w.st as never };
    if (endStep) patch.dueAt = dueAt(w);
    return { before: w.tx, patch, via: w.via, release: endStep };
  });
  const saved = await saveTransactions(rt, rt.instanceId, changes);
  for (const w of live) {
    const row = saved.get(w.tx.id);
    if (!row) {
      w.lost = true;
      continue;
    }
    w.tx = row;
    w.via = [];
    w.patch = {};
    w.reason = undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Receipts and nonce attribution

async function resolve(rt: Runtime, ctx: EvmContext, works: Work[], latest: bigint, log: Runtime['log']) {
  const look = works.filter((w) => !w.lost && w.st.phase !== 'done' && (w.st.phase === 'mined' || nonceOf(w) < latest));
  if (look.length === 0) return;
  // Every signing of each, at any nonce it ever had: after restarts and lease moves, any may be the one mined.
  const calls = look.flatMap((w) => signedHashes(w).map((hash) => ({ method: 'eth_getTransactionReceipt', params: [hash] })));
  const [head, ...answers] = await ctx.rpc.batch<Receipt | null>([{ method: 'eth_blockNumber' }, ...calls]);
  if (!head.ok) throw head.error;
  const headBlock = BigInt(head.result as unknown as Hex);
  let i = 0;
  const reverted: { w: Work; b: Broadcast; r: Receipt }[] = [];
  const unexplained: Work[] = [];
  for (const w of look) {
    let receipt: Receipt | null = null;
    let unanswered = false;
    for (const _ of signedHashes(w)) {
      const a = answers[i++];
      if (!a.ok) unanswered = true;
      else if (!receipt && a.result) receipt = a.result;
    }
    if (receipt) {
      const b = w.st.broadcasts.find((x) => x.hash.toLowerCase() === receipt!.transactionHash.toLowerCase())!;
      if (b.nonce !== nonceOf(w).toString())
        log.error({ transactionId: w.tx.id, nonce: b.nonce }, 'a signing at an earlier nonce of this transaction was mined');
      if (onReceipt(ctx, w, b, receipt, headBlock) === 'reverted') reverted.push({ w, b, r: receipt });
    } else if (unanswered) {
      w.dueInMs = pollMs(ctx); // no answer is no evidence: look again
    } else if (w.st.phase === 'mined') {
      reorganised(w);
    } else {
      unexplained.push(w);
    }
  }
  if (reverted.length) await explainReverts(ctx, reverted);
  for (const w of unexplained) await attributeNonce(rt, ctx, w, headBlock, log);
}

/** The chain passed the nonce and no signing of this transaction has a receipt: whose transaction took it? */
async function attributeNonce(rt: Runtime, ctx: EvmContext, w: Work, head: bigint, log: Runtime['log']) {
  const n = nonceOf(w);
  const mined = await minedAt(ctx.rpc, ctx.relayer.address as Address, n, head);
  const verdict = attribute(ctx, w, mined, new Date());
  if (verdict === 'hold') {
    log.warn({ transactionId: w.tx.id, nonce: n.toString() }, 'nonce used on chain by a transaction that could not be found: not sending again until it is');
    return;
  }
  if (verdict !== 'move') return;
  const { pending } = await chainNonces(ctx);
  const next = await moveToNewNonce(rt, w.tx, pending);
  if (next === null) {
    w.lost = true;
    return;
  }
  log.warn(
    { transactionId: w.tx.id, from: n.toString(), to: next.toString(), usedBy: mined },
    'nonce used by another transaction of this account: transaction moved to a new nonce',
  );
  movedTo(w, n, next, mined!);
}

/** The revert reason of mined failures, by replaying each call on the state before its block. */
async function explainReverts(ctx: EvmContext, reverted: { w: Work; b: Broadcast; r: Receipt }[]) {
  const calls = reverted.map(({ w, b, r }) => ({
    method: 'eth_call',
    params: [
      {
        from: w.tx.from,
        ...(w.tx.to ? { to: w.tx.to } : {}),
        ...(w.tx.data ? { data: w.tx.data } : {}),
        value: `0x${BigInt(w.tx.value).toString(16)}`,
        gas: `0x${BigInt(b.gasLimit).toString(16)}`,
      },
      `0x${(BigInt(r.blockNumber) - 1n).toString(16)}`,
    ],
  }));
  const answers = await ctx.rpc.batch(calls).catch(() => null);
  reverted.forEach(({ w, b, r }, i) => {
    const gasUsed = BigInt(r.gasUsed);
    let why: string;
    if (gasUsed >= BigInt(b.gasLimit)) why = `ran out of gas (gas limit ${b.gasLimit})`;
    else {
      const a = answers?.[i];
      why = a && !a.ok ? revertReason(a.error as RpcError) : 'execution reverted (no reason given)';
    }
    w.reason = `${why}; mined in block ${BigInt(r.blockNumber)}`;
  });
}

// ---------------------------------------------------------------------------------------------
// Signing

async function signAll(ctx: EvmContext, works: Work[], log: Runtime['log']): Promise<{ signed: Work[]; resend: Work[] }> {
  const signed: Work[] = [];
  const resend: Work[] = [];
  for (const w of works) {
    try {
      const r = await signOne(ctx, w);
      if (r === 'signed') signed.push(w);
      else if (r === 'resend') resend.push(w);
    } catch (e) {
      if (e instanceof RpcUnavailableError) {
        unreachable(w, e);
        continue;
      }
      log.error({ err: e, transactionId: w.tx.id }, 'could not sign');
      wait(w, `could not be signed: ${(e as Error).message}`, 30_000);
    }
  }
  return { signed, resend };
}

/**
 * Signs the next transaction at the row's nonce: 'signed' (new bytes to save, then broadcast),
 * 'resend' (no better bid possible: send the same bytes again) or 'skip'.
 */
async function signOne(ctx: EvmContext, w: Work): Promise<'signed' | 'resend' | 'skip'> {
  if (!ctx.signer) {
    wait(w, `the relayer's signer "${ctx.relayer.signerId}" is not available`, 30_000);
    return 'skip';
  }
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
      w.patch.gasLimit = gasLimit;
    } catch (e) {
      if (!(e instanceof RpcError)) throw e;
      failBeforeSending(w, `gas estimation failed: ${revertReason(e)}`);
      return signOne(ctx, w);
    }
  }

  const fresh = noop ? capFees(await marketFees(ctx.rpc, ctx.eip1559, 'fast'), ctx.policy.gas_price_cap) : await requestFees(ctx, readPayload(w.tx.request));
  const prev = atNonce(w)[0];
  const fees = planFees(w, prev && { kind: prev.kind, version: prev.version, fees: feesFromJson(prev.fees) }, fresh, (p, f) => replacementFees(ctx, p, f));
  if (fees === 'resend') return 'resend';

  const base = { chainId: ctx.chainId, nonce: Number(nonceOf(w)), gas: gasLimit };
  const body = noop
    ? { ...base, to: ctx.relayer.address as Address, value: 0n }
    : { ...base, to: (w.tx.to ?? undefined) as Address | undefined, value: BigInt(w.tx.value), data: (w.tx.data ?? undefined) as Hex | undefined };
  const unsigned = (
    'gasPrice' in fees ? { ...body, type: 'legacy', gasPrice: fees.gasPrice } : { ...body, type: 'eip1559', ...fees }
  ) as TransactionSerializable;
  const raw = await ctx.signer.account.signTransaction(unsigned);
  const sig = noop ? undefined : parseTransaction(raw);
  recordSigning(w, {
    raw,
    hash: keccak256(raw),
    gasLimit,
    fees,
    feesJson: feesToJson(fees),
    signature: sig && { r: sig.r!, s: sig.s!, v: Number(sig.yParity ?? sig.v) },
    now: new Date(),
  });
  return 'signed';
}

// ---------------------------------------------------------------------------------------------
// Broadcasting

async function broadcastAll(rt: Runtime, ctx: EvmContext, works: Work[], log: Runtime['log']): Promise<Work[]> {
  const live = works.filter((w) => !w.lost && w.st.raw).sort((a, b) => (nonceOf(a) < nonceOf(b) ? -1 : 1));
  if (live.length === 0) return [];
  let answers: { ok: boolean; error?: unknown }[];
  try {
    answers = await ctx.rpc.batch(live.map((w) => ({ method: 'eth_sendRawTransaction', params: [w.st.raw] })));
  } catch (e) {
    crashAt(rt, live, 'broadcast');
    for (const w of live) onBroadcast(ctx, w, 'unreachable', e as Error, new Date());
    return [];
  }
  crashAt(rt, live, 'broadcast');
  const accepted: Work[] = [];
  let gap = false;
  const now = new Date();
  live.forEach((w, i) => {
    const a = answers[i];
    const verdict = a.ok ? 'ok' : classifyBroadcastError(a.error);
    if (onBroadcast(ctx, w, verdict, a.error as Error | undefined, now)) accepted.push(w);
    if (verdict === 'nonce-gap') gap = true;
    if (verdict === 'invalid') log.warn({ transactionId: w.tx.id, error: (a.error as Error).message }, 'broadcast refused');
  });
  if (gap) await fillGapsNow(rt, ctx, log);
  return accepted;
}

// When each relayer's nonces were last reconciled here, so a stuck relayer is not reconciled on
// every step; any instance may do it, at most this often each.
const RECONCILED = slot('EVM nonce reconciliations', () => new Map<string, number>());

async function fillGapsNow(rt: Runtime, ctx: EvmContext, log: Runtime['log']) {
  const reconciled = rt.state(RECONCILED);
  if (Date.now() - (reconciled.get(ctx.relayer.id) ?? 0) < 10_000) return;
  reconciled.set(ctx.relayer.id, Date.now());
  await reconcileNonces(rt, ctx).catch((err) => log.warn({ err }, 'nonce reconciliation failed'));
}
