import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/postgres.js';
import type { TestService } from '../support/service.js';
import { envelope, SOLANA_RELAYER, STELLAR_RELAYER, startRestService } from '../support/rest.js';

// Pages of a relayer's transactions at every depth, by number (REST and GraphQL) and by cursor
// (GraphQL first/after): the rows, their order and the totals are those of the plain
// ORDER BY created_at DESC, id DESC LIMIT/OFFSET the list was read with before deep pages were
// found otherwise, on both databases.

const RELAYER = 'evm-relayer';
const ROWS = 250;
const STATUSES = [null, 'confirmed', 'submitted', 'pending'] as const;

/** n rows of `relayer` by plain SQL, three to a created_at (the id decides among them), statuses in turn. */
const seed = (relayer: string, networkType: string, n: number, from = 0) =>
  `INSERT INTO transactions (id, relayer_id, network_type, status, created_at, updated_at, "from", "to", value, data, nonce, request, due_at)
   SELECT md5($$${relayer}$$ || i), $$${relayer}$$, $$${networkType}$$,
     (CASE WHEN i % 3 = 0 THEN 'confirmed' WHEN i % 3 = 1 THEN 'submitted' ELSE 'failed' END)::"TransactionStatus",
     timestamp '2020-01-01' + (i / 3) * interval '1 second', now(), '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
     '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', '1', '0x', i, '{}'::jsonb, NULL
   FROM generate_series(${from}, ${from + n - 1}) AS i`;

const FIELDS = 'edges { cursor node { id } } pageInfo { hasNextPage endCursor }';

describe.each(await databaseKinds())('deep pages on %s', (db) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ db, env: { RATE_LIMIT_REQUESTS_PER_SECOND: '1000000', RATE_LIMIT_BURST_SIZE: '1000000' } });
    await svc.rt.db.query(seed(RELAYER, 'evm', ROWS));
    await svc.rt.db.query(seed(SOLANA_RELAYER, 'solana', 40));
  });
  afterAll(() => svc?.stop());

  /** What the list answered before: a plain offset in the list's order. */
  async function asBefore(status: string | null, skip: number, take: number) {
    const where = status ? `relayer_id = $1 AND status = '${status}'` : 'relayer_id = $1';
    const rows = await svc.rt.db.query<{ id: string }>(
      `SELECT id FROM transactions WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${take} OFFSET ${skip}`,
      [RELAYER],
    );
    const [{ n }] = await svc.rt.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM transactions WHERE ${where}`, [RELAYER]);
    return { ids: rows.map((r) => r.id), total: n };
  }

  const gqlPage = async (status: string | null, page: number, perPage: number) => {
    const { data, errors } = await svc.gql(
      `query($r: ID!, $page: Int, $perPage: Int, $status: TransactionStatus) { relayerTransactions(relayerId: $r, page: $page, perPage: $perPage, status: $status) { items { id } pagination { currentPage perPage totalItems } pageInfo { hasNextPage endCursor } } }`,
      { r: RELAYER, page, perPage, status },
    );
    expect(errors).toBeUndefined();
    return data.relayerTransactions;
  };

  it.each(STATUSES)('answers every page as before, past the end included (status %s)', async (status) => {
    for (const perPage of [7, 20, 100]) {
      const { total } = await asBefore(status, 0, 1);
      const last = Math.ceil(total / perPage);
      for (let page = 1; page <= last + 2; page++) {
        const expected = await asBefore(status, (page - 1) * perPage, perPage);
        const rest = await envelope(
          await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?page=${page}&per_page=${perPage}${status ? `&status=${status}` : ''}`),
        );
        expect({ page, perPage, ids: (rest.data as { id: string }[]).map((t) => t.id), pagination: rest.pagination }).toEqual({
          page,
          perPage,
          ids: expected.ids,
          pagination: { current_page: page, per_page: perPage, total_items: total },
        });
        const gql = await gqlPage(status, page, perPage);
        expect({ page, perPage, ids: gql.items.map((t: { id: string }) => t.id), pagination: gql.pagination }).toEqual({
          page,
          perPage,
          ids: expected.ids,
          pagination: { currentPage: page, perPage, totalItems: total },
        });
        expect(gql.pageInfo.hasNextPage).toBe(page < last);
      }
    }
  });

  it('answers a deep row as the transaction itself reads', async () => {
    const rest = await envelope(await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?page=30&per_page=7`));
    const row = (rest.data as { id: string }[])[3];
    expect(row).toEqual((await envelope(await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions/${row.id}`))).data);
  });

  it('answers 404 for a deep page of a relayer that does not exist', async () => {
    const res = await svc.request('GET', '/api/v1/relayers/nobody/transactions?page=5000&per_page=20');
    expect(res.status).toBe(404);
  });

  // The last pages a route takes (page and per_page are int32): the skip passes 2^31 rows, and
  // twice the skip (the list's nearer end) 2^31 from page 2^30. An empty page with the list's
  // total, on every list, never a 500.
  const FAR = [
    [2147483646, 1],
    [2147483647, 1],
    [2147483647, 100],
    [1073741825, 2],
  ] as const;

  it('answers the farthest pages of every REST list empty, with its total', async () => {
    await svc.request('POST', '/api/v1/notifications', { id: 'far-hook', url: 'https://example.com/far' });
    const doc = (await (await svc.request('GET', '/api/v1/openapi.json')).json()) as {
      paths: Record<string, { get?: { parameters?: { name: string; in: string; schema: { maximum?: number; enum?: string[]; $ref?: string } }[] } }>;
    };
    const lists = Object.entries(doc.paths).filter(([, m]) => m.get?.parameters?.some((p) => p.name === 'page'));
    expect(lists.map(([p]) => p)).toEqual(expect.arrayContaining(['/api/v1/relayers', '/api/v1/relayers/{relayer_id}/transactions', '/api/v1/notifications']));
    const seen: string[] = [];
    for (const [template, { get }] of lists) {
      const page = get!.parameters!.find((p) => p.name === 'page')!;
      expect(page.schema.maximum).toBe(2147483647);
      const relayers = template.includes('{relayer_id}') ? [RELAYER, STELLAR_RELAYER] : [RELAYER];
      const statuses = get!.parameters!.some((p) => p.name === 'status') ? [null, 'canceled', 'confirmed'] : [null];
      for (const relayer of relayers) {
        for (const status of statuses) {
          const path = template.replace('{relayer_id}', relayer).replace('{notification_id}', 'far-hook');
          const q = status ? `&status=${status}` : '';
          const first = await envelope(await svc.request('GET', `${path}?per_page=1${q}`));
          if (template.endsWith('/transactions')) {
            const [{ n }] = await svc.rt.db.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM transactions WHERE relayer_id = $1${status ? ` AND status = '${status}'` : ''}`,
              [relayer],
            );
            expect(first.pagination!.total_items).toBe(n);
          }
          for (const [p, n] of FAR) {
            const res = await svc.request('GET', `${path}?page=${p}&per_page=${n}${q}`);
            const body = await envelope(res);
            expect({ path, status, p, n, code: res.status, data: body.data, pagination: body.pagination }).toEqual({
              path,
              status,
              p,
              n,
              code: 200,
              data: [],
              pagination: { current_page: p, per_page: n, total_items: first.pagination!.total_items },
            });
          }
          seen.push(path);
        }
      }
    }
    expect(seen.length).toBeGreaterThanOrEqual(8);
  });

  it('answers the farthest pages of every GraphQL list empty, with its total', async () => {
    await svc.request('POST', '/api/v1/notifications', { id: 'far-hook-2', url: 'https://example.com/far' });
    const { data } = await svc.gql('{ __schema { types { name fields { name args { name } } } } }');
    const listFields = (data.__schema.types as { name: string; fields: { name: string; args: { name: string }[] }[] | null }[]).flatMap((t) =>
      (t.fields ?? []).filter((f) => f.args.some((a) => a.name === 'page')).map((f) => `${t.name}.${f.name}`),
    );
    /** Each list field in a query that reaches it (its parent read by id). */
    const reach: Record<string, (args: string, relayer: string) => string> = {
      'Query.relayerTransactions': (a, r) => `relayerTransactions(relayerId: "${r}", ${a})`,
      'Relayer.transactions': (a, r) => `relayer(id: "${r}") { transactions(${a})`,
      'Notification.deliveries': (a) => `notification(id: "far-hook-2") { deliveries(${a})`,
      'Relayer.userOperations': (a, r) => `relayer(id: "${r}") { userOperations(${a})`,
    };
    for (const field of listFields) {
      const [type, name] = field.split('.');
      expect(type === 'Query' || reach[field], `a way to reach ${field}`).toBeTruthy();
      const open = reach[field] ?? ((a: string) => `${name}(${a})`);
      const close = type === 'Query' ? '' : ' }';
      const ofRelayer = field.endsWith('ransactions');
      const filtered = ofRelayer ? [null, 'canceled', 'confirmed'] : [null];
      for (const relayer of ofRelayer ? [RELAYER, STELLAR_RELAYER] : [RELAYER]) {
        for (const status of filtered) {
          const args = (p: number, n: number) => `page: ${p}, perPage: ${n}${status ? `, status: ${status}` : ''}`;
          const read = async (p: number, n: number) => {
            const r = await svc.gql(`{ x: ${open(args(p, n), relayer)} { items { __typename } pagination { currentPage perPage totalItems } }${close} }`);
            expect(r.errors, `${field} page ${p}`).toBeUndefined();
            return type === 'Query' ? r.data.x : Object.values(r.data.x as object)[0];
          };
          const { pagination: first } = await read(1, 1);
          for (const [p, n] of FAR) {
            expect({ field, relayer, status, p, n, ...(await read(p, n)) }).toEqual({
              field,
              relayer,
              status,
              p,
              n,
              items: [],
              pagination: { currentPage: p, perPage: n, totalItems: first.totalItems },
            });
          }
        }
      }
    }
    expect(listFields).toEqual(expect.arrayContaining(['Query.relayerTransactions', 'Relayer.transactions', 'Notification.deliveries', 'Query.relayers']));
  });

  /** Every row of the list by cursor, `first` at a time, through a root or a relayer's field; `between` runs after each page. */
  async function walk(status: string | null, first: number, between: (n: number) => Promise<void> = async () => {}, viaRelayer = false) {
    const ids: string[] = [];
    let after: string | null = null;
    for (let n = 0; ; n++) {
      const args = '(first: $first, after: $after, status: $status)';
      const query = viaRelayer
        ? `query($r: ID!, $first: Int, $after: String, $status: TransactionStatus) { relayer(id: $r) { transactions${args} { ${FIELDS} } } }`
        : `query($r: ID!, $first: Int, $after: String, $status: TransactionStatus) { relayerTransactions(relayerId: $r, ${args.slice(1, -1)}) { ${FIELDS} } }`;
      const { data, errors } = await svc.gql(query, { r: RELAYER, first, after, status });
      expect(errors).toBeUndefined();
      const page: { edges: { cursor: string; node: { id: string } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } = viaRelayer
        ? data.relayer.transactions
        : data.relayerTransactions;
      ids.push(...page.edges.map((e) => e.node.id));
      expect(page.edges.length).toBeLessThanOrEqual(first);
      expect(page.pageInfo.endCursor).toBe(page.edges.at(-1)?.cursor ?? null);
      if (!page.pageInfo.hasNextPage) return ids;
      after = page.pageInfo.endCursor;
      await between(n);
    }
  }

  it.each(STATUSES)('walks the list by cursor as by page (status %s)', async (status) => {
    const { ids } = await asBefore(status, 0, ROWS);
    expect(await walk(status, 7)).toEqual(ids);
    expect(await walk(status, 100, undefined, true)).toEqual(ids);
  });

  it('neither repeats nor skips a row when rows are added during a walk', async () => {
    const { ids } = await asBefore(null, 0, ROWS);
    let added = 0;
    const walked = await walk(null, 20, async (n) => {
      if (n % 3 !== 0) return;
      // Newer than every row of the walk, as a send accepted now is.
      await svc.rt.db.query(`${seed(RELAYER, 'evm', 2, 10_000 + added).replace("timestamp '2020-01-01' + (i / 3) * interval '1 second'", 'now()')}`);
      added += 2;
    });
    expect(added).toBeGreaterThan(0);
    expect(walked).toEqual(ids);
    // The added rows lead the list now: page 1 by number shows them.
    expect((await gqlPage(null, 1, added)).items).toHaveLength(added);
    await svc.rt.db.query(`DELETE FROM transactions WHERE nonce >= 10000 AND relayer_id = $1`, [RELAYER]);
  });

  it.each([
    ['a cursor that is not base64url', { after: 'not a cursor!' }, 'after: not a cursor of this list'],
    ['a cursor of something else', { after: Buffer.from('hello').toString('base64url') }, 'after: not a cursor of this list'],
    ['a cursor without an id', { after: Buffer.from('1577836800000:').toString('base64url') }, 'after: not a cursor of this list'],
    ['a cursor past year 9999', { after: Buffer.from('999999999999999:x').toString('base64url') }, 'after: not a cursor of this list'],
    ['an empty cursor', { after: '' }, 'after: not a cursor of this list'],
    ['a cursor too long', { after: 'A'.repeat(5000) }, 'after: not a cursor of this list'],
    ['first 0', { first: 0 }, 'first: must be an integer from 1 to 100'],
    ['first 101', { first: 101 }, 'first: must be an integer from 1 to 100'],
    ['page with after', { page: 2, after: Buffer.from('1:x').toString('base64url') }, 'give page and perPage, or first and after, not both'],
    ['perPage with first', { perPage: 5, first: 5 }, 'give page and perPage, or first and after, not both'],
  ])('refuses %s as a bad request', async (_, args, detail) => {
    const { data, errors } = await svc.gql(
      `query($r: ID!, $page: Int, $perPage: Int, $first: Int, $after: String) { relayerTransactions(relayerId: $r, page: $page, perPage: $perPage, first: $first, after: $after) { items { id } } }`,
      { r: RELAYER, ...args },
    );
    expect(data).toBeNull();
    expect(errors).toHaveLength(1);
    expect(errors![0]).toMatchObject({ message: 'Bad Request', extensions: { code: 'BAD_REQUEST' } });
    expect(errors![0].extensions.detail).toContain(detail);
  });

  it('has no page number for a page asked by cursor', async () => {
    const { errors } = await svc.gql(`{ relayerTransactions(relayerId: "${RELAYER}", first: 3) { pagination { currentPage } } }`);
    expect(errors?.[0]).toMatchObject({ extensions: { code: 'BAD_REQUEST' } });
    const { data } = await svc.gql(`{ relayerTransactions(relayerId: "${RELAYER}", first: 3) { pagination { perPage totalItems } } }`);
    expect(data.relayerTransactions.pagination).toEqual({ perPage: 3, totalItems: ROWS });
  });
});
