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

const RELAYER = 'evm-relayer';
const ROWS = 3000;

/** n rows by plain SQL, ids from `tag`, three to a created_at from `from` seconds past `base`. */
const seed = (tag: string, n: number, base = '2020-01-01', from = 0) =>
  `INSERT INTO transactions (id, relayer_id, network_type, status, created_at, updated_at, "from", "to", value, data, nonce, request, due_at)
   SELECT md5('${tag}' || i), '${RELAYER}', 'evm', 'confirmed', timestamp '${base}' + ((${from} + i) / 3) * interval '1 second', now(),
     '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', '1', '0x', NULL, '{}'::jsonb, NULL
   FROM generate_series(0, ${n - 1}) AS i`;

describe.each(await databaseKinds())('pages from marks on %s', (db) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ db, env: { RATE_LIMIT_REQUESTS_PER_SECOND: '1000000', RATE_LIMIT_BURST_SIZE: '1000000' } });
    await svc.rt.db.query(seed('a', ROWS));
  });
  afterAll(() => svc?.stop());

  async function asOffset(skip: number, take: number) {
    const rows = await svc.rt.db.query<{ id: string }>(
      `SELECT id FROM transactions WHERE relayer_id = $1 ORDER BY created_at DESC, id DESC LIMIT ${take} OFFSET ${skip}`,
      [RELAYER],
    );
    return rows.map((r) => r.id);
  }

  /** Deep pages (and those around the anchor and past the end) through REST and GraphQL, against the offset. */
  async function expectExact() {
    const [{ n }] = await svc.rt.db.query<{ n: number }>('SELECT count(*)::int AS n FROM transactions WHERE relayer_id = $1', [RELAYER]);
    for (const perPage of [20, 7, 100]) {
      const last = Math.ceil(n / perPage);
      const deep = Math.ceil((ANCHOR_DEPTH + MARK_EVERY) / perPage) + 1;
      for (const page of new Set([deep, deep + 1, Math.ceil(last / 2), last - 1, last, last + 1])) {
        const expected = await asOffset((page - 1) * perPage, perPage);
        const rest = await envelope(await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?page=${page}&per_page=${perPage}`));
        expect({ page, perPage, ids: (rest.data as { id: string }[]).map((t) => t.id), total: rest.pagination?.total_items }).toEqual({
          page,
          perPage,
          ids: expected,
          total: n,
        });
        const { data, errors } = await svc.gql(
          'query($r: ID!, $page: Int, $perPage: Int) { relayerTransactions(relayerId: $r, page: $page, perPage: $perPage) { items { id } } }',
          { r: RELAYER, page, perPage },
        );
        expect(errors).toBeUndefined();
        expect({ page, perPage, ids: data.relayerTransactions.items.map((t: { id: string }) => t.id) }).toEqual({ page, perPage, ids: expected });
      }
    }
  }

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
    expect(await asOffset(0, 1)).toEqual([]);
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
