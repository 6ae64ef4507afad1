// The one sequencing of a transaction step, the same for every chain family:
//   observe (the family reads the chain) -> decide (pure) -> write what will be sent (under the
//   lease the rows were claimed with) -> perform the effects -> record their outcomes (pure,
//   decided again) -> ... -> save with the next due time, giving the leases back.
// Families decide and perform; only this file writes their rows (transactions/store.ts).
import type { Relayer, Transaction } from '../generated/prisma/client.js';
import type { Decision, Effect, Steps } from './transactions/pipeline.js';
import { releaseTransactions, saveTransactions } from './transactions/store.js';
import type { TransactionPatch } from './transactions/rows.js';
import { readRelayers } from './relayers/service.js';
import type { Runtime } from './runtime.js';
import { slot } from './state.js';
import { once } from '../lib/once.js';

/** A step that keeps asking for effects is cut off after this many rounds (each row is looked at again later). */
const MAX_ROUNDS = 8;
/** Rows whose step failed, or whose family or relayer is missing, are due again after this. */
const RETRY_MS = 5_000;
/** Work due sooner than this is not left to the worker's next poll. */
const SOON_MS = 250;

type AnySteps = Steps<unknown, unknown, Effect, unknown, Decision>;

/** Rows in nonce order, rows without a nonce last. */
export const byNonce = (a: Transaction, b: Transaction) =>
  a.nonce === b.nonce ? 0 : a.nonce === null ? 1 : b.nonce === null ? -1 : a.nonce < b.nonce ? -1 : 1;

/**
 * Advances leased rows by one step: grouped by relayer, each group through its family's steps.
 * `sent` is called once every group has sent what it had to send (what is left of the step only
 * waits on the chain) or ended.
 */
export async function stepTransactions(rt: Runtime, rows: Transaction[], sent: () => void = () => {}): Promise<void> {
  const groups = new Map<string, Transaction[]>();
  for (const tx of rows) {
    const group = groups.get(tx.relayerId);
    if (group) group.push(tx);
    else groups.set(tx.relayerId, [tx]);
  }
  // In nonce order: a step sends its rows in this order (rows without a nonce keep theirs, last).
  for (const group of groups.values()) group.sort(byNonce);
  // Each relayer's turn is taken before anything is awaited, so steps send in the order they began.
  const turns = new Map([...groups.keys()].map((id) => [id, takeTurn(rt, id)]));
  let sending = groups.size;
  try {
    const relayers = new Map((await readRelayers(rt, [...groups.keys()])).map((r) => [r.id, r]));
    await Promise.all(
      [...groups].map(async ([relayerId, group]) => {
        const relayer = relayers.get(relayerId);
        const family = rt.families.pipeline(group[0].networkType);
        const groupSent = once(() => --sending === 0 && sent());
        try {
          if (!relayer || !family) throw new Error(`no ${relayer ? `chain family "${group[0].networkType}"` : `relayer ${relayerId}`}`);
          await runStep(rt, group[0].networkType, family.steps, relayer, group, turns.get(relayerId), groupSent);
        } catch (err) {
          rt.log.error({ err, relayerId, transactions: group.length }, 'transaction step failed; retrying later');
          await releaseTransactions(
            rt,
            group.map((tx) => ({ tx, dueAt: new Date(Date.now() + RETRY_MS) })),
          );
        } finally {
          groupSent();
        }
      }),
    );
  } finally {
    for (const turn of turns.values()) turn.end();
  }
}

// Steps of one relayer may overlap (the worker runs a few at once), but a step sends only once
// every step of that relayer begun before it has ended its turn: the relayer's transactions reach
// the node in the order their steps began, which is nonce order, as a node's pool expects (one that
// gets a nonce before the ones below it may park or drop it). A turn ends with the step, or once the
// step has sent and its effects only wait on the chain (Effect.waits); whatever such a step sends
// after that (rarely: a transaction moved to a new nonce) goes out after later steps' sends, as a
// retry would.

interface Turn {
  /** Settles once every step of the relayer begun before this one has ended its turn. */
  before: Promise<void>;
  /** Ends the turn (again: nothing): the relayer's later steps may send. */
  end(): void;
}

/** Per relayer: a promise that settles once every step begun so far has ended its turn. */
const STEP_TURNS = slot('step turns', () => new Map<string, Promise<void>>());

function takeTurn(rt: Runtime, relayerId: string): Turn {
  const ended = rt.state(STEP_TURNS);
  const before = ended.get(relayerId) ?? Promise.resolve();
  let end!: () => void;
  const own = new Promise<void>((resolve) => (end = resolve));
  const all = Promise.all([before, own]).then(() => {
    if (ended.get(relayerId) === all) ended.delete(relayerId);
  });
  ended.set(relayerId, all);
  return { before, end };
}

/**
 * One step of one relayer's rows through `steps`, in `turn` (taken here when not given; exported
 * for tests with a family of their own). The turn ends, and `sent` is called, once the step has
 * sent and its effects only wait on the chain, or when it ends.
 */
export async function runStep<C, S, E extends Effect, R, D extends Decision<E>>(
  rt: Runtime,
  family: string,
  steps: Steps<C, S, E, R, D>,
  relayer: Relayer,
  rows: Transaction[],
  turn: Turn = takeTurn(rt, relayer.id),
  sent: () => void = () => {},
): Promise<void> {
  const pass = once(() => {
    turn.end();
    sent();
  });
  try {
    await stepInTurn(rt, family, steps, relayer, rows, turn.before, pass);
  } finally {
    pass();
  }
}

async function stepInTurn<C, S, E extends Effect, R, D extends Decision<E>>(
  rt: Runtime,
  family: string,
  steps: Steps<C, S, E, R, D>,
  relayer: Relayer,
  rows: Transaction[],
  before: Promise<void>,
  pass: () => void,
): Promise<void> {
  const c = steps.context(rt, relayer);
  let ds = steps.decide(rows, await steps.observe(c, rows), new Date());
  let sent = false;
  for (let round = 0; ds.some((d) => d.effects.length > 0); round++) {
    if (round === MAX_ROUNDS) {
      rt.log.warn({ relayerId: relayer.id }, 'transaction step cut off: too many rounds of effects');
      ds = ds.map((d) => ({ ...d, effects: [], nextInMs: d.nextInMs ?? 0 }));
      break;
    }
    // Sent, and now only waiting on the chain: the step no longer holds the relayer's order, nor
    // the rows it is done with (those the chain may let in meanwhile among them).
    if (sent && ds.every((d) => d.effects.every((e) => e.stage === 'read' && e.waits))) {
      pass();
      const done = ds.filter((d) => d.effects.length === 0);
      if (done.length > 0) {
        await end(rt, steps, c, done);
        ds = ds.filter((d) => d.effects.length > 0);
      }
    }
    // Reads and signings first: nothing has left the process yet.
    ds = await perform(rt, family, steps as unknown as AnySteps, c, ds, (e) => e.stage !== 'send');
    // Then what will be sent is written, and sent.
    const sending = (d: D) => d.effects.some((e) => e.stage === 'send');
    if (!ds.some(sending)) continue;
    const points = (d: D) => d.effects.filter((e) => e.stage === 'send' && e.point).map((e) => `${family}.${e.point}`);
    ds = await write(rt, ds, (d) => sending(d) && Object.keys(d.patch).length > 0, false);
    for (const p of ds.filter(sending).flatMap(points)) rt.crash(`${p}.saved`);
    await before;
    ds = await perform(rt, family, steps as unknown as AnySteps, c, ds, (e) => e.stage === 'send');
    sent = true;
  }
  await end(rt, steps, c, ds);
}

/** Saves the step's decisions, each with its next due time, giving the leases back. */
async function end<C, D extends Decision>(rt: Runtime, steps: { settled?(c: C, ds: D[]): void }, c: C, ds: D[]) {
  const saved = await write(rt, ds, () => true, true);
  steps.settled?.(c, saved);
  const soonest = Math.min(...saved.filter((d) => d.nextInMs !== null).map((d) => d.nextInMs!));
  if (soonest === 0) rt.work.to?.wake();
  else if (soonest < SOON_MS) setTimeout(() => rt.work.to?.wake(), soonest).unref();
}

/** The signing points that sign an already-sent transaction again (counted as resubmissions). */
const RESIGNINGS = new Set(['resubmit', 'resign']);

/**
 * Performs the effects of every decision whose effects pass `which` (one call to the family, so
 * it can batch them) and records their outcomes. Crash points: a new signing fires `signed` as
 * soon as it is made; a send fires `broadcast` once performed, before its answer is recorded.
 */
async function perform<D extends Decision>(rt: Runtime, family: string, steps: AnySteps, c: unknown, ds: D[], which: (e: Effect) => boolean): Promise<D[]> {
  const due = ds.filter((d) => d.effects.length > 0 && d.effects.every(which));
  if (due.length === 0) return ds;
  const todo = due.flatMap((d) => d.effects.map((effect) => ({ effect, d })));
  const effects = todo.map((t) => t.effect);
  const outcomes = await steps.perform(c, todo);
  effects.forEach((e, i) => {
    const o = outcomes[i] as { signed?: unknown; point?: unknown } | undefined;
    const point = typeof o?.point === 'string' ? o.point : e.point;
    if (point && ((e.stage === 'sign' && o?.signed === true) || e.stage === 'send'))
      rt.crash(`${family}.${point}.${e.stage === 'sign' ? 'signed' : 'broadcast'}`);
    if (e.stage === 'sign' && o?.signed === true && RESIGNINGS.has(point as string)) rt.metrics.resubmissions.inc({ relayer_id: todo[i].d.tx.relayerId });
  });
  let i = 0;
  const now = new Date();
  const recorded = new Map(due.map((d) => [d, steps.record(d, outcomes.slice(i, (i += d.effects.length)), now) as D]));
  return ds.map((d) => recorded.get(d) ?? d);
}

/**
 * Writes the patch of each decision `which` picks, under the lease its row was read with; with
 * `end`, every decision, with its next due time, giving the lease back (a row with no change gets
 * only that). All in one save, which joins the saves of the relayers' other steps (with 100
 * relayers, each step giving back its unchanged rows on its own was a quarter of the database's
 * work). A changed row whose lease was lost is dropped: another instance works on it now.
 */
async function write<D extends Decision>(rt: Runtime, ds: D[], which: (d: D) => boolean, end: boolean): Promise<D[]> {
  const picked = new Set(ds.filter(which));
  if (picked.size === 0) return ds;
  const dueAt = (d: D) => (d.nextInMs === null ? null : new Date(Date.now() + d.nextInMs));
  const changed = (d: D) => Object.keys(d.patch).length > 0 || !!d.via?.length;
  const saved = await saveTransactions(
    rt,
    rt.instanceId,
    [...picked].map((d) => {
      const patch: TransactionPatch = end ? { dueAt: dueAt(d), ...d.patch } : { ...d.patch };
      // A status that becomes sent or submitted carries sent_at in the same write.
      if ((patch.status === 'sent' || patch.status === 'submitted') && !d.tx.sentAt && !patch.sentAt) patch.sentAt = new Date();
      return { before: d.tx, patch, via: d.via, release: end };
    }),
  );
  const lost = new Set<D>();
  const next = ds.map((d) => {
    if (!picked.has(d)) return d;
    const row = saved.get(d.tx.id);
    if (row) return { ...d, tx: row, patch: {}, via: [] };
    if (!changed(d)) return d;
    rt.log.warn({ transactionId: d.tx.id }, 'step result not written: the lease of the transaction was lost');
    lost.add(d);
    return d;
  });
  return next.filter((d) => !lost.has(d));
}
