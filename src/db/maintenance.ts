import { startLoop } from '../lib/loop.js';
import type { Logger } from '../lib/log.js';
import type { Database } from './client.js';

/**
 * PGlite runs PostgreSQL in single-user mode, without the autovacuum and checkpointer that a server
 * runs: dead row versions and index entries would pile up, planner statistics would never be
 * gathered, transaction ids never frozen, and the WAL would grow to max_wal_size (1 GB, ~8 KB a
 * relayed transaction here) for a restart to replay. This does their job: once enough write
 * transactions have happened since the last pass, one VACUUM (ANALYZE) of the database and a
 * CHECKPOINT (after which WAL segments are recycled). A pass holds the one connection while it
 * runs (0.1-0.4 s at ~10k transactions here, more as tables grow), so it waits for a quiet check
 * interval (at most `quietWrites` write transactions in it) unless the last pass is `maxDeferMs`
 * old, and after a pass that took t there is none for 100 t: at most 1% of the time.
 */
export function startMaintenance(db: Database, log: Logger, opts: { everyMs?: number; afterWrites?: number; quietWrites?: number; maxDeferMs?: number } = {}) {
  const everyMs = opts.everyMs ?? 5_000;
  const afterWrites = BigInt(opts.afterWrites ?? 200);
  const quietWrites = BigInt(opts.quietWrites ?? 5);
  const maxDeferMs = opts.maxDeferMs ?? 10 * 60_000;
  let lastPass: { xid: bigint; at: number } | undefined;
  let previous: bigint | undefined;
  let notBefore = 0;
  return startLoop(
    async () => {
      // The next transaction id, read without taking one: how many write transactions there were.
      const [{ next }] = await db.prisma.$queryRawUnsafe<{ next: bigint }[]>('SELECT txid_snapshot_xmax(txid_current_snapshot()) AS next');
      const quiet = previous !== undefined && next - previous <= quietWrites;
      previous = next;
      lastPass ??= { xid: next, at: Date.now() };
      if (next - lastPass.xid < afterWrites || Date.now() < notBefore) return false;
      if (!quiet && Date.now() - lastPass.at < maxDeferMs) return false;
      const started = performance.now();
      await db.prisma.$executeRawUnsafe('VACUUM (ANALYZE)');
      await db.prisma.$executeRawUnsafe('CHECKPOINT');
      const ms = performance.now() - started;
      log.info({ writes: Number(next - lastPass.xid), ms: Math.round(ms) }, 'database vacuumed and checkpointed');
      lastPass = { xid: next, at: Date.now() };
      notBefore = Date.now() + 100 * ms;
      return false;
    },
    { idleMs: everyMs, onError: (err) => log.warn({ err }, 'database maintenance failed; trying again later') },
  );
}
