import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANCHOR_DEPTH, MARK_EVERY } from '../../src/core/transactions/pages.js';
import { databaseKinds } from '../support/postgres.js';
import type { TestService } from '../support/service.js';
import { envelope, startRestService } from '../support/rest.js';

// Deep pages of a list long enough to be read from this runtime's marks along it (pages.ts), while
// rows are added between reads as another instance would add them (plain SQL, unseen by this
// runtime): at the top, far below it (a transaction that started long before it committed), beside
// rows of the same created_at, and while the relayer is deleted with its history and made again.
// Every page answers what ORDER BY created_at DESC, id DESC OFFSET/LIMIT reads at that moment.
// Lists filtered by status have marks of their own, and rows also come and go there as they change
// status: one at a time, several in one statement (one out and one in: the same length), far
// below the top and near it.

const RELAYER = 'evm-relayer';
const ROWS = 3000;

/**
 * n rows by plain SQL, ids from `tag`, three to a created_at from `from` seconds past `base`, all
 * confirmed or in the status `status` gives (an SQL expression of i, the row's number).
 */
const seed = (tag: string, n: number, base = '2020-01-01', from = 0, status = `'confirmed'`) =>
  `INSERT INTO transactions (id, relayer_id, network_type, status, created_at, updated_at, "from", "to", value, data, nonce, request, due_at)
   SELECT md5('${tag}' || i), '${RELAYER}', 'evm', (${status})::"TransactionStatus", timestamp '${base}' + ((${from} + i) / 3) * interval '1 second', now(),
     '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', '1', '0x', NULL, '{}'::jsonb, NULL
   FROM generate_series(0, ${n - 1}) AS i`;

/**
 * Deep pages (and those around the anchor and past the end) of the relayer's list, or of its rows
 * of one status, through REST and GraphQL, against the offset read just before.
 */
const exactPages =
  (svc: TestService, status?: string) =>
  async (perPages = [20, 7, 100]) => {
    const where = `relayer_id = $1${status ? ` AND status = '${status}'` : ''}`;
    const asOffset = async (skip: number, take: number) =>
      (
        await svc.rt.db.query<{ id: string }>(`SELECT id FROM transactions WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${take} OFFSET ${skip}`, [
          RELAYER,
        ])
      ).map((r) => r.id);
    const [{ n }] = await svc.rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM transactions WHERE ${where}`, [RELAYER]);
    for (const perPage of perPages) {
      const last = Math.ceil(n / perPage);
      const deep = Math.ceil((ANCHOR_DEPTH + MARK_EVERY) / perPage) + 1;
      for (const page of new Set([deep, deep + 1, Math.ceil(last / 2), last - 1, last, last + 1])) {
        const expected = await asOffset((page - 1) * perPage, perPage);
        const rest = await envelope(
          await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?page=${page}&per_page=${perPage}${status ? `&status=${status}` : ''}`),
        );
        expect({ status, page, perPage, ids: (rest.data as { id: string }[]).map((t) => t.id), total: rest.pagination?.total_items }).toEqual({
          status,
          page,
          perPage,
          ids: expected,
          total: n,
        });
        const { data, errors } = await svc.gql(
          'query($r: ID!, $page: Int, $perPage: Int, $status: TransactionStatus) { relayerTransactions(relayerId: $r, page: $page, perPage: $perPage, status: $status) { items { id } } }',
          { r: RELAYER, page, perPage, status: status ?? null },
        );
        expect(errors).toBeUndefined();
        expect({ status, page, perPage, ids: data.relayerTransactions.items.map((t: { id: string }) => t.id) }).toEqual({
          status,
          page,
          perPage,
          ids: expected,
        });
      }
    }
  };

describe.each(await databaseKinds())('pages from marks on %s', (db) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ db, env: { RATE_LIMIT_REQUESTS_PER_SECOND: '1000000', RATE_LIMIT_BURST_SIZE: '1000000' } });
    await svc.rt.db.query(seed('a', ROWS));
  });
  afterAll(() => svc?.stop());

  const expectExact = () => exactPages(svc)();

  it('answers every deep page exactly, before and after rows are added at the top', async () => {
    await expectExact();
    await svc.rt.db.query(seed('b', 5, '2021-01-01'));
    await expectExact();
    // More than the anchor's depth: new marks are taken down from the new top.
    await svc.rt.db.query(seed('c', ANCHOR_DEPTH + 3 * MARK_EVERY, '2022-01-01'));
    await expectExact();
    await svc.rt.db.query(seed('d', 1, '2023-01-01'));
    await expectExact();
  });

  it('answers exactly when rows are added below the top: oldest of all, and beside rows of the same created_at', async () => {
    await expectExact();
    await svc.rt.db.query(seed('e', 2, '2019-01-01'));
    await expectExact();
    // In the middle of the first rows, one created_at shared with three rows, ids on both sides of theirs.
    await svc.rt.db.query(seed('f', 9, '2020-01-01', 1500));
    await expectExact();
    // Below the anchor, beside the rows of 2022, with no change of length after it is read.
    await svc.rt.db.query(seed('g', 4, '2022-01-01', 30));
    await expectExact();
  });

  it('answers exactly when the relayer is deleted with its history and made again', async () => {
    await expectExact();
    await svc.rt.db.query(`CREATE TABLE relayer_copy AS SELECT * FROM relayers WHERE id = '${RELAYER}'`);
    await svc.rt.db.query(`DELETE FROM relayers WHERE id = '${RELAYER}'`);
    await svc.rt.db.query(`INSERT INTO relayers SELECT * FROM relayer_copy`);
    await svc.rt.db.query('DROP TABLE relayer_copy');
    const page = await envelope(await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?page=100&per_page=20`));
    expect({ ids: page.data, total: page.pagination?.total_items }).toEqual({ ids: [], total: 0 });
    // As many rows as before, other ones: the length alone does not tell.
    const [{ n }] = await svc.rt.db.query<{ n: number }>('SELECT count(*)::int AS n FROM transactions');
    expect(n).toBe(0);
    await svc.rt.db.query(seed('h', ROWS + 5 + ANCHOR_DEPTH + 3 * MARK_EVERY + 1 + 2 + 9 + 4));
    await expectExact();
    await svc.rt.db.query(seed('i', 2 * ROWS, '2018-01-01'));
    await expectExact();
  });
});

describe.each(await databaseKinds())('pages of a status from marks on %s', (db) => {
  let svc: TestService;
  /** Two thirds confirmed and a third failed (those where `failed` holds), then 60 mined rows newer than all of them. */
  const seedMixed = (tag: string, failed = 'i % 3 = 0') => [
    seed(tag, ROWS, '2020-01-01', 0, `CASE WHEN ${failed} THEN 'failed' ELSE 'confirmed' END`),
    seed(`${tag}-mined`, 60, '2021-01-01', 0, `'mined'`),
  ];
  beforeAll(async () => {
    svc = await startRestService({ db, env: { RATE_LIMIT_REQUESTS_PER_SECOND: '1000000', RATE_LIMIT_BURST_SIZE: '1000000' } });
    for (const sql of seedMixed('a')) await svc.rt.db.query(sql);
  });
  afterAll(() => svc?.stop());

  const sql = (text: string) => svc.rt.db.query(text);
  /** Every list this relayer's marks are kept for: whole, confirmed, failed. */
  async function expectExact() {
    for (const status of [undefined, 'confirmed', 'failed']) await exactPages(svc, status)();
  }
  /** The id of the row `depth` rows from the top of a status's list. */
  async function at(status: string, depth: number) {
    const [{ id }] = await svc.rt.db.query<{ id: string }>(
      `SELECT id FROM transactions WHERE relayer_id = $1 AND status = '${status}' ORDER BY created_at DESC, id DESC OFFSET ${depth} LIMIT 1`,
      [RELAYER],
    );
    return id;
  }
  const move = async (to: string, ...ids: string[]) => sql(`UPDATE transactions SET status = '${to}' WHERE id IN (${ids.map((id) => `'${id}'`).join(', ')})`);

  it('answers exactly when the relayer is deleted and made again with as many rows of the status, some the same', async () => {
    await expectExact();
    await sql(`CREATE TABLE relayer_copy AS SELECT * FROM relayers WHERE id = '${RELAYER}'`);
    await sql(`DELETE FROM relayers WHERE id = '${RELAYER}'`);
    await sql(`INSERT INTO relayers SELECT * FROM relayer_copy`);
    await sql('DROP TABLE relayer_copy');
    // The same rows again, the failed ones all in the older half: each status has as many rows as
    // before, the newer half's confirmed rows (marks among them) the very rows it had, at other ranks.
    for (const text of seedMixed('a', `i < ${ROWS / 2} AND i % 3 < 2`)) await sql(text);
    await expectExact();
  });

  it('answers exactly while rows leave and enter a status one statement at a time, far below the top and near it', async () => {
    await expectExact();
    await move('failed', await at('confirmed', 1500));
    await expectExact();
    // Into the status far below its top: an old transaction confirmed late.
    await move('confirmed', await at('failed', 700));
    await expectExact();
    // Into it at the top, as transactions are confirmed: marks follow without being taken again.
    await move('confirmed', ...(await Promise.all([0, 1, 2, 3, 4].map((d) => at('mined', d)))));
    await expectExact();
    await move('confirmed', ...(await Promise.all(Array.from({ length: 20 }, (_, d) => at('mined', d)))));
    await expectExact();
  });

  it('answers exactly when as many rows enter a status as leave it: in one statement, and in two', async () => {
    await expectExact();
    const [out, into] = [await at('confirmed', 1200), await at('failed', 400)];
    await sql(`UPDATE transactions SET status = (CASE status WHEN 'confirmed' THEN 'failed' ELSE 'confirmed' END)::"TransactionStatus"
      WHERE id IN ('${out}', '${into}')`);
    await expectExact();
    const [out2, into2] = [await at('confirmed', 800), await at('failed', 900)];
    await move('failed', out2);
    await move('confirmed', into2);
    await expectExact();
    // A row that leaves and comes back to the same place: the same rows, marks taken again or not.
    const back = await at('confirmed', 1000);
    await move('failed', back);
    await move('confirmed', back);
    await expectExact();
  });

  it('answers exactly while a row leaves the status before every read (marks let go, then taken again)', async () => {
    await expectExact();
    // One deep page a change: marks retaken serve one page each, so they are let go a while.
    for (let i = 0; i < 8; i++) {
      await move('failed', await at('confirmed', 900 + 37 * i));
      const expected = await svc.rt.db.query<{ id: string }>(
        `SELECT id FROM transactions WHERE relayer_id = $1 AND status = 'confirmed' ORDER BY created_at DESC, id DESC LIMIT 20 OFFSET 1000`,
        [RELAYER],
      );
      const page = await envelope(await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?page=51&per_page=20&status=confirmed`));
      expect((page.data as { id: string }[]).map((t) => t.id)).toEqual(expected.map((r) => r.id));
    }
    await expectExact();
  });

  it('answers exactly when rows of a status are inserted and deleted between reads', async () => {
    await expectExact();
    await sql(seed('n', 5, '2022-01-01'));
    await expectExact();
    await sql(seed('o', ANCHOR_DEPTH + 2 * MARK_EVERY, '2023-01-01', 0, `CASE WHEN i % 4 = 0 THEN 'failed' ELSE 'confirmed' END`));
    await expectExact();
    // Deep, beside rows of the same created_at.
    await sql(seed('p', 7, '2020-01-01', 1200));
    await expectExact();
    // As many deleted deep as inserted at the top: the same length.
    await sql(`DELETE FROM transactions WHERE id IN ('${await at('confirmed', 1800)}', '${await at('confirmed', 1100)}')`);
    await sql(seed('q', 2, '2024-01-01'));
    await expectExact();
  });
});
