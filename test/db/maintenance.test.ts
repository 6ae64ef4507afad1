import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/client.js';
import { startMaintenance } from '../../src/db/maintenance.js';
import { createLogger } from '../../src/lib/log.js';

let db: Database;
let maintenance: ReturnType<typeof startMaintenance> | undefined;

beforeAll(async () => {
  db = await openDatabase({ inMemory: true });
  await db.prisma.$executeRawUnsafe('CREATE TABLE churn (id int PRIMARY KEY, v int NOT NULL)');
  await db.prisma.$executeRawUnsafe('INSERT INTO churn VALUES (1, 0)');
});
afterAll(async () => {
  await maintenance?.stop();
  await db?.close();
});

async function writes(n: number) {
  for (let i = 0; i < n; i++) await db.prisma.$executeRawUnsafe('UPDATE churn SET v = v + 1');
}

const checkpoint = async () => (await db.prisma.$queryRawUnsafe<{ lsn: string }[]>('SELECT checkpoint_lsn::text AS lsn FROM pg_control_checkpoint()'))[0].lsn;

async function churnStats() {
  const [row] = await db.prisma.$queryRawUnsafe<{ vacuums: bigint; analyzed: Date | null; live: bigint; dead: bigint }[]>(
    `SELECT vacuum_count AS vacuums, last_analyze AS analyzed, n_live_tup AS live, n_dead_tup AS dead FROM pg_stat_user_tables WHERE relname = 'churn'`,
  );
  return { vacuums: Number(row.vacuums), analyzed: row.analyzed, live: Number(row.live), dead: Number(row.dead) };
}

it('vacuums, analyzes and checkpoints the embedded database once enough write transactions have happened, not before', async () => {
  maintenance = startMaintenance(db, createLogger('silent'), { everyMs: 50, afterWrites: 100 });
  await new Promise((r) => setTimeout(r, 100));

  await writes(40);
  await new Promise((r) => setTimeout(r, 300));
  expect((await churnStats()).vacuums).toBe(0);
  const before = await checkpoint();

  await writes(80);
  // A pass is several statements (table by table, then the checkpoint): wait for its last.
  const deadline = Date.now() + 5_000;
  while ((await checkpoint()) === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  // Statistics reach pg_stat_user_tables up to a second after the statement (PostgreSQL flushes them so).
  while ((await churnStats()).vacuums === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const after = await churnStats();
  expect(after.vacuums).toBe(1);
  expect(after.analyzed).not.toBeNull();
  expect(after.live).toBe(1);
  expect(await checkpoint()).not.toBe(before);
  await maintenance.stop();
});

it('waits for a quiet interval while writes keep coming, but no longer than its longest deferral', async () => {
  maintenance = startMaintenance(db, createLogger('silent'), { everyMs: 200, afterWrites: 20, quietWrites: 0, maxDeferMs: 2_000 });
  const before = await checkpoint();
  const started = Date.now();
  let passedAt: number | undefined;
  while (passedAt === undefined && Date.now() - started < 6_000) {
    await writes(5);
    await new Promise((r) => setTimeout(r, 5)); // in-process PGlite answers in microtasks: let timers run
    if ((await checkpoint()) !== before) passedAt = Date.now() - started;
  }
  // Never a quiet interval: the pass came once the last one (here: its start) was 2 s old.
  expect(passedAt).toBeGreaterThanOrEqual(2_000);
  expect(passedAt).toBeLessThan(4_000);
  await maintenance.stop();
});

const walSinceCheckpoint = async (d: Database) =>
  Number(
    (
      await d.prisma.$queryRawUnsafe<{ mb: number }[]>(
        `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), (pg_control_checkpoint()).redo_lsn)::float8 / 1048576 AS mb`,
      )
    )[0].mb,
  );

/** About `mb` MB of WAL in one statement (rows of incompressible text). */
const walChunk = (d: Database, mb: number) =>
  d.prisma.$executeRawUnsafe(`INSERT INTO wal_filler SELECT g, repeat(md5(g::text || random()::text), 60) FROM generate_series(1, ${Math.round(mb * 500)}) g`);

it('checkpoints by WAL volume while writes never pause, without waiting for a quiet interval', async () => {
  await db.prisma.$executeRawUnsafe('CREATE TABLE wal_filler (id int, x text)');
  maintenance = startMaintenance(db, createLogger('silent'), { everyMs: 60_000, walCheckMs: 50, walCheckpointBytes: 8 * 2 ** 20 });
  const before = await checkpoint();
  let most = 0;
  for (let i = 0; i < 40; i++) {
    await walChunk(db, 2);
    await new Promise((r) => setTimeout(r, 20));
    most = Math.max(most, await walSinceCheckpoint(db));
  }
  // ~80 MB written; never more than the limit plus what two checks apart can write.
  expect(await checkpoint()).not.toBe(before);
  expect(most).toBeLessThan(16);
  await maintenance.stop();
  await db.prisma.$executeRawUnsafe('DROP TABLE wal_filler');
});

it('keeps the embedded database going past the WAL volume at which PostgreSQL would wait for a checkpointer PGlite does not have', async () => {
  // Without checkpoints by volume, the statement that takes the WAL past ~530 MB since the last
  // checkpoint busy-waits a minute, and so does every one after it.
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-wal-'));
  const disk = await openDatabase({ dataDir: dir });
  const running = startMaintenance(disk, createLogger('silent'));
  try {
    await disk.prisma.$executeRawUnsafe('CREATE TABLE wal_filler (id int, x text)');
    let slowest = 0;
    for (let written = 0; written < 700; written += 10) {
      const t = performance.now();
      await walChunk(disk, 10);
      await disk.prisma.$executeRawUnsafe('TRUNCATE wal_filler');
      slowest = Math.max(slowest, performance.now() - t);
      await new Promise((r) => setTimeout(r, 100)); // ~70 MB/s, beyond what relaying writes
    }
    expect(slowest).toBeLessThan(5_000);
    expect(await walSinceCheckpoint(disk)).toBeLessThan(300);
  } finally {
    await running.stop();
    await disk.close();
    await rm(dir, { recursive: true, force: true });
  }
}, 60_000);
