import { messages, PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openThreadedPGlite, type ThreadedPGlite } from '../../src/db/pglite-thread.js';

let thread: ThreadedPGlite;
let local: PGlite;
const SETUP = `CREATE TABLE t (id int PRIMARY KEY, big int8, flag bool, at timestamp(3), doc jsonb, tags text[], raw bytea, amount numeric, note text)`;
const ROW = `INSERT INTO t VALUES (1, 9007199254740993, true, '2026-11-25 10:00:00.123', '{"a":[1,2]}', '{x,"y z"}', '\\xdeadbeef', 1.50, NULL)`;

beforeAll(async () => {
  thread = await openThreadedPGlite(undefined, { maxPrepared: 64 });
  local = new PGlite();
  for (const db of [thread, local]) {
    await db.exec(SETUP);
    await db.exec(ROW);
  }
});
afterAll(async () => {
  await thread?.close();
  await local?.close();
});

it('reads every value as PGlite in the same process does, in both row modes and with a query’s own parsers', async () => {
  const sql = "SELECT *, $1::int8 AS param, ARRAY['2026-01-02'::date] AS days, ARRAY[1.5::float4, 2] AS halves FROM t WHERE id = $2";
  const params = [42n, 1];
  for (const opts of [undefined, { rowMode: 'array' as const }, { parsers: { 20: (v: string) => `int8:${v}` } }]) {
    const [a, b] = await Promise.all([thread.query(sql, params, opts), local.query(sql, params, opts)]);
    expect(a.rows).toEqual(b.rows);
    expect(a.fields).toEqual(b.fields);
  }
  const [a, b] = await Promise.all([thread.exec('SELECT tags, doc FROM t; SELECT 1 AS one'), local.exec('SELECT tags, doc FROM t; SELECT 1 AS one')]);
  expect(a.map((r) => r.rows)).toEqual(b.map((r) => r.rows));
});

it('commits a transaction whose function returns, and rolls back one that throws or rolls back', async () => {
  await thread.transaction(async (tx) => {
    await tx.query('INSERT INTO t (id) VALUES (2)');
  });
  await expect(
    thread.transaction(async (tx) => {
      await tx.query('INSERT INTO t (id) VALUES (3)');
      throw new Error('changed my mind');
    }),
  ).rejects.toThrow('changed my mind');
  await thread.transaction(async (tx) => {
    await tx.query('INSERT INTO t (id) VALUES (4)');
    await tx.rollback();
  });
  expect((await thread.query<{ id: number }>('SELECT id FROM t ORDER BY id')).rows.map((r) => r.id)).toEqual([1, 2]);
});

it('raises a database error with its class and fields, as Prisma’s adapter expects', async () => {
  const err = await thread.query('INSERT INTO t (id) VALUES (1)').catch((e) => e);
  expect(err).toBeInstanceOf(messages.DatabaseError);
  expect(err).toMatchObject({ code: '23505', constraint: 't_pkey', table: 't' });
  // The thread goes on after it.
  expect((await thread.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).rows[0].n).toBe(2);
});

it('refuses work once closed', async () => {
  const other = await openThreadedPGlite();
  await other.close();
  expect(other.closed).toBe(true);
  await expect(other.query('SELECT 1')).rejects.toThrow(/database thread/);
});

it('runs a named statement as an unnamed one, also after the transaction it was first parsed in failed or rolled back', async () => {
  const insert = { sql: 'INSERT INTO t (id, note) VALUES ($1, $2) RETURNING id, note', prepare: true };
  const read = { sql: 'SELECT id, note FROM t WHERE id = $1', prepare: true };
  // Parsed in a transaction whose next statement fails: the statement outlives the rollback.
  await expect(
    thread.batch(
      [
        { ...insert, params: [10, 'a'] },
        { ...insert, params: [10, 'again'] },
      ],
      { commit: true },
    ),
  ).rejects.toMatchObject({ code: '23505' });
  // Parsed nowhere: the transaction was aborted when it came, so it is parsed on its next use.
  await thread.transaction(async (tx) => {
    await expect(tx.query('SELECT 1/0')).rejects.toThrow(/division by zero/);
    await expect(tx.query(read.sql, [1], { prepare: true } as object)).rejects.toThrow(/aborted/);
  });
  for (let i = 0; i < 8; i++) {
    const { results } = await thread.batch(
      [
        { ...insert, params: [20 + i, `n${i}`] },
        { ...read, params: [20 + i] },
      ],
      { commit: true },
    );
    expect(results.map((r) => r.rows)).toEqual([[{ id: 20 + i, note: `n${i}` }], [{ id: 20 + i, note: `n${i}` }]]);
  }
  expect((await thread.read('SELECT id, note FROM t WHERE id = $1', [10], { prepare: true })).rows).toEqual([]);
  expect((await thread.read('SELECT id, note FROM t WHERE id = $1', [27], { prepare: true })).rows).toEqual([{ id: 27, note: 'n7' }]);
  // PGlite's own query() reads its answers as before, between and after the raw ones.
  expect((await thread.query('SELECT note FROM t WHERE id = $1', [21])).rows).toEqual([{ note: 'n1' }]);
  await thread.query('DELETE FROM t WHERE id >= 10');
});
