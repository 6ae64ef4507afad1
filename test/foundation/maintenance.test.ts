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
