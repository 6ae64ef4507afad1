import { dropStaleLeases } from '../db/lease.js';
import { startMaintenance } from '../db/maintenance.js';
import { startLoop } from '../lib/loop.js';
import type { Transaction } from '../generated/prisma/client.js';
import { startDeliveryWorker } from './notifications/delivery.js';
import { startRelayerChecks } from './relayers/checks.js';
import { stepTransactions } from './step-runner.js';
import { claimTransactions, releaseTransactions } from './transactions/store.js';
import type { Runtime } from './runtime.js';

// Per-step costs (a round trip to the node for the nonce, one for the broadcast batch, two saves)
// are shared by the rows of a step: at 100 rows a step they held relaying to about half the
// chain's rate; a step with fewer rows due is not held back for more.
const BATCH = 500;
/** Rows held in memory for the worker at most; more are left in the database, due. */
const MAX_HANDED = 2_000;
/**
 * New rows wait to be written while this many are handed over and not yet worked on, for at most
 * SEND_WAIT_MS. Rows given back for want of room are claimed again a poll or more later, after
 * rows handed over since: a relayer's later nonces would reach the node first, and the chain would
 * mine nothing until the gap filled.
 */
const SENDS_WAIT_AT = MAX_HANDED / 2;
const SEND_WAIT_MS = 2_000;
/** A handed-over row whose lease has less left than this is left to be claimed again instead. */
const LEASE_MARGIN_MS = 5_000;
/** The worker's poll for due rows when idle; while rows are handed to it, it claims due ones this often. */
const POLL_MS = 250;
/**
 * Steps in flight at once. A step spends most of its time waiting (on the node, on the database),
 * so the next one reads, signs and writes meanwhile; steps of one relayer still send in the order
 * they began (core/step-runner.ts). A step that has sent and only waits on the chain takes no slot.
 */
const STEPS = 3;
/**
 * A step overlaps a running one only with at least this many rows handed over: under load, where
 * overlapping pays; a lone client's one-row steps run one after the other, as its requests, which
 * wait behind every statement in flight, are answered sooner so.
 */
const OVERLAP_ROWS = 32;

/**
 * Works every accepted transaction to a final state: takes the rows handed to it (already leased
 * to this instance: new ones, ones the chain just mined) and claims due rows (a lease, so another
 * instance picks up the work of one that died), and advances each by one step (core/step-runner.ts).
 */
export function startTransactionWorker(rt: Runtime, { sendWaitMs = SEND_WAIT_MS } = {}) {
  const giveBack = (rows: Transaction[], inMs = 0) =>
    releaseTransactions(
      rt,
      rows.map((tx) => ({ tx, dueAt: new Date(Date.now() + inMs) })),
    );
  let handed: Transaction[] = [];
  let claimedAt = 0;
  let waiting: (() => void)[] = [];
  const full = () => handed.length >= SENDS_WAIT_AT;
  const letSendsIn = (always = false) => {
    if (waiting.length === 0 || (!always && full())) return;
    const go = waiting;
    waiting = [];
    for (const resolve of go) resolve();
  };
  const running = new Set<Promise<void>>();
  /** Steps that have sent and only wait on the chain: they hold no slot of STEPS. */
  const onChain = new Set<Promise<void>>();
  /** Settles when a running step moves to onChain (a slot of STEPS is free). */
  let moved = signal();
  const failed = (err: unknown) => rt.log.error({ err }, 'transaction worker error');
  const loop = startLoop(
    async () => {
      if (running.size >= STEPS || (running.size > 0 && handed.length < OVERLAP_ROWS)) {
        await Promise.race([...running, moved.promise]);
        return true;
      }
      const fresh = Date.now() + LEASE_MARGIN_MS;
      const txs = handed.splice(0, BATCH).filter((tx) => tx.leaseUntil && tx.leaseUntil.getTime() > fresh);
      letSendsIn();
      if (txs.length < BATCH && (txs.length === 0 || Date.now() - claimedAt >= POLL_MS)) {
        claimedAt = Date.now();
        // Rows due together (one insert) in nonce order, so a relayer's transactions reach the node in order.
        txs.push(...(await claimTransactions(rt, BATCH - txs.length)));
      }
      if (txs.length === 0) return false;
      const step: Promise<void> = stepTransactions(rt, txs, () => {
        if (!running.delete(step)) return;
        onChain.add(step);
        moved.fire();
        moved = signal();
      })
        .catch(failed)
        .finally(() => {
          running.delete(step);
          onChain.delete(step);
          loop.wake();
        });
      running.add(step);
      return txs.length === BATCH || handed.length > 0;
    },
    { idleMs: POLL_MS, onError: failed },
  );
  return {
    wake: loop.wake,
    handOff(rows: Transaction[]) {
      const room = Math.max(0, MAX_HANDED - handed.length);
      handed.push(...rows.slice(0, room));
      // Overloaded: the rest are due for any worker (this one claims them as it catches up).
      if (rows.length > room) void giveBack(rows.slice(room)).catch((err) => rt.log.warn({ err }, 'could not give back leases; they run out'));
      loop.wake();
    },
    roomForSends(): Promise<void> | undefined {
      if (!full()) return;
      return new Promise((resolve) => {
        waiting.push(resolve);
        setTimeout(resolve, sendWaitMs).unref();
      });
    },
    async stop() {
      letSendsIn(true);
      await loop.stop();
      await Promise.all([...running, ...onChain]);
      // What was handed over and not worked on is due again for any instance.
      const left = handed;
      handed = [];
      await giveBack(left);
    },
  };
}

function signal() {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

export async function startWorkers(rt: Runtime) {
  // Before any worker runs, and before the API hands rows to them (leased to this instance).
  await Promise.all([dropStaleLeases(rt.db, rt.env.instanceId, 'transactions'), dropStaleLeases(rt.db, rt.env.instanceId, 'deliveries')]);
  const deliveries = startDeliveryWorker(rt);
  const transactions = startTransactionWorker(rt);
  const families = rt.families.list.flatMap((spec) => rt.families.pipeline(spec.type)?.startWorkers?.(rt) ?? []);
  const loops = [transactions, deliveries, ...families];
  const detach = [rt.work.attach(transactions), rt.notifications.sender.attach(deliveries)];
  const checks = startRelayerChecks(rt);
  const maintenance = rt.db.kind === 'pglite' ? [startMaintenance(rt.db, rt.log)] : [];
  return {
    stop: () => {
      for (const d of detach) d();
      return Promise.all([...loops, checks, ...maintenance].map((l) => l.stop())).then(() => undefined);
    },
  };
}
