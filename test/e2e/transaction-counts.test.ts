import { randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue } from '../../src/db/lease.js';
import { openDatabase } from '../../src/db/client.js';
import { applyMigrations, noFilter, openSchemaEngine, readMigrations } from '../../src/db/schema-engine.js';
import type { Transaction, TransactionStatus } from '../../src/generated/prisma/client.js';
import { insertTransactions, releaseTransactions, saveTransactions, TRANSACTION_COLUMNS } from '../../src/core/transactions/store.js';
import type { NewTransaction } from '../../src/core/transactions/rows.js';
import { createTestDatabase, databaseKinds, postgresReachable } from '../support/postgres.js';
import { DEV_ADDRESS, type TestService } from '../support/service.js';
import { envelope, RECEIVER, SOLANA_RELAYER, startRestService, STELLAR_RELAYER } from '../support/rest.js';

// A relayer's list total (REST total_items, GraphQL totalItems) and the metrics gauge read the
// counters the database keeps per relayer and status (transaction_counts, kept by triggers): after
// every kind of write they must equal a count of the rows.

const STATUSES: TransactionStatus[] = ['pending', 'sent', 'submitted', 'mined', 'confirmed', 'failed', 'expired', 'canceled'];
const RELAYERS = ['evm-relayer', SOLANA_RELAYER, STELLAR_RELAYER];
const COUNT_ROWS = 'SELECT relayer_id, status::text AS status, count(*)::int AS n FROM transactions GROUP BY relayer_id, status ORDER BY relayer_id, status';
/** Every counter row as it is stored: its version (xmin) changes when it is written. */
const COUNTER_VERSIONS = 'SELECT relayer_id, status::text AS status, n::int AS n, xmin::text AS version FROM transaction_counts ORDER BY relayer_id, status';

type Counted = { relayer_id: string; status: string; n: number };

describe.each(await databaseKinds())('transaction counts on %s', (db) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({
      db,
      anvil: true,
      env: { RATE_LIMIT_REQUESTS_PER_SECOND: '1000000', RATE_LIMIT_BURST_SIZE: '1000000', METRICS_ENABLED: 'true', METRICS_PORT: '0' },
    });
  });
  afterAll(() => svc?.stop());

  const query = <T = Record<string, unknown>>(sql: string, params?: unknown[]) => svc.rt.db.query<T>(sql, params);
  const list = (relayer: string, status?: string) =>
    svc.request('GET', `/api/v1/relayers/${relayer}/transactions?per_page=1${status ? `&status=${status}` : ''}`).then(envelope);

  /** The totals both surfaces give, per relayer, all statuses and each status, against count(*). */
  async function expectExact(): Promise<Counted[]> {
    const rows = await query<Counted>(COUNT_ROWS);
    const truth = (relayer: string, status?: string) =>
      rows.filter((r) => r.relayer_id === relayer && (!status || r.status === status)).reduce((a, r) => a + r.n, 0);
    for (const relayer of RELAYERS) {
      const rest = [(await list(relayer)).pagination!.total_items];
      for (const s of STATUSES) rest.push((await list(relayer, s)).pagination!.total_items);
      const field = (alias: string, status?: string) =>
        `${alias}: relayerTransactions(relayerId: "${relayer}", perPage: 1${status ? `, status: ${status}` : ''}) { pagination { totalItems } }`;
      const { data, errors } = await svc.gql(`{ ${[field('all'), ...STATUSES.map((s) => field(s, s))].join(' ')} }`);
      expect(errors).toBeUndefined();
      const gql = ['all', ...STATUSES].map((k) => data[k].pagination.totalItems);
      const expected = [truth(relayer), ...STATUSES.map((s) => truth(relayer, s))];
      expect({ relayer, rest, gql }).toEqual({ relayer, rest: expected, gql: expected });
    }
    // The counters themselves: a count that fell to 0 keeps its row, nothing else differs.
    const counters = await query<Counted>(
      'SELECT relayer_id, status::text AS status, n::int AS n FROM transaction_counts WHERE n <> 0 ORDER BY relayer_id, status',
    );
    expect(counters).toEqual(rows);
    return rows;
  }

  const total = async (relayer: string, status?: string) => (await list(relayer, status)).pagination!.total_items;

  it('counts sends accepted through the API (a retry under its Idempotency-Key adds nothing)', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await svc.request(
        'POST',
        '/api/v1/relayers/evm-relayer/transactions',
        { to: RECEIVER, value: i + 1 },
        i === 3 ? { 'idempotency-key': 'k' } : {},
      );
      expect(res.status).toBe(200);
    }
    expect((await svc.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 4 }, { 'idempotency-key': 'k' })).status).toBe(200);
    await expectExact();
    expect([await total('evm-relayer'), await total('evm-relayer', 'pending')]).toEqual([4, 4]);
  });

  it('counts a batch inserted in one statement with rows born in several statuses', async () => {
    const row = (status: TransactionStatus): NewTransaction => ({
      id: randomUUID(),
      relayerId: SOLANA_RELAYER,
      networkType: 'solana',
      from: DEV_ADDRESS,
      to: null,
      data: null,
      nonce: null,
      gasLimit: null,
      gasPrice: null,
      maxFeePerGas: null,
      maxPriorityFeePerGas: null,
      speed: null,
      validUntil: new Date('2031-01-01T00:00:00Z'),
      request: { transaction: 'AQ==' },
      idempotencyKey: null,
      requestDigest: null,
      status,
    });
    const rows = ['pending', 'pending', 'canceled', 'confirmed', 'pending'].map((s) => row(s as TransactionStatus));
    await insertTransactions(svc.rt, rows, { relayers: [{ id: SOLANA_RELAYER, notificationId: null }] });
    await expectExact();
    expect([await total(SOLANA_RELAYER), await total(SOLANA_RELAYER, 'pending'), await total(SOLANA_RELAYER, 'canceled')]).toEqual([5, 3, 1]);
  });

  it('counts status changes saved by the pipeline; claims, releases and saves that change no status write no counter', async () => {
    const versions = await query(COUNTER_VERSIONS);
    const claimed = await claimDue<Transaction>(svc.rt.db, 'transactions', {
      owner: 'w',
      limit: 3,
      leaseMs: 30_000,
      where: `relayer_id = 'evm-relayer'`,
      orderBy: 'nonce',
      returning: TRANSACTION_COLUMNS,
    });
    expect(claimed).toHaveLength(3);
    const unchanged = await saveTransactions(
      svc.rt,
      'w',
      claimed.map((tx, i) => ({ before: tx, patch: { hash: `0x0${i}`, attempts: 1 }, release: false })),
    );
    expect(unchanged.size).toBe(3);
    await releaseTransactions(svc.rt, [{ tx: unchanged.get(claimed[2].id)!, dueAt: new Date() }]);
    expect(await query(COUNTER_VERSIONS)).toEqual(versions);

    const [a, b] = claimed.map((tx) => unchanged.get(tx.id)!);
    const saved = await saveTransactions(svc.rt, 'w', [
      { before: a, patch: { status: 'sent', sentAt: new Date() }, release: true },
      { before: b, patch: { status: 'submitted', sentAt: new Date() }, via: ['sent'], release: true },
    ]);
    expect(saved.size).toBe(2);
    await expectExact();
    expect([await total('evm-relayer', 'pending'), await total('evm-relayer', 'sent'), await total('evm-relayer', 'submitted')]).toEqual([2, 1, 1]);
  });

  it('counts a cancel through the API', async () => {
    const [open] = await query<{ id: string }>(
      `SELECT id FROM transactions WHERE relayer_id = 'evm-relayer' AND status = 'pending' AND lease_owner IS NULL ORDER BY nonce DESC LIMIT 1`,
    );
    const res = await svc.request('DELETE', `/api/v1/relayers/evm-relayer/transactions/${open.id}`);
    expect(res.status).toBe(200);
    await expectExact();
  });

  it('counts hand-written SQL: one statement moving rows of several relayers between statuses, one moving rows to another relayer', async () => {
    await query(`UPDATE transactions SET status = (CASE status WHEN 'pending' THEN 'failed' WHEN 'sent' THEN 'confirmed' ELSE status END)::"TransactionStatus"
      WHERE relayer_id IN ('evm-relayer', '${SOLANA_RELAYER}') AND id IN (SELECT id FROM transactions ORDER BY id LIMIT 6)`);
    await expectExact();
    const versions = await query(COUNTER_VERSIONS);
    await query('UPDATE transactions SET attempts = attempts + 1, updated_at = now()');
    expect(await query(COUNTER_VERSIONS)).toEqual(versions);
    const left = `SELECT relayer_id, status::text AS status, gone::int AS gone, removed::int AS removed FROM transaction_counts ORDER BY relayer_id, status`;
    // Two rows of one relayer swap statuses in one statement: no count changes, yet each left its status.
    const [x, y] = await query<{ id: string; status: string }>(
      `SELECT DISTINCT ON (status) id, status::text AS status FROM transactions WHERE relayer_id = 'evm-relayer' ORDER BY status, id LIMIT 2`,
    );
    expect(x.status).not.toBe(y.status);
    const unswapped = await query<{ relayer_id: string; status: string; gone: number; removed: number }>(left);
    await query(
      `UPDATE transactions SET status = (CASE id WHEN '${x.id}' THEN '${y.status}' ELSE '${x.status}' END)::"TransactionStatus" WHERE id IN ('${x.id}', '${y.id}')`,
    );
    await expectExact();
    expect(await query(left)).toEqual(
      unswapped.map((c) => (c.relayer_id === 'evm-relayer' && [x.status, y.status].includes(c.status) ? { ...c, gone: c.gone + 1 } : c)),
    );
    const before = await query<{ relayer_id: string; status: string; gone: number; removed: number }>(left);
    const moved = await query<{ status: string; n: number }>(
      `SELECT status::text AS status, count(*)::int AS n FROM transactions WHERE relayer_id = '${SOLANA_RELAYER}' AND status <> 'confirmed' GROUP BY status`,
    );
    await query(`UPDATE transactions SET relayer_id = '${STELLAR_RELAYER}' WHERE relayer_id = '${SOLANA_RELAYER}' AND status <> 'confirmed'`);
    // Rows that left a relayer count as gone from their status and removed from the relayer's list.
    const after = await query<{ relayer_id: string; status: string; gone: number; removed: number }>(left);
    for (const { status, n } of moved) {
      const was = before.find((c) => c.relayer_id === SOLANA_RELAYER && c.status === status)!;
      expect(after.find((c) => c.relayer_id === SOLANA_RELAYER && c.status === status)).toEqual({ ...was, gone: was.gone + n, removed: was.removed + n });
    }
    const rows = await expectExact();
    expect(rows.some((r) => r.relayer_id === STELLAR_RELAYER)).toBe(true);
  });

  it('counts deletes: a count that falls to 0 reads 0', async () => {
    await query(`DELETE FROM transactions WHERE relayer_id = '${STELLAR_RELAYER}'`);
    await query(`DELETE FROM transactions WHERE id IN (SELECT id FROM transactions WHERE relayer_id = '${SOLANA_RELAYER}' ORDER BY id LIMIT 1)`);
    await expectExact();
    expect(await total(STELLAR_RELAYER)).toBe(0);
  });

  it('the metrics gauge shows the counts that are not 0', async () => {
    const rows = await query<Counted>(COUNT_ROWS);
    const text = await (await fetch(`http://127.0.0.1:${svc.metricsPort}/metrics`)).text();
    const gauge = [...text.matchAll(/^relayer_transactions\{relayer_id="([^"]+)",status="([^"]+)"\} (\d+)$/gm)].map((m) => ({
      relayer_id: m[1],
      status: m[2],
      n: Number(m[3]),
    }));
    const order = (x: Counted[]) => [...x].sort((p, q) => `${p.relayer_id} ${p.status}`.localeCompare(`${q.relayer_id} ${q.status}`));
    expect(order(gauge)).toEqual(order(rows));
    expect(gauge.some((g) => g.relayer_id === STELLAR_RELAYER)).toBe(false);
  });

  it("a deleted relayer's counters fall to 0 with its rows, counted as gone and removed", async () => {
    await query(`UPDATE transactions SET status = 'confirmed', due_at = NULL, lease_owner = NULL, lease_until = NULL
      WHERE relayer_id = 'evm-relayer' AND status NOT IN ('confirmed', 'failed', 'expired', 'canceled')`);
    expect(await total('evm-relayer')).toBeGreaterThan(0);
    const GONE = `SELECT status::text AS status, n::int AS n, gone::int AS gone, removed::int AS removed FROM transaction_counts
      WHERE relayer_id = 'evm-relayer' ORDER BY status`;
    const before = await query<{ status: string; n: number; gone: number; removed: number }>(GONE);
    expect((await svc.request('DELETE', '/api/v1/relayers/evm-relayer')).status).toBe(200);
    // They only grow: a relayer made again under this id never sees counts it had (pages' marks rest on them).
    expect(await query(GONE)).toEqual(before.map((c) => ({ status: c.status, n: 0, gone: c.gone + c.n, removed: c.removed + c.n })));
    expect(await query(`SELECT id FROM transactions WHERE relayer_id = 'evm-relayer'`)).toEqual([]);
    expect((await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions')).status).toBe(404);
    const rows = await query<Counted>(COUNT_ROWS);
    expect(await query('SELECT relayer_id, status::text AS status, n::int AS n FROM transaction_counts WHERE n <> 0 ORDER BY relayer_id, status')).toEqual(
      rows,
    );
    expect(await total(SOLANA_RELAYER)).toBe(rows.filter((r) => r.relayer_id === SOLANA_RELAYER).reduce((a, r) => a + r.n, 0));
  });
});

describe.each(await databaseKinds())('the transaction_counts migration on %s', (db) => {
  it('counts the rows already there when it is applied, then keeps counting', async () => {
    const pgdb = db === 'postgres' ? await createTestDatabase({ empty: true }) : undefined;
    const pglite = pgdb ? undefined : new PGlite();
    const factory: SqlMigrationAwareDriverAdapterFactory = pgdb ? new PrismaPg({ connectionString: pgdb.url, max: 2 }) : new PrismaPGlite(pglite!);
    const admin = pgdb ? new pg.Client({ connectionString: pgdb.url }) : undefined;
    await admin?.connect();
    const query = async <T>(sql: string): Promise<T[]> => (admin ? (await admin.query(sql)).rows : (await pglite!.query<T>(sql)).rows);
    try {
      await applyOlderThan(factory, '_transaction_counts');
      expect(await query(`SELECT to_regclass('transaction_counts') AS t`)).toEqual([{ t: null }]);
      await query(`INSERT INTO relayers (id, name, network, network_type, signer_id, address, policies, updated_at)
        VALUES ('a', 'a', 'localnet', 'evm', 's', '0x', '{}', now()), ('b', 'b', 'localnet', 'evm', 's', '0x', '{}', now())`);
      await query(`INSERT INTO transactions (id, relayer_id, network_type, status, "from", request, updated_at)
        SELECT gen_random_uuid()::text, CASE WHEN i % 4 = 0 THEN 'b' ELSE 'a' END, 'evm',
          (ARRAY['pending', 'submitted', 'confirmed', 'failed', 'canceled'])[1 + i % 5]::"TransactionStatus", '0x', '{}', now()
        FROM generate_series(1, 500) AS i`);

      expect(await applyMigrations(factory)).toEqual(expect.arrayContaining([expect.stringMatching(/_transaction_counts$/)]));
      const counters = 'SELECT relayer_id, status::text AS status, n::int AS n FROM transaction_counts WHERE n <> 0 ORDER BY 1, 2';
      expect(await query(counters)).toEqual(await query(COUNT_ROWS));
      expect((await query<{ n: number }>(`SELECT sum(n)::int AS n FROM transaction_counts WHERE relayer_id = 'a'`))[0].n).toBe(375);

      await query(`UPDATE transactions SET status = 'confirmed' WHERE status = 'pending' AND relayer_id = 'a'`);
      await query(`DELETE FROM transactions WHERE status = 'failed'`);
      expect(await query(counters)).toEqual(await query(COUNT_ROWS));
    } finally {
      await admin?.end();
      await pglite?.close();
      await pgdb?.drop();
    }
  });
});

/** Applies the migrations older than the one whose name ends with `first`, as an older release would have. */
async function applyOlderThan(factory: SqlMigrationAwareDriverAdapterFactory, first: string) {
  const opened: SqlDriverAdapter[] = [];
  const tracked: SqlMigrationAwareDriverAdapterFactory = Object.create(factory, {
    connect: { value: async () => opened[opened.push(await factory.connect()) - 1] },
    connectToShadowDb: { value: async () => opened[opened.push(await factory.connectToShadowDb()) - 1] },
  });
  const engine = await openSchemaEngine(tracked);
  try {
    const all = await readMigrations();
    const at = all.migrationDirectories.findIndex((d) => d.path.endsWith(first));
    expect(at).toBeGreaterThan(0);
    const older = { ...all, migrationDirectories: all.migrationDirectories.slice(0, at) };
    await engine.applyMigrations({ migrationsList: older, filters: noFilter });
  } finally {
    engine.free();
    await Promise.all(opened.map((a) => a.dispose().catch(() => {})));
  }
}

describe.runIf(await postgresReachable())('transaction counts under concurrent writers on postgres', () => {
  it('two connections moving rows of the same relayers between statuses in opposite orders, beside inserts, neither deadlock nor drift', async () => {
    const pgdb = await createTestDatabase();
    const database = await openDatabase({ databaseUrl: pgdb.url });
    const clients = [0, 1, 2, 3].map(() => new pg.Client({ connectionString: pgdb.url }));
    try {
      await Promise.all(clients.map((c) => c.connect()));
      const [a, b, inserter, reader] = clients;
      await database.query(`INSERT INTO relayers (id, name, network, network_type, signer_id, address, policies, updated_at)
        VALUES ('r1', 'r1', 'localnet', 'evm', 's', '0x', '{}', now()), ('r2', 'r2', 'localnet', 'evm', 's', '0x', '{}', now())`);
      // 400 rows over two relayers and five statuses; each writer owns half of them.
      await database.query(`INSERT INTO transactions (id, relayer_id, network_type, status, "from", request, updated_at)
        SELECT lpad(i::text, 4, '0'), CASE WHEN i % 2 = 0 THEN 'r1' ELSE 'r2' END, 'evm',
          (ARRAY['pending', 'sent', 'submitted', 'mined', 'confirmed'])[1 + i % 5]::"TransactionStatus", '0x', '{}', now()
        FROM generate_series(1, 400) AS i`);
      const ROUNDS = 40;
      // Every round moves each of the writer's rows one status on (confirmed back to pending), in one
      // statement that takes its rows in ascending (a) or descending (b) order: every statement
      // changes the same ten counters.
      const writer = (client: pg.Client, ids: string, order: 'ASC' | 'DESC') => async () => {
        for (let i = 0; i < ROUNDS; i++) {
          await client.query('BEGIN');
          await client.query(`UPDATE transactions t SET status = (CASE t.status WHEN 'pending' THEN 'sent' WHEN 'sent' THEN 'submitted'
              WHEN 'submitted' THEN 'mined' WHEN 'mined' THEN 'confirmed' ELSE 'pending' END)::"TransactionStatus"
            FROM (SELECT id FROM transactions WHERE id ${ids} ORDER BY id ${order} FOR UPDATE) mine WHERE t.id = mine.id`);
          await client.query('SELECT pg_sleep(0.002)');
          await client.query('COMMIT');
        }
      };
      const inserts = async () => {
        for (let i = 0; i < ROUNDS; i++) {
          await inserter.query(
            `INSERT INTO transactions (id, relayer_id, network_type, status, "from", request, updated_at)
            SELECT 'x' || $1 || '-' || k, CASE WHEN k % 2 = 0 THEN 'r2' ELSE 'r1' END, 'evm', 'pending', '0x', '{}', now() FROM generate_series(1, 3) AS k`,
            [i],
          );
        }
      };
      // In any one snapshot the counters and the rows agree.
      const disagreements: unknown[] = [];
      let done = false;
      const reads = async () => {
        while (!done) {
          await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
          const [counted] = (
            await reader.query(`SELECT (SELECT coalesce(sum(n), 0)::int FROM transaction_counts WHERE relayer_id = 'r1' AND status = 'pending') AS counter,
              (SELECT count(*)::int FROM transactions WHERE relayer_id = 'r1' AND status = 'pending') AS rows`)
          ).rows;
          await reader.query('COMMIT');
          if (counted.counter !== counted.rows) disagreements.push(counted);
        }
      };
      const reading = reads();
      await Promise.all([writer(a, "BETWEEN '0001' AND '0200'", 'ASC')(), writer(b, "BETWEEN '0201' AND '0400'", 'DESC')(), inserts()]).finally(
        () => (done = true),
      );
      await reading;
      expect(disagreements).toEqual([]);
      const counters = await database.query('SELECT relayer_id, status::text AS status, n::int AS n FROM transaction_counts WHERE n <> 0 ORDER BY 1, 2');
      expect(counters).toEqual(await database.query(COUNT_ROWS));
      expect(await database.query(`SELECT count(*)::int AS n FROM transactions`)).toEqual([{ n: 400 + 3 * ROUNDS }]);
    } finally {
      await Promise.all(clients.map((c) => c.end().catch(() => {})));
      await database.close();
      await pgdb.drop();
    }
  });
});
