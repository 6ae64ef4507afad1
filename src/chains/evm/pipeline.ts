import { keccak256, parseTransaction, type Address, type Hex, type TransactionSerializable } from 'viem';
import type { Relayer, Transaction, TransactionStatus } from '../../generated/prisma/client.js';
import { FINAL_STATUSES } from '../../modules/transactions/service.js';
import { release } from '../../db/lease.js';
import { saveTransactions, type TransactionPatch } from '../../modules/transactions/store.js';
import type { Runtime } from '../../runtime.js';
import { readPayload, TRANSFER_GAS } from './accept.js';
import { evmContext, pollMs, resubmitMs, type EvmContext } from './context.js';
import { watchMined } from './watch.js';
import { classifyBroadcastError, revertReason, type BroadcastVerdict } from './errors.js';
import { estimateGasWithMargin, type FeeParams } from './fees.js';
import { chainNonces, latestNonce, reassignNonce, reconcileNonces } from './nonces.js';
import { capFees, feesFromJson, feesToJson, marketFees, maxPricePerGas, replacementFees, requestFees } from './pricing.js';
import { RpcError, RpcUnavailableError } from './rpc.js';
import { lastBroadcast, payloadSigned, readState, type Broadcast, type EvmState, type NoopOutcome } from './state.js';

/** One transaction being worked on in this step. */
interface Work {
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

type Receipt = {
  transactionHash: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  status: Hex;
  gasUsed: Hex;
  effectiveGasPrice?: Hex;
};

const isFinal = (s: TransactionStatus) => FINAL_STATUSES.includes(s);
const nonceOf = (w: Work) => w.tx.nonce!;
const nowIso = () => new Date().toISOString();

function setStatus(w: Work, status: TransactionStatus) {
  if (w.status === status) return;
  if (w.status !== w.tx.status) w.via.push(w.status);
  w.status = status;
}

/** Ends the transaction's story for users (its nonce may still need consuming). */
function finish(w: Work, status: TransactionStatus, reason: string | null) {
  setStatus(w, status);
  w.reason = reason;
}

/** Advances a batch of leased EVM transactions: one group per relayer, a few RPC calls and two writes each. */
export async function processBatch(rt: Runtime, txs: Transaction[]): Promise<void> {
  const byRelayer = new Map<string, Transaction[]>();
  for (const tx of txs) byRelayer.set(tx.relayerId, [...(byRelayer.get(tx.relayerId) ?? []), tx]);
  const relayers = await rt.prisma.relayer.findMany({ where: { id: { in: [...byRelayer.keys()] } } });
  await Promise.all(relayers.map((r) => processRelayer(rt, r, byRelayer.get(r.id)!, rt.instanceId)));
}

export async function processRelayer(rt: Runtime, relayer: Relayer, txs: Transaction[], owner: string): Promise<void> {
  const works: Work[] = txs.map((tx) => ({ tx, st: readState(tx), status: tx.status, via: [], patch: {}, dueInMs: 0 }));
  let ctx: EvmContext;
  try {
    ctx = evmContext(rt, relayer);
  } catch (e) {
    for (const w of works) wait(w, `cannot work on this transaction: ${(e as Error).message}`, 30_000);
    await persist(rt, owner, works, true);
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
    await resolve(rt, ctx, owner, active().filter((w) => w.tx.nonce !== null), latest, log);

    // 2. Decide what each needs, and sign.
    const toSign: Work[] = [];
    const toBroadcast: Work[] = [];
    let stuckAbove = false;
    const now = Date.now();
    for (const w of active()) {
      if (w.tx.nonce === null || w.st.phase === 'mined') continue;
      expireIfDue(w, now);
      if (w.st.phase === 'new') toSign.push(w);
      else if (w.st.phase === 'signed') toBroadcast.push(w);
      else if (w.st.phase === 'broadcast') {
        // The clock runs from the later of the last broadcast and the last time the account's
        // nonce moved: while the chain keeps mining the transactions before this one, it is in
        // line, not stuck, and a higher bid would only churn the node's pool.
        const since = now - Math.max(Date.parse(w.st.acceptedAt ?? w.tx.updatedAt.toISOString()), line.since);
        if (since >= resubmitMs(ctx)) {
          toSign.push(w);
          w.behind = nonceOf(w) > latest;
          if (w.behind) stuckAbove = true;
        } else w.dueInMs = resubmitMs(ctx) - since;
      }
    }
    // Stuck behind a lower nonce: make sure every nonce below is held by a transaction.
    if (stuckAbove) await fillGapsNow(rt, ctx, log);
    const { signed, resend } = await signAll(ctx, toSign, log);
    await persist(rt, owner, signed, false);
    toBroadcast.push(...resend, ...signed.filter((w) => !w.lost && w.st.phase === 'signed'));

    // 3. Broadcast, in nonce order, then look again at once: a fast chain may have mined them already.
    const accepted = await broadcastAll(rt, ctx, toBroadcast, log);
    if (accepted.length > 0) {
      const again = await latestNonce(ctx).catch(() => null);
      if (again !== null) await resolve(rt, ctx, owner, accepted.filter((w) => !w.lost), again, log);
    }
  } catch (e) {
    if (!(e instanceof RpcUnavailableError)) throw e;
    for (const w of works) if (!w.lost && w.st.phase !== 'done') unreachable(w, e);
  }
  await persist(rt, owner, works, true);
  const out = works.filter((w) => !w.lost && w.st.phase === 'broadcast').map(nonceOf);
  if (out.length > 0 && latest !== undefined) watchMined(rt, ctx, out.reduce((a, b) => (a > b ? a : b)), latest);
  const soonest = Math.min(...works.filter((w) => !w.lost && w.dueInMs !== null).map((w) => w.dueInMs!));
  if (Number.isFinite(soonest) && soonest < 250) setTimeout(() => rt.wake(), soonest).unref();
}

// When each relayer's mined nonce last moved, as seen here: only a timing hint for resubmission
// (a restart or another instance just starts a new clock), so it lives in memory.
const lines = new Map<string, { nonce: bigint; since: number }>();

function lineOf(rt: Runtime, relayerId: string, latest: bigint, now: number) {
  const key = `${rt.instanceId}:${relayerId}`;
  const line = lines.get(key);
  if (line && line.nonce === latest) return line;
  const fresh = { nonce: latest, since: now };
  lines.set(key, fresh);
  return fresh;
}

function wait(w: Work, why: string, ms: number) {
  w.st.waiting = why;
  w.dueInMs = ms;
}

function unreachable(w: Work, e: Error) {
  w.patch.attempts = (w.patch.attempts ?? w.tx.attempts) + 1;
  wait(w, `the network cannot be reached; retrying (${e.message.slice(0, 200)})`, Math.min(30_000, 1_000 * 2 ** Math.min(5, w.patch.attempts)));
}

/** Writes every transaction of the step (with `endStep`, giving their leases back); only rows whose lease still holds are written. */
async function persist(rt: Runtime, owner: string, works: Work[], endStep: boolean) {
  let live = works.filter((w) => !w.lost);
  if (live.length === 0) return;
  const dueAt = (w: Work) => (w.st.phase === 'done' || w.dueInMs === null ? null : new Date(Date.now() + w.dueInMs));
  if (endStep) {
    // A look that changed nothing (not mined yet) only needs the row back, due again.
    const unchanged = live.filter((w) => w.status === w.tx.status && w.reason === undefined && Object.keys(w.patch).length === 0 && reasonOf(w) === w.tx.statusReason && canonical(w.st) === canonical(w.tx.chainState));
    await release(rt.prisma, 'transactions', owner, unchanged.map((w) => ({ id: w.tx.id, leaseUntil: w.tx.leaseUntil, dueAt: dueAt(w) })));
    live = live.filter((w) => !unchanged.includes(w));
    if (live.length === 0) return;
  }
  const changes = live.map((w) => {
    const patch: TransactionPatch = { ...w.patch, status: w.status, statusReason: reasonOf(w), chainState: w.st as never };
    if (endStep) patch.dueAt = dueAt(w);
    return { before: w.tx, patch, via: w.via, release: endStep };
  });
  const saved = await saveTransactions(rt, owner, changes);
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

/** JSON with keys sorted at every level and undefined left out (jsonb does not keep key order). */
function canonical(v: unknown): string {
  const sort = (x: unknown): unknown =>
    Array.isArray(x) ? x.map(sort) : x && typeof x === 'object' ? Object.fromEntries(Object.keys(x).sort().flatMap((k) => ((x as Record<string, unknown>)[k] === undefined ? [] : [[k, sort((x as Record<string, unknown>)[k])]]))) : x;
  return JSON.stringify(sort(v));
}

/** The reason users see: one this step decided, the final one kept, else why it waits or a note. */
const reasonOf = (w: Work) => (w.reason !== undefined ? w.reason : isFinal(w.status) ? w.tx.statusReason : (w.st.waiting ?? w.st.note ?? null));

// ---------------------------------------------------------------------------------------------
// Receipts

/** Broadcasts made at the row's current nonce, newest first. */
const candidates = (w: Work) => w.st.broadcasts.filter((b) => b.nonce === nonceOf(w).toString()).reverse();

async function resolve(rt: Runtime, ctx: EvmContext, owner: string, works: Work[], latest: bigint, log: Runtime['log']) {
  const look = works.filter((w) => !w.lost && w.st.phase !== 'done' && (w.st.phase === 'mined' || nonceOf(w) < latest));
  if (look.length === 0) return;
  const calls = look.flatMap((w) => candidates(w).map((b) => ({ method: 'eth_getTransactionReceipt', params: [b.hash] })));
  const [head, ...answers] = await ctx.rpc.batch<unknown>([{ method: 'eth_blockNumber' }, ...calls]);
  if (!head.ok) throw head.error;
  const headBlock = BigInt(head.result as Hex);
  let i = 0;
  const reverted: { w: Work; b: Broadcast; r: Receipt }[] = [];
  for (const w of look) {
    let receipt: Receipt | null = null;
    for (const _ of candidates(w)) {
      const a = answers[i++];
      if (!receipt && a.ok && a.result) receipt = a.result as Receipt;
    }
    if (receipt) {
      const b = w.st.broadcasts.find((x) => x.hash === receipt!.transactionHash)!;
      if (onReceipt(ctx, w, b, receipt, headBlock) === 'reverted') reverted.push({ w, b, r: receipt });
    } else if (w.st.phase === 'mined') {
      // The block that held it is gone (a reorganisation): it is back in the pool, or must be sent again.
      w.st.phase = w.st.raw ? 'signed' : 'new';
      w.st.mined = undefined;
      setStatus(w, 'submitted');
      w.st.note = 'the block that held this transaction was reorganised away; sending it again';
      w.dueInMs = 0;
    } else {
      await orphaned(rt, ctx, owner, w, log);
    }
  }
  if (reverted.length) await explainReverts(ctx, reverted);
}

function onReceipt(ctx: EvmContext, w: Work, b: Broadcast, r: Receipt, head: bigint): 'mined' | 'reverted' | 'noop' {
  const success = BigInt(r.status) === 1n;
  const block = BigInt(r.blockNumber);
  w.st.mined = { hash: r.transactionHash, blockNumber: block.toString(), blockHash: r.blockHash, success };
  w.st.phase = 'mined';
  w.st.orphanSince = undefined;
  w.st.waiting = undefined;
  w.st.public = {
    block_number: Number(block),
    gas_used: BigInt(r.gasUsed).toString(),
    ...(r.effectiveGasPrice ? { effective_gas_price: BigInt(r.effectiveGasPrice).toString() } : {}),
  };
  w.patch.hash = r.transactionHash;
  Object.assign(w.patch, feeColumns(feesFromJson(b.fees)));

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
  if (head - block + 1n >= BigInt(ctx.requiredConfirmations)) {
    if (!isFinal(w.status)) {
      setStatus(w, 'confirmed');
      w.patch.confirmedAt = new Date();
    }
    w.st.phase = 'done';
    w.dueInMs = null;
  } else {
    w.dueInMs = pollMs(ctx);
  }
  return 'mined';
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
      why = a && !a.ok ? revertReason(a.error) : 'execution reverted (no reason given)';
    }
    w.reason = `${why}; mined in block ${BigInt(r.blockNumber)}`;
  });
}

/** The chain passed our nonce and no broadcast of ours is mined: someone else used it. */
async function orphaned(rt: Runtime, ctx: EvmContext, owner: string, w: Work, log: Runtime['log']) {
  const now = Date.now();
  // Nodes behind a load balancer can disagree for a moment: when one of our broadcasts might be the
  // one mined, act only on a lasting observation. With nothing of ours at this nonce, act at once.
  const settle = candidates(w).length === 0 ? 0 : Math.max(3_000, 2 * ctx.blocktimeMs);
  if (!w.st.orphanSince && settle > 0) {
    w.st.orphanSince = nowIso();
    w.dueInMs = Math.min(settle, Math.max(pollMs(ctx), 1_000));
    return;
  }
  if (settle > 0 && now - Date.parse(w.st.orphanSince!) < settle) {
    w.dueInMs = Math.min(settle, Math.max(pollMs(ctx), 1_000));
    return;
  }
  const n = nonceOf(w);
  const used = `nonce ${n} was used by another transaction from this account`;
  if (isFinal(w.status) || w.st.goal === 'noop') {
    // Nothing of ours can be mined there: the nonce is consumed, which is all a NOOP was for.
    if (!isFinal(w.status)) finish(w, w.st.outcome?.status ?? 'canceled', `${w.st.outcome?.reason ?? 'canceled'}; ${used}`);
    w.st.phase = 'done';
    w.dueInMs = null;
    return;
  }
  const { pending } = await chainNonces(ctx);
  const next = await reassignNonce(rt, ctx, w.tx, owner, pending);
  if (next === null) {
    w.lost = true;
    return;
  }
  log.warn({ transactionId: w.tx.id, from: n.toString(), to: next.toString() }, 'nonce used outside the relayer: transaction moved to a new nonce');
  w.tx = { ...w.tx, nonce: next };
  w.patch.nonce = next;
  w.st.phase = 'new';
  w.st.raw = undefined;
  w.st.payloadOut = false;
  w.st.orphanSince = undefined;
  w.st.acceptedAt = undefined;
  w.st.note = `${used}; sent again at nonce ${next}`;
  w.dueInMs = 0;
}

// ---------------------------------------------------------------------------------------------
// Expiry, signing

function expireIfDue(w: Work, now: number) {
  if (w.st.goal !== 'payload' || isFinal(w.status) || !w.tx.validUntil || w.tx.validUntil.getTime() > now) return;
  const when = w.tx.validUntil.toISOString();
  if (!payloadSigned(w.st)) {
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

const feeColumns = (f: FeeParams): TransactionPatch =>
  'gasPrice' in f
    ? { gasPrice: f.gasPrice.toString(), maxFeePerGas: null, maxPriorityFeePerGas: null }
    : { gasPrice: null, maxFeePerGas: f.maxFeePerGas.toString(), maxPriorityFeePerGas: f.maxPriorityFeePerGas.toString() };

/** Whether fees `a` bid less than `b` on either the price cap or the tip. */
const below = (a: FeeParams, b: FeeParams) =>
  maxPricePerGas(a) < maxPricePerGas(b) || ('gasPrice' in a || 'gasPrice' in b ? false : a.maxPriorityFeePerGas < b.maxPriorityFeePerGas);

const sameFees = (a: FeeParams, b: FeeParams) => maxPricePerGas(a) === maxPricePerGas(b) && ('gasPrice' in a ? true : a.maxPriorityFeePerGas === (b as typeof a).maxPriorityFeePerGas);

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
 * Signs the next transaction at the row's nonce: 'signed' (new bytes to persist, then broadcast),
 * 'resend' (no better bid possible: send the same bytes again) or 'skip'.
 */
async function signOne(ctx: EvmContext, w: Work): Promise<'signed' | 'resend' | 'skip'> {
  if (!ctx.signer) {
    wait(w, `the relayer's signer "${ctx.relayer.signerId}" is not available`, 30_000);
    return 'skip';
  }
  const resubmission = w.st.phase === 'broadcast' || w.st.phase === 'signed';
  const noop = w.st.goal === 'noop';
  const payload = readPayload(w.tx.request);
  let gasLimit = noop ? TRANSFER_GAS : w.tx.gasLimit;
  if (gasLimit === null) {
    try {
      gasLimit = await estimateGasWithMargin(ctx.rpc, { from: w.tx.from as Address, to: (w.tx.to ?? undefined) as Address | undefined, data: (w.tx.data ?? undefined) as Hex | undefined, value: BigInt(w.tx.value) });
      w.patch.gasLimit = gasLimit;
    } catch (e) {
      if (!(e instanceof RpcError)) throw e;
      failBeforeSending(w, `gas estimation failed: ${revertReason(e)}`);
      return signOne(ctx, w);
    }
  }

  const fresh = noop ? capFees(await marketFees(ctx.rpc, ctx.eip1559, 'fast'), ctx.policy.gas_price_cap) : await requestFees(ctx, payload);
  const prev = candidates(w)[0];
  let fees: FeeParams = fresh;
  if (prev) {
    const before = feesFromJson(prev.fees);
    const same = prev.kind === (noop ? 'noop' : 'payload') && (prev.version ?? 0) === (noop ? 0 : w.st.version) && !!w.st.raw;
    if (same && resubmission && w.behind && !below(before, fresh)) {
      // In line behind a lower nonce and still paying today's price: a higher bid would not move
      // it; send the same bytes again in case a node dropped them.
      w.st.phase = 'signed';
      return 'resend';
    }
    const r = replacementFees(ctx, before, fresh);
    fees = 'gasPrice' in r ? { gasPrice: r.gasPrice } : { maxFeePerGas: r.maxFeePerGas, maxPriorityFeePerGas: r.maxPriorityFeePerGas };
    if (same && sameFees(fees, before)) {
      // The cap leaves no room for a higher bid: send the same bytes again (in case a node dropped them).
      w.st.phase = 'signed';
      w.st.waiting = "fees are at the relayer's gas_price_cap: waiting for the network to take it";
      return 'resend';
    }
  }

  const nonce = Number(nonceOf(w));
  const base = { chainId: ctx.chainId, nonce, gas: gasLimit };
  const body = noop
    ? { ...base, to: ctx.relayer.address as Address, value: 0n }
    : { ...base, to: (w.tx.to ?? undefined) as Address | undefined, value: BigInt(w.tx.value), data: (w.tx.data ?? undefined) as Hex | undefined };
  const unsigned = ('gasPrice' in fees ? { ...body, type: 'legacy', gasPrice: fees.gasPrice } : { ...body, type: 'eip1559', ...fees }) as TransactionSerializable;
  const raw = await ctx.signer.account.signTransaction(unsigned);
  const hash = keccak256(raw);
  const b: Broadcast = {
    hash,
    kind: noop ? 'noop' : 'payload',
    ...(noop ? {} : { version: w.st.version }),
    nonce: nonce.toString(),
    gasLimit: gasLimit.toString(),
    fees: feesToJson(fees),
    signedAt: nowIso(),
  };
  w.st.broadcasts.push(b);
  w.st.raw = raw;
  w.st.phase = 'signed';
  w.st.waiting = undefined;
  w.patch.hash = hash;
  w.patch.hashes = [...(w.patch.hashes ?? w.tx.hashes), hash];
  Object.assign(w.patch, feeColumns(fees));
  if (!noop) {
    const sig = parseTransaction(raw);
    w.patch.signature = { r: sig.r, s: sig.s, v: Number(sig.yParity ?? sig.v), sig: `${sig.r}${sig.s!.slice(2)}${(Number(sig.yParity ?? sig.v) + 27).toString(16)}` };
    w.patch.gasLimit = gasLimit;
  }
  if (w.status === 'pending') setStatus(w, 'sent');
  if (resubmission && !noop && (!w.st.note || w.st.note.startsWith(RESUBMITTED))) {
    const count = w.st.broadcasts.filter((x) => x.kind === 'payload' && x.nonce === b.nonce).length - 1;
    w.st.note = `${RESUBMITTED} with higher fees (${count} time${count === 1 ? '' : 's'})`;
  }
  return 'signed';
}

const RESUBMITTED = 'not mined in time: resubmitted';

/** The payload can never be sent: the transaction fails now, and a NOOP takes its nonce. */
function failBeforeSending(w: Work, reason: string) {
  if (!isFinal(w.status)) finish(w, 'failed', reason);
  w.st.goal = 'noop';
  w.st.outcome = { status: 'failed', reason };
  w.st.phase = 'new';
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
    for (const w of live) unreachable(w, e as Error);
    return [];
  }
  const accepted: Work[] = [];
  let gap = false;
  live.forEach((w, i) => {
    const a = answers[i];
    const verdict: BroadcastVerdict | 'ok' = a.ok ? 'ok' : classifyBroadcastError(a.error);
    if (onBroadcast(ctx, w, verdict, a.error as Error | undefined)) accepted.push(w);
    if (verdict === 'nonce-gap') gap = true;
    if (verdict === 'invalid') log.warn({ transactionId: w.tx.id, error: (a.error as Error).message }, 'broadcast refused');
  });
  if (gap) await fillGapsNow(rt, ctx, log);
  return accepted;
}

// A cache of when each relayer's nonces were last reconciled here, so a stuck relayer is not
// reconciled on every step; any instance may do it, at most this often each.
const lastReconciled = new Map<string, number>();

async function fillGapsNow(rt: Runtime, ctx: EvmContext, log: Runtime['log']) {
  const last = lastReconciled.get(ctx.relayer.id) ?? 0;
  if (Date.now() - last < 10_000) return;
  lastReconciled.set(ctx.relayer.id, Date.now());
  await reconcileNonces(rt, ctx).catch((err) => log.warn({ err }, 'nonce reconciliation failed'));
}

function onBroadcast(ctx: EvmContext, w: Work, verdict: BroadcastVerdict | 'ok', error: Error | undefined): boolean {
  const last = lastBroadcast(w.st)!;
  switch (verdict) {
    case 'ok':
    case 'known':
      w.st.phase = 'broadcast';
      w.st.acceptedAt = nowIso();
      w.st.waiting = undefined;
      w.patch.attempts = 0;
      if (last.kind === 'payload') {
        w.st.payloadOut = true;
        if (!w.tx.sentAt && !w.patch.sentAt) w.patch.sentAt = new Date();
        if (w.status === 'pending' || w.status === 'sent') setStatus(w, 'submitted');
      }
      w.dueInMs = resubmitMs(ctx); // sooner when the watch sees it mined
      return true;
    case 'nonce-used':
      // Receipts decide: one of ours was mined, or someone else's.
      w.st.phase = 'broadcast';
      w.st.acceptedAt = w.st.acceptedAt ?? nowIso();
      w.dueInMs = pollMs(ctx);
      return true;
    case 'nonce-gap':
      wait(w, 'waiting for lower nonces of this account to be mined', ctx.blocktimeMs);
      return false;
    case 'underpriced':
      // Another transaction at this nonce bids more: outbid it at the next resubmission.
      w.st.phase = 'broadcast';
      w.st.acceptedAt = nowIso();
      w.st.waiting = 'another transaction with this nonce pays more; bidding higher at the next resubmission';
      w.dueInMs = pollMs(ctx);
      return false;
    case 'fee-too-low':
      w.st.phase = 'new';
      wait(w, "fees below the network's current base fee; pricing again", Math.min(resubmitMs(ctx), 1_000));
      return false;
    case 'no-funds':
      wait(w, "the relayer's balance does not cover value + gas; waiting for funds", resubmitMs(ctx));
      return false;
    case 'unreachable':
      unreachable(w, error ?? new Error('no answer'));
      return false;
    case 'invalid': {
      const why = `rejected by the network: ${error?.message ?? 'invalid transaction'}`;
      if (last.kind === 'payload' && !w.st.payloadOut) {
        failBeforeSending(w, why);
        w.dueInMs = 0;
      } else {
        // An earlier broadcast is out there and may still be mined: wait for it.
        w.st.phase = 'broadcast';
        w.st.acceptedAt = nowIso();
        wait(w, why, resubmitMs(ctx));
      }
      return false;
    }
  }
}

