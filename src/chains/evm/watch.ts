import { byNonce } from '../../core/step-runner.js';
import type { Held } from '../../core/transactions/held.js';
import { claimMinedNonces, type NonceRange } from '../../core/transactions/store.js';
import type { Relayer } from '../../generated/prisma/client.js';
import { slot } from '../../core/state.js';
import type { Runtime } from '../../core/runtime.js';
import type { EvmContext } from './context.js';
import type { EvmRpc } from './rpc-client.js';
import { heldAtIntake } from './decide.js';
import { latestNonce } from './nonces.js';

/**
 * Waiting for blocks without re-reading every waiting row: while this instance has broadcasts out,
 * a timer asks the chain for each such relayer's mined nonce and, when it moves, claims the rows
 * whose nonce it passed and hands them to this instance's worker at once. Those rows keep a later
 * due time of their own (their resubmission time), so a watcher lost to a restart, or one on
 * another instance, only delays work. The relayers on one RPC client are read together, in one
 * JSON-RPC batch a tick: a read of its own each cost 100 relayers a thousand requests a second.
 */
interface Watch {
  /** The relayer's context as its latest step saw it (its RPC client: whose batch it is read in). */
  ctx: EvmContext;
  /** The highest nonce broadcast and not yet seen mined. */
  upTo: bigint;
  /** The mined nonce last seen. */
  seen: bigint;
  /** Steps waiting for the chain's nonce to pass theirs (untilMined). */
  waiters: { nonce: bigint; wake: () => void }[];
  /**
   * The send window (decide.ts) as a step last saw it: the rows it lets in as the chain moves are
   * claimed too, and intake writes those past it free (heldFrom).
   */
  window?: number;
}

/** A read of the mined nonce is cheap: ten a block, so a block is seen soon after it is made. */
const watchMs = (ctx: EvmContext) => Math.min(1_000, Math.max(50, Math.round(ctx.blocktimeMs / 10)));

/** Per runtime (a restarted service in the same process starts afresh), per relayer. */
const WATCHES = slot('EVM mined-nonce watches', () => new Map<string, Watch>());
/** The timer of each RPC client with watches on it. */
const POLLS = slot('EVM mined-nonce polls', () => new Map<EvmRpc, NodeJS.Timeout>());

/**
 * Each chain's line as its first bids are made (bidInLine): the level they are bid at, and each
 * relayer's origin, the nonce from which its places count. Kept while this instance has
 * broadcasts out on the chain.
 */
interface Line {
  level: bigint;
  origins: Map<string, bigint>;
}
const LINES = slot('EVM lines', () => new Map<EvmRpc, Line>());

/**
 * The level for a first bid in the chain's line: the level bid before while the line lasts, when
 * it still covers `need` (what the line needs now), else `raised` (more than needed, so that the
 * level seldom moves). A line bid at one level is mined in turn; a later bid at a higher level
 * would be mined before all of it.
 */
export function lineLevel(rt: Runtime, rpc: EvmRpc, need: bigint, raised: bigint): bigint {
  const line = lineOn(rt, rpc);
  if (line.level < need) line.level = raised;
  return line.level;
}

/**
 * The place of the relayer's `nonce` in the chain's line, its mined nonce being `latest`: counted
 * from the relayer's origin, so that each of its bids, whenever made, sits where the one before left
 * it. A relayer new to the line, or back in it with nothing out meanwhile, starts level with the
 * slowest one in it (the fewest places mined since its origin): it neither waits behind the line's
 * past nor goes ahead of it on places it did not use.
 */
export function placeInLine(rt: Runtime, ctx: EvmContext, latest: bigint, nonce: bigint): bigint {
  const { origins } = lineOn(rt, ctx.rpc);
  let origin = origins.get(ctx.relayer.id);
  if (origin === undefined || !rt.state(WATCHES).has(ctx.relayer.id)) {
    let slowest: bigint | undefined;
    for (const w of rt.state(WATCHES).values()) {
      const o = w.ctx.rpc === ctx.rpc && w.ctx.relayer.id !== ctx.relayer.id ? origins.get(w.ctx.relayer.id) : undefined;
      if (o !== undefined && (slowest === undefined || w.seen - o < slowest)) slowest = w.seen - o;
    }
    origin = latest - (slowest !== undefined && slowest > 0n ? slowest : 0n);
    origins.set(ctx.relayer.id, origin);
  }
  return nonce > origin ? nonce - origin : 0n;
}

function lineOn(rt: Runtime, rpc: EvmRpc): Line {
  const lines = rt.state(LINES);
  let line = lines.get(rpc);
  if (!line) lines.set(rpc, (line = { level: 0n, origins: new Map() }));
  return line;
}

/**
 * Watches the chain for the relayer's broadcasts up to nonce `upTo`, `seen` being the mined nonce
 * the caller last read. With `from`, the caller is a step that has just given back rows it broadcast
 * at nonces `from` to `upTo`: those the watch saw the chain pass meanwhile, it could not claim then
 * (the step held them), and their own due time is their resubmission time, seconds away; they are
 * claimed now. With `held`, the step has given back rows the send window held, from nonce `from` up:
 * from then on the watch also claims the rows the window lets in as the chain moves, and those it
 * let in while the step held them are claimed now.
 */
export function watchMined(rt: Runtime, ctx: EvmContext, upTo: bigint, seen: bigint, from?: bigint, held?: { size: number; from: bigint }) {
  const watches = rt.state(WATCHES);
  const w = watches.get(ctx.relayer.id) ?? { ctx, upTo, seen, waiters: [] };
  w.ctx = ctx;
  watches.set(ctx.relayer.id, w);
  if (upTo > w.upTo) w.upTo = upTo;
  if (from !== undefined) {
    // Nonces below `seen` the step knew were passed, and decided on with that knowledge.
    const lowest = from > seen ? from : seen;
    const below = w.seen < upTo + 1n ? w.seen : upTo + 1n;
    if (below > lowest)
      claimMined(rt, [{ relayerId: ctx.relayer.id, from: lowest, below }]).catch((err) =>
        rt.log.debug({ err, relayerId: ctx.relayer.id }, 'claim of passed rows failed'),
      );
  }
  if (held) {
    w.window = held.size;
    const open = w.seen + BigInt(held.size);
    if (open > held.from)
      claimMined(rt, [{ relayerId: ctx.relayer.id, from: held.from, below: open }], true).catch((err) =>
        rt.log.debug({ err, relayerId: ctx.relayer.id }, 'claim of rows let in failed'),
      );
  }
  if (!rt.state(POLLS).has(ctx.rpc)) schedule(rt, ctx.rpc, watchMs(ctx));
  return w;
}

/** The relayer's new transactions the send window will hold, while a watch knows where the chain is. */
export function heldFrom(rt: Runtime, relayer: Relayer): Held | null {
  const w = rt.state(WATCHES).get(relayer.id);
  return w?.window === undefined ? null : heldAtIntake(w.ctx, w.seen, w.window);
}

/**
 * Transactions of relayers other than `relayerId` that this instance has broadcast on `rpc` and
 * not yet seen mined: the line a new broadcast there joins, as far as this instance knows it.
 */
export function othersInFlight(rt: Runtime, rpc: EvmRpc, relayerId: string): bigint {
  let n = 0n;
  for (const w of rt.state(WATCHES).values()) if (w.ctx.rpc === rpc && w.ctx.relayer.id !== relayerId && w.upTo >= w.seen) n += w.upTo + 1n - w.seen;
  return n;
}

/**
 * Settles once the watch sees the chain's nonce past `nonce` (every transaction of the relayer up
 * to it mined), when the watch stops, or after `ms`, whichever comes first. `seen`: the mined
 * nonce last read; `window`: the send window the step saw, known to intake from then on (heldFrom).
 */
export function untilMined(rt: Runtime, ctx: EvmContext, nonce: bigint, seen: bigint, ms: number, window?: number): Promise<void> {
  const w = watchMined(rt, ctx, nonce, seen);
  if (window !== undefined) w.window = window;
  // Mined already: seen by a watch kept going for another step's broadcasts.
  if (w.seen > nonce) return Promise.resolve();
  return new Promise((resolve) => {
    const waiter = {
      nonce,
      wake: () => {
        clearTimeout(timer);
        resolve();
      },
    };
    const timer = setTimeout(() => {
      w.waiters = w.waiters.filter((x) => x !== waiter);
      resolve();
    }, ms);
    w.waiters.push(waiter);
  });
}

/** Wakes the waiters whose nonce the chain passed (all of them when `all`). */
function wake(w: Watch, latest: bigint, all = false) {
  const woken = w.waiters.filter((x) => all || latest > x.nonce);
  w.waiters = w.waiters.filter((x) => !woken.includes(x));
  for (const x of woken) x.wake();
}

/**
 * The rows whose nonce the chain passed since the watches last looked (each range from the mined
 * nonce its watch saw then), still in flight and free, leased to this instance's worker. A row
 * below a range was passed before; its own due time brings it back. With `unsigned`, the rows
 * never signed that the send window now lets in.
 */
async function claimMined(rt: Runtime, ranges: NonceRange[], unsigned = false) {
  if (!rt.work.to || ranges.length === 0) return; // the worker stopped
  const rows = await claimMinedNonces(rt, ranges, unsigned);
  // A worker stopped meanwhile leaves them leased until the lease runs out.
  if (rows.length > 0) rt.work.to?.handOff(rows.sort(byNonce));
}

/** Reads the mined nonce of every watch on `rpc` every `ms` while there are any. */
function schedule(rt: Runtime, rpc: EvmRpc, ms: number) {
  const polls = rt.state(POLLS);
  const timer = setTimeout(async () => {
    const watches = rt.state(WATCHES);
    const on = [...watches.values()].filter((w) => w.ctx.rpc === rpc);
    if (on.length === 0) {
      rt.state(LINES).delete(rpc);
      return polls.delete(rpc);
    }
    const nonces = await Promise.all(on.map((w) => latestNonce(w.ctx).catch((err: Error) => err)));
    // The rows the chain passed, and those the send window lets in, of every watch: two statements.
    const passed: NonceRange[] = [];
    const letIn: NonceRange[] = [];
    on.forEach((w, i) => advance(rt, watches, w, nonces[i], passed, letIn));
    await Promise.all([claimMined(rt, passed), claimMined(rt, letIn, true)]).catch((err) =>
      rt.log.debug({ err, relayers: passed.length }, 'claim of passed rows failed; their due times bring them back'),
    );
    schedule(rt, rpc, ms);
  }, ms);
  timer.unref();
  polls.set(rpc, timer);
}

/** One watch, the chain's mined nonce of its relayer read (or failed to be): the ranges of rows to claim are added to `passed` and `letIn`. */
function advance(rt: Runtime, watches: Map<string, Watch>, w: Watch, latest: bigint | Error, passed: NonceRange[], letIn: NonceRange[]) {
  const id = w.ctx.relayer.id;
  if (latest instanceof Error) {
    // The rows' own due times take over; the next broadcast starts a new watch.
    rt.log.debug({ err: latest, relayerId: id }, 'mined-nonce watch stopped');
    if (watches.get(id) === w) watches.delete(id);
    wake(w, w.seen, true);
    return;
  }
  if (latest > w.seen) {
    const from = w.seen;
    w.seen = latest;
    wake(w, latest);
    passed.push({ relayerId: id, from, below: latest });
    if (w.window !== undefined) letIn.push({ relayerId: id, from: from + BigInt(w.window), below: latest + BigInt(w.window) });
  }
  if (latest > w.upTo) {
    if (watches.get(id) === w) watches.delete(id);
    wake(w, latest, true);
  }
}
