import { startLoop } from '../lib/loop.js';
import type { Logger } from '../lib/log.js';
import type { Database } from './client.js';

/**
 * PGlite runs PostgreSQL in single-user mode, without the autovacuum and checkpointer that a server
 * runs: dead row versions and index entries would pile up, planner statistics would never be
 * gathered, transaction ids never frozen, and the WAL would grow to max_wal_size (1 GB, ~8 KB a
 * relayed transaction here) for a restart to replay. This does their job: once enough write
 * transactions have happened since the last pass, one VACUUM (ANALYZE) of the database and a
 * CHECKPOINT (after which WAL segments are recycled), table by table: the tables (catalogs
 * included) changed since the last pass or holding transaction ids older than 100 million. A pass holds the one connection while it
 * runs (0.1-0.4 s at ~10k transactions here, more as tables grow), so it waits for a quiet check
 * interval (at most `quietWrites` write transactions in it) unless the last pass is `maxDeferMs`
 * old, and after a pass that took t there is none for 100 t: at most 1% of the time.
 *
 * The WAL written since the last checkpoint is read every `walCheckMs` and checkpointed at once past
 * `walCheckpointBytes`, load or not: at about 530 MB (max_wal_size over 1 + checkpoint_completion_target)
 * PostgreSQL asks its checkpointer for a checkpoint and, in PGlite, where there is none, busy-waits
 * for it for a minute at every further WAL segment: the service stopped dead after ~55,000 relayed
 * transactions of continuous load (it never had the quiet interval the pass waits for).
 */
export function startMaintenance(
  db: Database,
  log: Logger,
  opts: { everyMs?: number; afterWrites?: number; quietWrites?: number; maxDeferMs?: number; walCheckMs?: number; walCheckpointBytes?: number } = {},
) {
  const everyMs = opts.everyMs ?? 5_000;
  const walCheckMs = Math.min(everyMs, opts.walCheckMs ?? 1_000);
  const walLimit = BigInt(opts.walCheckpointBytes ?? 128 * 2 ** 20);
  let nextPassCheck = 0;
  const afterWrites = BigInt(opts.afterWrites ?? 200);
  const quietWrites = BigInt(opts.quietWrites ?? 5);
  const maxDeferMs = opts.maxDeferMs ?? 10 * 60_000;
  let lastPass: { xid: bigint; at: number } | undefined;
  let previous: bigint | undefined;
  let notBefore = 0;
  return startLoop(
    async () => {
      const [{ wal }] = await db.prisma.$queryRawUnsafe<{ wal: bigint }[]>(WAL_SINCE_CHECKPOINT);
      if (wal > walLimit) {
        const started = performance.now();
        await db.prisma.$executeRawUnsafe('CHECKPOINT');
        log.info({ walMb: Number(wal / 2n ** 20n), ms: Math.round(performance.now() - started) }, 'database checkpointed (WAL volume)');
      }
      if (Date.now() < nextPassCheck) return false;
      nextPassCheck = Date.now() + everyMs;
      // The next transaction id, read without taking one: how many write transactions there were.
      const [{ next }] = await db.prisma.$queryRawUnsafe<{ next: bigint }[]>('SELECT txid_snapshot_xmax(txid_current_snapshot()) AS next');
      const quiet = previous !== undefined && next - previous <= quietWrites;
      previous = next;
      lastPass ??= { xid: next, at: Date.now() };
      if (next - lastPass.xid < afterWrites || Date.now() < notBefore) return false;
      if (!quiet && Date.now() - lastPass.at < maxDeferMs) return false;
      const started = performance.now();
      // Table by table, each its own statement with a turn of the
      // event loop between: requests waiting for the one connection run in between, and the longest
      // wait is one table's pass rather than the whole database's.
      // The plan reads table statistics, which a backend publishes up to a second late unless told.
      await db.prisma.$queryRawUnsafe('SELECT 1 AS flushed FROM (SELECT pg_stat_force_next_flush()) f');
      const tables = await db.prisma.$queryRawUnsafe<{ name: string; vacuum: boolean; analyze: boolean }[]>(VACUUM_PLAN);
      for (const t of tables) {
        await db.prisma.$executeRawUnsafe(t.vacuum ? `VACUUM ${t.analyze ? '(ANALYZE) ' : ''}${t.name}` : `ANALYZE ${t.name}`);
        await new Promise((r) => setImmediate(r));
      }
      await db.prisma.$executeRawUnsafe('CHECKPOINT');
      const ms = performance.now() - started;
      log.info({ writes: Number(next - lastPass.xid), tables: tables.length, ms: Math.round(ms) }, 'database vacuumed and checkpointed');
      lastPass = { xid: next, at: Date.now() };
      notBefore = Date.now() + 100 * ms;
      return false;
    },
    { idleMs: walCheckMs, onError: (err) => log.warn({ err }, 'database maintenance failed; trying again later') },
  );
}

const WAL_SINCE_CHECKPOINT = `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (pg_control_checkpoint()).redo_lsn)::bigint AS wal`;

/** The tables changed since their last pass (or with old transaction ids), with qualified names. */
const VACUUM_PLAN = `
  SELECT format('%I.%I', s.schemaname, s.relname) AS name, true AS vacuum, s.n_mod_since_analyze > 0 AS analyze
  FROM pg_stat_all_tables s JOIN pg_class c ON c.oid = s.relid
  WHERE c.relkind IN ('r', 'm') AND (s.n_dead_tup > 0 OR s.n_mod_since_analyze > 0 OR age(c.relfrozenxid) > 100000000)
  ORDER BY s.n_dead_tup DESC`;
