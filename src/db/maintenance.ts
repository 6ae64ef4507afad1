import { startLoop } from '../lib/loop.js';
import type { Logger } from '../log.js';
import type { Database } from './client.js';

/**
 * PGlite runs PostgreSQL in single-user mode, without the autovacuum and checkpointer that a server
 * runs: dead row versions and index entries would pile up, planner statistics would never be
 * gathered, transaction ids never frozen, and the WAL would grow to max_wal_size (1 GB, ~8 KB a
 * relayed transaction here) for a restart to replay. This does their job: once enough write
 * transactions have happened since the last pass, one VACUUM (ANALYZE) of the database and a
 * CHECKPOINT (after which WAL segments are recycled). It holds the one connection while it runs
 * (0.1-0.3 s at ~10k transactions here, more as tables grow), so it runs at most once per check
 * interval, and after a pass that took t, not again for 100 t: at most 1% of the time.
 */
export function startMaintenance(db: Database, log: Logger, opts: { everyMs?: number; afterWrites?: number } = {}) {
  const everyMs = opts.everyMs ?? 60_000;
  const afterWrites = BigInt(opts.afterWrites ?? 200);
  let lastXid: bigint | undefined;
  let notBefore = 0;
  return startLoop(
    async () => {
      // The next transaction id, read without taking one: how many write transactions there were.
      const [{ next }] = await db.prisma.$queryRawUnsafe<{ next: bigint }[]>('SELECT txid_snapshot_xmax(txid_current_snapshot()) AS next');
      if (lastXid === undefined) lastXid = next;
      if (next - lastXid < afterWrites || Date.now() < notBefore) return false;
      const started = performance.now();
      await db.prisma.$executeRawUnsafe('VACUUM (ANALYZE)');
      await db.prisma.$executeRawUnsafe('CHECKPOINT');
      const ms = performance.now() - started;
      log.info({ writes: Number(next - lastXid), ms: Math.round(ms) }, 'database vacuumed and checkpointed');
      lastXid = next;
      notBefore = Date.now() + 100 * ms;
      return false;
    },
    { idleMs: everyMs, onError: (err) => log.warn({ err }, 'database maintenance failed; trying again later') },
  );
}
