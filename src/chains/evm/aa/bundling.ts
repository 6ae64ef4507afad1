// Bundling through the normal send path: a relayer's pending operations of one EntryPoint become
// one ordinary transaction of the relayer (to the EntryPoint, handleOps), written in the database
// transaction that marks them submitted; the pipeline sends it as any other. Once it is mined (or
// ended without being mined), its operations are settled from the chain: their UserOperationEvent,
// or the EntryPoint's nonce of their sender.
import { encodeFunctionData, getAddress, type Address, type Hex, type Log } from 'viem';
import type { Relayer, Transaction } from '../../../generated/prisma/client.js';
import { DEFAULT_VALIDITY_MS } from '../../../core/family-spec.js';
import type { Runtime } from '../../../core/runtime.js';
import { slot } from '../../../core/state.js';
import { insertTogether } from '../../../core/transactions/intake.js';
import { startLoop } from '../../../lib/loop.js';
import type { EvmPayload } from '../accept.js';
import { evmContext, type EvmContext } from '../context.js';
import { readEvmPolicy } from '../request.js';
import { authorizationToJson } from '../unsigned.js';
import { outcomesOf, prepareBundle, type BundleItem } from './bundle.js';
import { changeOps, publishOps, type OpChange } from './lifecycle.js';
import { UserOpError } from './errors.js';
import { chainTime, entryPointAbi } from './simulate.js';
import { pendingUserOps, type UserOpReceipt, type UserOpRow } from './store.js';
import { ENTRY_POINTS, readUserOp, versionOf, type EntryPointVersion } from './userop.js';

/** Most operations in one handleOps. */
export const MAX_BUNDLE = 32;
/** After a wake, how long new operations may gather before a bundle is made. */
const GATHER_MS = 30;
/** Most bundles of one relayer and EntryPoint made in one pass (the other relayers wait for it). */
const BUNDLES_A_PASS = 4;
const POLL_MS = 250;
/**
 * The pass after one that found bundles in flight: a mined bundle's operations are recorded
 * included (and their receipts answered) this soon after the pipeline records it mined.
 */
const SETTLE_POLL_MS = 50;

const BUNDLER = slot('evm bundler', (): { wake?: () => void; inFlight?: boolean } => ({}));

/** Tells this instance's bundling loop (when it runs one) that an operation was accepted. */
export const wakeBundler = (rt: Runtime) => rt.state(BUNDLER).wake?.();

const ENDED = ['failed', 'expired', 'canceled'];
/** Bundling's drops: of operations still pending. */
const PENDING = { status: 'pending' } as const;

type Receipt = { status: Hex; transactionHash: Hex; blockNumber: Hex; blockHash: Hex; logs: Log[] };

/**
 * How long before an operation's validity ends its bundle transaction expires: the pipeline then
 * replaces it (if sent) rather than have it mined late, reverting on chain at the relayer's cost.
 */
export const BUNDLE_MARGIN_MS = 20_000;

/** Whether the operation's validity (`validUntil`, null: no end) ends too soon to go in a bundle now. */
export const windowClosed = (validUntil: Date | null, now: number): boolean => !!validUntil && validUntil.getTime() - BUNDLE_MARGIN_MS <= now;

/**
 * The bundle transaction's valid_until (by this machine's clock, `now`): the service's default, or
 * earlier, before the first of its operations' windows ends (by the chain's clock, `chainAhead` ms
 * ahead of this machine's).
 */
export function bundleValidUntil(validUntils: (Date | null)[], now: number, chainAhead = 0): Date {
  let until = now + DEFAULT_VALIDITY_MS;
  for (const u of validUntils) if (u) until = Math.min(until, u.getTime() - chainAhead - BUNDLE_MARGIN_MS);
  return new Date(until);
}

/**
 * How far the chain's clock is ahead of this machine's, in ms (chainTime: never behind by more
 * than the second it is counted in): windows end by the EntryPoint's `block.timestamp`. Read once a
 * pass, when needed.
 */
type ChainAhead = () => Promise<number>;

function chainAheadOf(ctx: EvmContext): ChainAhead {
  let ahead: Promise<number> | undefined;
  return () => (ahead ??= chainTime(ctx.rpc).then((s) => s * 1000 - Date.now()));
}

const closedReason = (validUntil: Date) =>
  `its validity window ends at ${validUntil.toISOString()}, too soon to be included (bundles need ${BUNDLE_MARGIN_MS / 1000} s before it)`;

/** What becomes of a submitted operation, from its sender's EntryPoint nonce: used by someone else, or free again. */
export function afterMiss(opNonce: bigint, chainNonce: bigint, why: string): { to: 'failed'; reason: string } | { to: 'pending' } {
  // The EntryPoint's nonce of a key is (key << 64 | next sequence): the operation's is used once the next is past it.
  return chainNonce > opNonce ? { to: 'failed', reason: `${why}; its nonce was used by another transaction` } : { to: 'pending' };
}

async function entryPointNonce(ctx: EvmContext, version: EntryPointVersion, sender: string, nonce: bigint): Promise<bigint> {
  const data = encodeFunctionData({ abi: entryPointAbi, functionName: 'getNonce', args: [sender as Address, nonce >> 64n] });
  return BigInt(await ctx.rpc.request<Hex>('eth_call', [{ to: ENTRY_POINTS[version], data }, 'latest']));
}

/** What settling needs of a bundle transaction (not its calldata: a bundle's is tens of kilobytes). */
type BundleTx = Pick<Transaction, 'status' | 'hash' | 'hashes'>;

async function receiptOf(ctx: EvmContext, tx: BundleTx): Promise<Receipt | null> {
  for (const hash of [tx.hash, ...[...tx.hashes].reverse()].filter((h, i, a): h is string => !!h && a.indexOf(h) === i)) {
    const r = await ctx.rpc.request<Receipt | null>('eth_getTransactionReceipt', [hash]);
    if (r) return r;
  }
  return null;
}

/** Settles the relayer's submitted operations whose bundle transaction is mined or ended. */
async function settleSubmitted(rt: Runtime, relayer: Relayer, ctx: EvmContext, chainAhead: ChainAhead): Promise<number> {
  const subs = await rt.db.prisma.userOperation.findMany({
    where: { relayerId: relayer.id, status: 'submitted' },
    include: { transaction: { select: { status: true, hash: true, hashes: true } } },
  });
  const byTx = new Map<string, { tx: BundleTx | null; ops: UserOpRow[] }>();
  for (const { transaction, ...op } of subs) {
    const key = op.transactionId ?? `none:${op.id}`;
    const group = byTx.get(key) ?? { tx: transaction, ops: [] };
    group.ops.push(op);
    byTx.set(key, group);
  }
  const changes: OpChange[] = [];
  for (const { tx, ops } of byTx.values()) {
    const mined = tx && (tx.status === 'mined' || tx.status === 'confirmed');
    const ended = !tx || ENDED.includes(tx.status);
    if (!mined && !ended) continue;
    const receipt = tx ? await receiptOf(ctx, tx) : null;
    if (mined && !receipt) continue; // the pipeline saw one: it will be back (or the row will move)
    const success = receipt && BigInt(receipt.status) === 1n;
    const version = versionOf(ops[0]!.entryPoint)!;
    const outcomes = success ? outcomesOf(receipt.logs, version) : new Map();
    for (const op of ops) {
      const o = outcomes.get(op.hash);
      if (o && receipt) {
        const r: UserOpReceipt = {
          success: o.success,
          actualGasCost: o.actualGasCost.toString(),
          actualGasUsed: o.actualGasUsed.toString(),
          transactionHash: receipt.transactionHash,
          blockNumber: BigInt(receipt.blockNumber).toString(),
          blockHash: receipt.blockHash,
          ...(o.revertReason ? { reason: o.revertReason } : {}),
        };
        changes.push({ id: op.id, to: 'included', receipt: r });
        continue;
      }
      const why = !tx
        ? 'its bundle transaction is gone'
        : receipt
          ? `its bundle ${receipt.transactionHash} ${success ? 'did not include it' : 'reverted'}`
          : `its bundle transaction ended ${tx.status} without being mined`;
      const next = afterMiss(BigInt(op.nonce), await entryPointNonce(ctx, version, op.sender, BigInt(op.nonce)), why);
      const only = { status: 'submitted' as const, transactionId: op.transactionId };
      // Free again but its window closing: it could not be bundled again in time.
      if (next.to === 'pending' && op.validUntil && windowClosed(op.validUntil, Date.now() + (await chainAhead())))
        changes.push({ id: op.id, to: 'failed', reason: `${why}; ${closedReason(op.validUntil!)}`, only });
      else changes.push(next.to === 'failed' ? { id: op.id, to: 'failed', reason: next.reason, only } : { id: op.id, to: 'pending', only });
    }
  }
  const rows = await changeOps(rt, relayer, changes);
  for (const row of rows) {
    const outcome = row.status === 'included' ? ((row.receipt as UserOpReceipt).success ? 'included' : 'reverted') : row.status === 'failed' ? 'failed' : null;
    if (outcome) rt.metrics.userOperations.inc({ relayer_id: relayer.id, outcome });
  }
  if (rows.some((r) => r.status === 'pending')) wakeBundler(rt);
  return rows.length;
}

/**
 * prepareBundle, and when the EntryPoint reverts without naming an operation (no FailedOp), each
 * operation on its own to find those it reverts with: they fail with that revert, the rest go.
 * Trouble reaching the node is thrown (tried again next pass).
 */
async function prepare(ctx: EvmContext, version: EntryPointVersion, items: BundleItem[], from: Address) {
  try {
    return { bundle: await prepareBundle(ctx.rpc, version, items, from, from), refused: [] as OpChange[] };
  } catch (e) {
    if (!(e instanceof UserOpError)) throw e;
    const good: BundleItem[] = [];
    const refused: OpChange[] = [];
    for (const item of items) {
      try {
        await prepareBundle(ctx.rpc, version, [item], from, from);
        good.push(item);
      } catch (alone) {
        if (!(alone instanceof UserOpError)) throw alone;
        refused.push({ id: item.id, to: 'failed', reason: alone.message, only: PENDING });
      }
    }
    return { bundle: await prepareBundle(ctx.rpc, version, good, from, from), refused };
  }
}

const MARK_SUBMITTED = `UPDATE user_operations SET status = 'submitted', transaction_id = $2, updated_at = now()
  WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb)) AND status = 'pending' RETURNING id`;

/** Bundles the relayer's pending operations of `entryPoint` (those of senders with none in flight): one transaction, or none. */
async function bundlePending(rt: Runtime, relayer: Relayer, ctx: EvmContext, entryPoint: string, chainAhead: ChainAhead): Promise<boolean> {
  const version = versionOf(entryPoint);
  if (!version) return false;
  const inFlight = new Set(
    (
      await rt.db.prisma.userOperation.findMany({
        where: { relayerId: relayer.id, entryPoint, status: 'submitted' },
        select: { sender: true },
        distinct: ['sender'],
      })
    ).map((r) => r.sender),
  );
  const rows = (await pendingUserOps(rt.db, relayer.id, entryPoint, MAX_BUNDLE * 2)).filter((r) => !inFlight.has(r.sender));
  // One operation per sender in a bundle: a sender's next one waits for the first to land.
  const seen = new Set<string>();
  const take = rows.filter((r) => !seen.has(r.sender) && seen.add(r.sender)).slice(0, MAX_BUNDLE);
  if (take.length === 0) return false;
  const items: BundleItem[] = [];
  /** Not bundled: windows closing, operations unreadable as stored. */
  const skipped: OpChange[] = [];
  const validUntils = new Map<string, Date | null>();
  const ahead = take.some((r) => r.validUntil) ? await chainAhead() : 0;
  const now = Date.now() + ahead;
  for (const r of take) {
    if (windowClosed(r.validUntil, now)) {
      skipped.push({ id: r.id, to: 'failed', reason: closedReason(r.validUntil!), only: PENDING });
      continue;
    }
    validUntils.set(r.id, r.validUntil);
    try {
      items.push({ id: r.id, op: readUserOp([r.operation, entryPoint], 'send').op });
    } catch (e) {
      skipped.push({ id: r.id, to: 'failed', reason: `unreadable as stored: ${(e as Error).message}`, only: PENDING });
    }
  }
  const from = relayer.address as Address;
  const { bundle, refused } = await prepare(ctx, version, items, from);
  const dropped = await changeOps(rt, relayer, [
    ...skipped,
    ...refused,
    ...bundle.dropped.map((d): OpChange => ({ id: d.id, to: 'failed', reason: d.reason, only: PENDING })),
  ]);
  for (const _ of dropped) rt.metrics.userOperations.inc({ relayer_id: relayer.id, outcome: 'failed' });
  if (bundle.items.length === 0) return dropped.length > 0;
  const validUntil = bundleValidUntil(
    bundle.items.map((i) => validUntils.get(i.id) ?? null),
    Date.now(),
    ahead,
  );
  const payload: EvmPayload = {
    to: getAddress(entryPoint),
    value: '0',
    data: bundle.data,
    gasLimit: bundle.gasLimit.toString(),
    gasPrice: null,
    maxFeePerGas: null,
    maxPriorityFeePerGas: null,
    speed: 'fast',
    validUntil: validUntil.toISOString(),
    ...(bundle.authorizationList.length ? { authorizationList: bundle.authorizationList.map(authorizationToJson) } : {}),
  };
  const ids = bundle.items.map((i) => i.id);
  const written = await insertTogether(
    rt,
    {
      relayer,
      type: 'evm',
      accepted: {
        data: { from: relayer.address, to: getAddress(entryPoint), value: '0', data: bundle.data, gasLimit: bundle.gasLimit, speed: 'fast', validUntil },
        request: payload as never,
        takesNonce: true,
      },
      idempotencyKey: null,
      digest: null,
    },
    ([tx]) => ({ statement: { sql: MARK_SUBMITTED, params: [JSON.stringify(ids), tx!.id] }, rows: ids.length }),
  );
  if (typeof written !== 'object') {
    rt.log.debug({ relayerId: relayer.id, outcome: written }, 'bundle not written; trying again');
    return false;
  }
  rt.metrics.bundleSize.observe({ relayer_id: relayer.id }, ids.length);
  publishOps(rt, await rt.db.prisma.userOperation.findMany({ where: { id: { in: ids } } }));
  return true;
}

/** One pass over the relayers with operations in flight; whether it did anything. */
export async function bundleOnce(rt: Runtime): Promise<boolean> {
  const groups = await rt.db.read<{ relayer_id: string; entry_point: string; status: string }>(
    `SELECT DISTINCT relayer_id, entry_point, status::text AS status FROM user_operations WHERE status IN ('pending', 'submitted')`,
  );
  rt.state(BUNDLER).inFlight = groups.some((g) => g.status === 'submitted');
  const relayerIds = [...new Set(groups.map((g) => g.relayer_id))];
  let busy = false;
  for (const id of relayerIds) {
    const relayer = await rt.db.prisma.relayer.findUnique({ where: { id } });
    if (relayer?.networkType !== 'evm' || !readEvmPolicy(relayer.policies).user_operations) continue;
    let ctx: EvmContext;
    try {
      ctx = evmContext(rt, relayer);
    } catch {
      continue;
    }
    const chainAhead = chainAheadOf(ctx);
    try {
      if (groups.some((g) => g.relayer_id === id && g.status === 'submitted')) busy = (await settleSubmitted(rt, relayer, ctx, chainAhead)) > 0 || busy;
      if (relayer.paused || relayer.systemDisabled || !ctx.signer) continue;
      // Several bundles a pass while operations wait: the pass's reads above are not made again
      // between them, and the bundles go to the pipeline back to back (consecutive nonces).
      for (const g of groups.filter((g) => g.relayer_id === id && g.status === 'pending'))
        for (let n = 0; n < BUNDLES_A_PASS && (await bundlePending(rt, relayer, ctx, g.entry_point, chainAhead)); n++) busy = true;
    } catch (err) {
      rt.log.warn({ err, relayerId: id }, 'bundling: this pass failed for the relayer; trying again');
    }
  }
  return busy;
}

/** The bundling loop of this instance (started with the workers). */
export function startBundler(rt: Runtime) {
  const state = rt.state(BUNDLER);
  let gather: NodeJS.Timeout | undefined;
  const loop = startLoop(() => bundleOnce(rt), {
    idleMs: () => (state.inFlight ? SETTLE_POLL_MS : POLL_MS),
    onError: (err) => rt.log.error({ err }, 'bundler loop error'),
  });
  state.wake = () => {
    if (gather) return;
    gather = setTimeout(() => {
      gather = undefined;
      loop.wake();
    }, GATHER_MS);
  };
  return {
    wake: () => state.wake?.(),
    async stop() {
      state.wake = undefined;
      clearTimeout(gather);
      await loop.stop();
    },
  };
}
