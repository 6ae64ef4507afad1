import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database, Statement } from '../../src/db/client.js';
import { isUniqueViolation } from '../../src/db/unique-violation.js';
import { claimDue, dropStaleLeases } from '../../src/db/lease.js';
import type { Relayer, Transaction } from '../../src/generated/prisma/client.js';
import { readRelayers } from '../../src/core/relayers/service.js';
import { transactionUpdates } from '../../src/core/notifications/events.js';
import { CLAIM_MINED, claimMinedNonces, insertTransactions, saveTransactions, TRANSACTION_COLUMNS } from '../../src/core/transactions/store.js';
import type { NewTransaction } from '../../src/core/transactions/rows.js';
import { createState } from '../../src/core/state.js';
import { heldDueMs } from '../../src/core/transactions/held.js';
import type { Runtime } from '../../src/core/runtime.js';
import { line } from '../../src/lib/line.js';
import { createMetrics } from '../../src/metrics/index.js';
import { families } from '../support/families.js';
import { databaseKinds } from '../support/postgres.js';
import { openTestDatabase } from '../support/pglite.js';

// The hot paths write and read transaction rows in raw SQL: what they return must be exactly what
// Prisma reads back for the same row, on both databases.
describe.each(await databaseKinds())('raw transaction rows on %s', (kind) => {
  let db: Database;
  let drop: (() => Promise<void>) | undefined;

  /** A plain EVM relayer `id` of account `address`, for rows to belong to. */
  const addRelayer = (id: string, address = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266') =>
    db.prisma.relayer.create({ data: { id, name: id, network: 'localnet', networkType: 'evm', signerId: 's', address, policies: {} } });

  beforeAll(async () => {
    ({ db, drop } = await openTestDatabase(kind));
    await addRelayer('r');
    await db.prisma.notification.create({ data: { id: 'hook', type: 'webhook', url: 'http://127.0.0.1:9/hook' } });
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  /** The relayer of every row, here without a notification: the insert queues no delivery. */
  const NO_HOOK = { relayers: [{ id: 'r', notificationId: null }] };
  const handle = () => ({ db, families, notifications: { events: { publish() {} }, sender: line() } }) as unknown as Runtime;
  /** A runtime of instance `w` for the step's saves and claims; `publish` sees what they publish. */
  const runtime = (publish: (topic: string, key: string, tx: Transaction) => void = () => {}) =>
    ({
      db,
      instanceId: 'w',
      families,
      state: createState(),
      notifications: { events: { publish }, sender: line() },
      metrics: createMetrics(),
    }) as unknown as Runtime;
  const full = (nonce: bigint): NewTransaction => ({
    id: randomUUID(),
    relayerId: 'r',
    networkType: 'evm',
    from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    to: '0x000000000000000000000000000000000000dEaD',
    value: '340282366920938463463374607431768211455',
    data: '0xabcdef01',
    nonce,
    gasLimit: 23_100n,
    gasPrice: null,
    maxFeePerGas: '30000000000',
    maxPriorityFeePerGas: '1000000000',
    speed: 'fast',
    validUntil: new Date('2031-01-02T03:04:05.678Z'),
    request: { to: '0x000000000000000000000000000000000000dEaD', nested: { list: [1, 'two', null] } },
    idempotencyKey: 'key-1',
    requestDigest: 'digest',
  });
  const bare: NewTransaction = {
    id: randomUUID(),
    relayerId: 'r',
    networkType: 'solana',
    from: 'addr',
    to: null,
    data: null,
    nonce: null,
    gasLimit: null,
    gasPrice: null,
    maxFeePerGas: null,
    maxPriorityFeePerGas: null,
    speed: null,
    validUntil: new Date('2031-01-02T03:04:05.000Z'),
    request: { transaction: 'AQ==' },
    idempotencyKey: null,
    requestDigest: null,
  };

  it('reads relayers exactly as Prisma reads them, every field set or left null, and none for an unknown id', async () => {
    await db.prisma.relayer.create({
      data: {
        id: 'full',
        name: 'full',
        network: 'sepolia',
        networkType: 'evm',
        signerId: 's',
        address: '0x000000000000000000000000000000000000dEaD',
        paused: true,
        systemDisabled: true,
        disabledReason: { kind: 'balance', details: ['low', 1.5, null] },
        notificationId: 'hook',
        customRpcUrls: [{ url: 'http://127.0.0.1:8545', weight: 100 }],
        policies: { min_balance: '340282366920938463463374607431768211455', eip1559_pricing: true },
        nextNonce: 2n ** 62n,
        checkAt: new Date('2026-11-29T01:02:03.456Z'),
        checkAttempts: 3,
        configDigest: 'digest',
      },
    });
    const ids = ['full', 'r', 'missing'];
    const raw = await readRelayers(runtime(), ids);
    const prisma = await db.prisma.relayer.findMany({ where: { id: { in: ids } } });
    const byId = (rows: Relayer[]) => Object.fromEntries(rows.map((r) => [r.id, r]));
    expect(raw).toHaveLength(2);
    expect(byId(raw)).toStrictEqual(byId(prisma));
    await db.prisma.relayer.delete({ where: { id: 'full' } });
  });

  it('inserts rows in the order given and returns each exactly as Prisma reads it', async () => {
    const rows = [full(7n), bare, full(8n)].map((r, i) => (i === 2 ? { ...r, idempotencyKey: 'key-2' } : r));
    const written = await insertTransactions(handle(), rows, NO_HOOK);
    expect(written.map((t) => t.id)).toEqual(rows.map((r) => r.id));
    for (const t of written) expect(t).toEqual(await db.prisma.transaction.findUniqueOrThrow({ where: { id: t.id } }));
    expect(written[0]).toMatchObject({ status: 'pending', value: rows[0].value, nonce: 7n, gasLimit: 23_100n, hashes: [], attempts: 0 });
    expect(written[1]).toMatchObject({ value: '0', to: null, nonce: null, speed: null });
  });

  it('returns rows written leased, born final or offset by a guard exactly as Prisma reads them', async () => {
    const leased = await insertTransactions(handle(), [{ ...full(40n), idempotencyKey: null }], { ...NO_HOOK, leaseOwner: 'me' });
    const final = await insertTransactions(
      handle(),
      [{ ...full(41n), idempotencyKey: null, status: 'canceled', statusReason: 'why', chainState: { phase: 'done', list: [1] } }],
      NO_HOOK,
    );
    const guard = { sql: `UPDATE relayers SET name = name WHERE id = $4 RETURNING id AS relayer_id, 100::bigint AS base`, params: ['r'] };
    const offset = await insertTransactions(handle(), [{ ...full(2n), idempotencyKey: null }], { ...NO_HOOK, guard });
    expect(leased[0]).toMatchObject({ leaseOwner: 'me', status: 'pending' });
    expect(leased[0].leaseUntil!.getTime()).toBeGreaterThan(Date.now());
    expect(final[0]).toMatchObject({ status: 'canceled', statusReason: 'why', leaseOwner: null, leaseUntil: null });
    expect(offset[0].nonce).toBe(102n);
    for (const t of [...leased, ...final, ...offset]) expect(t).toEqual(await db.prisma.transaction.findUniqueOrThrow({ where: { id: t.id } }));
  });

  it('writes free the rows a relayer holds, each due on its schedule, and the others leased', async () => {
    const guard = { sql: `UPDATE relayers SET name = name WHERE id = $4 RETURNING id AS relayer_id, 200::bigint AS base`, params: ['r'] };
    const held = new Map([['r', { from: 202n, per: 2, firstMs: 3_000, everyMs: 1_000 }]]);
    const before = Date.now();
    const rows = [0n, 1n, 2n, 3n, 4n].map((n) => ({ ...full(n), idempotencyKey: null }));
    const written = await insertTransactions(handle(), rows, { ...NO_HOOK, guard, leaseOwner: 'me', held });
    expect(written.map((t) => [t.nonce, t.leaseOwner])).toEqual([
      [200n, 'me'],
      [201n, 'me'],
      [202n, null],
      [203n, null],
      [204n, null],
    ]);
    expect(written.slice(2).map((t) => t.leaseUntil)).toEqual([null, null, null]);
    // Due in 3 s, then a second later every 2 nonces further: as the pipeline computes it (heldDueMs).
    const dueIn = written.slice(2).map((t) => Math.round((t.dueAt!.getTime() - before) / 1_000));
    expect(dueIn).toEqual([3, 3, 4]);
    expect(dueIn).toEqual(written.slice(2).map((t) => heldDueMs(held.get('r')!, t.nonce!) / 1_000));
    for (const t of written) expect(t).toEqual(await db.prisma.transaction.findUniqueOrThrow({ where: { id: t.id } }));
  });

  it('reports a repeated idempotency key as a unique violation', async () => {
    const first = { ...full(20n), idempotencyKey: 'dup' };
    await insertTransactions(handle(), [first], NO_HOOK);
    const again = await insertTransactions(handle(), [{ ...full(21n), idempotencyKey: 'dup' }], NO_HOOK).catch((e) => e);
    expect(isUniqueViolation(again)).toBe(true);
    expect(isUniqueViolation(new Error('other'))).toBe(false);
  });

  it('claims due rows and reads them back as Prisma does', async () => {
    const claimed = await claimDue<Transaction>(db, 'transactions', {
      owner: 'me',
      limit: 10,
      leaseMs: 30_000,
      where: 'true',
      returning: TRANSACTION_COLUMNS,
    });
    expect(claimed.length).toBeGreaterThan(0);
    for (const t of claimed) {
      expect(t.leaseOwner).toBe('me');
      expect(t).toEqual(await db.prisma.transaction.findUniqueOrThrow({ where: { id: t.id } }));
    }
  });

  it('prepared reads answer as unprepared ones, on every connection and past the bound of prepared texts; a bad one fails each time', async () => {
    const sql = `SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE id = $1`;
    const ids = (await db.query<{ id: string }>('SELECT id FROM transactions ORDER BY id')).map((r) => r.id);
    const plain = await Promise.all(ids.map((id) => db.read<Transaction>(sql, [id])));
    // Concurrent reads take several of the pool's connections; each prepares the statement once.
    for (let round = 0; round < 3; round++) {
      expect(await Promise.all([...ids, ...ids, ...ids].map((id) => db.read<Transaction>(sql, [id], { prepare: true })))).toEqual([
        ...plain,
        ...plain,
        ...plain,
      ]);
    }
    await db.query('UPDATE transactions SET status_reason = $2 WHERE id = $1', [ids[0], 'changed after preparing']);
    expect((await db.read<Transaction>(sql, [ids[0]], { prepare: true }))[0].statusReason).toBe('changed after preparing');
    const texts = Array.from({ length: 80 }, (_, i) => `SELECT ${i}::int AS n, count(*)::int AS c FROM transactions WHERE id = $1`);
    expect((await Promise.all(texts.map((t) => db.read<{ n: number; c: number }>(t, [ids[0]], { prepare: true })))).map((r) => r[0])).toEqual(
      texts.map((_, n) => ({ n, c: 1 })),
    );
    for (let i = 0; i < 2; i++) {
      await expect(db.read('SELECT no_such_column FROM transactions WHERE id = $1', [ids[0]], { prepare: true })).rejects.toThrow(/no_such_column/);
    }
  });

  /** The plan cache mode of as many of the pool's connections as 12 queries at once take. */
  const planCacheModes = async () =>
    new Set(
      (await Promise.all(Array.from({ length: 12 }, () => db.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode')))).map(([r]) => r.plan_cache_mode),
    );

  it('plans named statements at every run, on every connection: a plan made while the table was small is not kept', async () => {
    expect(await planCacheModes()).toEqual(new Set(['force_custom_plan']));
  });

  it('plans the statements of a transaction that asks for it once per connection, for that transaction only', async () => {
    const show = { sql: 'SHOW plan_cache_mode', params: [] };
    const modes = await Promise.all(Array.from({ length: 4 }, () => db.transaction((t) => t.run([show], { commit: true }), { planOnce: true })));
    expect(modes.map(([[r]]) => r)).toEqual(Array(4).fill({ plan_cache_mode: 'force_generic_plan' }));
    expect(await planCacheModes()).toEqual(new Set(['force_custom_plan']));
    // Past the five custom plans after which PostgreSQL's default would weigh a generic one.
    for (let i = 0; i < 8; i++) {
      const [tx] = await insertTransactions(handle(), [{ ...full(BigInt(5000 + i)), idempotencyKey: null }], { relayers: [{ id: 'r', notificationId: null }] });
      expect(tx).toEqual(await db.prisma.transaction.findUniqueOrThrow({ where: { id: tx.id } }));
    }
  });

  it("caches the foreign-key lookups of an insert's rows for its own database transaction only", async () => {
    const [tx] = await insertTransactions(handle(), [{ ...full(10n), idempotencyKey: null }], { relayers: [{ id: 'r', notificationId: 'hook' }] });
    const deliveries = transactionUpdates(families, [{ relayer: { id: 'r', notificationId: 'hook' }, transaction: tx }]);
    const [, [inside]] = await db.transaction((t) => t.run([deliveries!, { sql: 'SHOW plan_cache_mode', params: [] }]));
    expect(inside).toEqual({ plan_cache_mode: 'auto' });
    expect(await planCacheModes()).toEqual(new Set(['force_custom_plan']));
    expect(await db.prisma.delivery.count({ where: { transactionId: tx.id } })).toBe(2);
  });

  it("keeps a contract call's row whole: no value of a row shorter than a page is compressed", async () => {
    const data = `0x${'a9059cbb'.repeat(125)}`;
    const [tx] = await insertTransactions(handle(), [{ ...full(11n), idempotencyKey: null, data, request: { to: full(0n).to, data } }], NO_HOOK);
    const [row] = await db.query<Record<string, number>>(
      `SELECT pg_column_size(t.*) AS "row", pg_column_size(data) AS data, octet_length(data) AS "dataText",
         pg_column_size(request) AS request, octet_length(request::text) AS "requestText" FROM transactions t WHERE id = $1`,
      [tx.id],
    );
    expect(row.row).toBeGreaterThan(2300);
    expect(row.data).toBeGreaterThanOrEqual(row.dataText);
    expect(row.request).toBeGreaterThanOrEqual(row.requestText);
  });

  it('queues webhook deliveries in the order given', async () => {
    const [tx] = await insertTransactions(handle(), [{ ...full(9n), idempotencyKey: null }], NO_HOOK);
    const statuses = ['sent', 'submitted', 'mined', 'confirmed'] as const;
    const deliveries = transactionUpdates(
      families,
      statuses.map((status) => ({ relayer: { id: 'r', notificationId: 'hook' }, transaction: { ...tx, status } })),
    );
    await db.transaction((t) => t.run([deliveries!]));
    const queued = await db.prisma.delivery.findMany({ where: { transactionId: tx.id }, orderBy: { seq: 'asc' } });
    expect(queued.map((d) => JSON.parse(d.body).payload.status)).toEqual([...statuses]);
    expect(queued.every((d) => d.status === 'pending' && d.notificationId === 'hook' && d.relayerId === 'r')).toBe(true);
  });

  it('saves a batch of leased rows: each its own changes, read back as Prisma reads them; a row whose lease was taken is left alone', async () => {
    await db.prisma.relayer.update({ where: { id: 'r' }, data: { notificationId: 'hook' } });
    const rows = [full(30n), full(31n), full(32n)].map((r) => ({ ...r, idempotencyKey: null }));
    await insertTransactions(handle(), rows, NO_HOOK);
    const ids = rows.map((r) => `'${r.id}'`).join(', ');
    const claimed = await claimDue<Transaction>(db, 'transactions', {
      owner: 'w',
      limit: 10,
      leaseMs: 30_000,
      where: `id IN (${ids})`,
      orderBy: 'nonce',
      returning: TRANSACTION_COLUMNS,
    });
    const [a, b, c] = rows.map((r) => claimed.find((t) => t.id === r.id)!);
    await db.prisma.transaction.update({ where: { id: c.id }, data: { leaseOwner: 'other' } });
    const published: [string, string][] = [];
    const rt = runtime((topic, _key, tx) => published.push([tx.id, `${topic}:${tx.status}`]));
    const sentAt = new Date('2030-01-01T00:00:00.123Z');
    const dueAt = new Date('2030-01-01T00:00:05.456Z');

    const saved = await saveTransactions(rt, 'w', [
      { before: a, patch: { status: 'sent', hash: '0xaa', hashes: ['0xaa'], chainState: { phase: 'signed', list: [1, 'x'] } }, release: false },
      { before: b, patch: { status: 'submitted', sentAt, dueAt }, via: ['sent'], release: true },
      { before: c, patch: { status: 'sent', hash: '0xcc' }, release: false },
    ]);

    expect([...saved.keys()].sort()).toEqual([a.id, b.id].sort());
    for (const id of [a.id, b.id]) expect(saved.get(id)).toEqual(await db.prisma.transaction.findUniqueOrThrow({ where: { id } }));
    expect(saved.get(a.id)).toMatchObject({
      status: 'sent',
      hash: '0xaa',
      hashes: ['0xaa'],
      chainState: { phase: 'signed', list: [1, 'x'] },
      leaseOwner: 'w',
      request: rows[0].request,
      value: rows[0].value,
    });
    expect(saved.get(b.id)).toMatchObject({
      status: 'submitted',
      sentAt,
      dueAt,
      hash: null,
      hashes: [],
      leaseOwner: null,
      leaseUntil: null,
      data: rows[1].data,
    });
    expect(await db.prisma.transaction.findUniqueOrThrow({ where: { id: c.id } })).toMatchObject({ status: 'pending', hash: null, leaseOwner: 'other' });

    const queued = await db.prisma.delivery.findMany({ where: { transactionId: { in: [a.id, b.id, c.id] } }, orderBy: { seq: 'asc' } });
    expect(queued.map((d) => [d.transactionId, JSON.parse(d.body).payload.status])).toEqual([
      [a.id, 'sent'],
      [b.id, 'sent'],
      [b.id, 'submitted'],
    ]);
    expect(published.filter(([, e]) => e.startsWith('transaction:id'))).toEqual([
      [a.id, 'transaction:id:sent'],
      [b.id, 'transaction:id:sent'],
      [b.id, 'transaction:id:submitted'],
    ]);
    // The status-change counter counts what the outbox reported, passed-through statuses included.
    const counted = (await rt.metrics.registry.getSingleMetric('relayer_transaction_status_changes_total')!.get()).values;
    expect(counted.map((v) => [v.labels.status, v.value]).sort()).toEqual([
      ['sent', 2],
      ['submitted', 1],
    ]);
  });

  it('claims rows the chain mined past as Prisma reads them: from its own saves where no one wrote them since, else in full', async () => {
    await addRelayer('mined', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8');
    const rows = [full(40n), full(41n), full(42n), full(43n)].map((r) => ({ ...r, relayerId: 'mined', idempotencyKey: null }));
    await insertTransactions(handle(), rows, { relayers: [{ id: 'mined', notificationId: null }], leaseOwner: 'w' });
    const leased = await db.read<Transaction>(`SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE relayer_id = 'mined' ORDER BY nonce`);
    const rt = runtime();
    const inFlight = new Date(Date.now() + 60_000);
    const saved = await saveTransactions(
      rt,
      'w',
      leased.map((tx) => ({
        before: tx,
        patch: { status: 'submitted', hash: `0x${tx.nonce}`, chainState: { phase: 'broadcast', at: [tx.nonce!.toString()] }, dueAt: inFlight },
        release: true,
      })),
    );
    const [a, b, c, d] = leased.map((tx) => saved.get(tx.id)!);
    // Since the saves: b moved to another nonce and given a due time (statements that leave updated_at),
    // c saved by another instance (a new version), d not mined yet.
    await db.query(`UPDATE transactions SET nonce = 44, due_at = now() WHERE id = '${b.id}'`);
    await db.query(
      `UPDATE transactions SET chain_state = '{"phase": "mined"}', status = 'mined', updated_at = now() + interval '1 second' WHERE id = '${c.id}'`,
    );
    await db.query(`UPDATE transactions SET nonce = 50 WHERE id = '${d.id}'`);

    // The nonces the chain passed since the last look, 41 to 44: a (40) was passed before.
    const claimed = await claimMinedNonces(rt, [{ relayerId: 'mined', from: 41n, below: 45n }]);
    expect(claimed.map((t) => t.id).sort()).toEqual([b.id, c.id].sort());
    for (const tx of claimed) expect(tx).toEqual(await db.prisma.transaction.findUniqueOrThrow({ where: { id: tx.id } }));
    expect(claimed.find((t) => t.id === b.id)).toMatchObject({ nonce: 44n, hash: '0x41', leaseOwner: 'w' });
    expect(claimed.find((t) => t.id === c.id)).toMatchObject({ status: 'mined', chainState: { phase: 'mined' } });
    // b and c are held now: from 40, only a (a row saved here, read back from memory) is left.
    const left = await claimMinedNonces(rt, [{ relayerId: 'mined', from: 40n, below: 45n }]);
    expect(left).toEqual([await db.prisma.transaction.findUniqueOrThrow({ where: { id: a.id } })]);
    expect(await claimMinedNonces(rt, [{ relayerId: 'mined', from: 40n, below: 45n }])).toEqual([]);
  });

  it('claims rows the chain mined past by a seek in the (relayer_id, nonce) index, before and after statistics are gathered', async () => {
    await addRelayer('plan');
    // A relayer's long history of final rows, and a few in flight at the nonces the chain just passed.
    await db.query(`INSERT INTO transactions (id, relayer_id, network_type, "from", nonce, request, updated_at, status, due_at)
      SELECT gen_random_uuid(), 'plan', 'evm', '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', n, '{}', now(),
        CASE WHEN n < 3000 THEN 'confirmed'::"TransactionStatus" ELSE 'submitted' END, CASE WHEN n < 3000 THEN NULL ELSE now() END
      FROM generate_series(0, 3009) n`);
    const params = [JSON.stringify([{ relayer_id: 'plan', lo: 3000, hi: 3005 }]), 'nobody', '30000'];
    for (const analyzed of [false, true]) {
      if (analyzed) await db.query('ANALYZE transactions');
      for (const sql of CLAIM_MINED) {
        const plan = (await db.read<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, params)).map((r) => r['QUERY PLAN']).join('\n');
        expect(plan, plan).toMatch(
          /Index Scan using transactions_relayer_id_nonce_key on transactions[^\n]*\n\s*Index Cond: \(\(relayer_id = r\.relayer_id\) AND \(nonce >= r\.lo\) AND \(nonce < r\.hi\)\)/,
        );
        expect(plan, plan).not.toMatch(/Seq Scan on transactions/);
      }
    }
  });

  it('runs hand-written database transactions in batches: committed with the last batch or when done, rolled back by a throw or a failed statement', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS batch_probe (k text PRIMARY KEY, n int8, at timestamp(3))');
    const keys = async () => (await db.query<{ k: string }>('SELECT k FROM batch_probe ORDER BY k')).map((r) => r.k);
    const put = (k: string) => ({ sql: `INSERT INTO batch_probe VALUES ($1, 9007199254740993, '2030-01-02 03:04:05.678') RETURNING n, at`, params: [k] });

    // The commit in the last batch; rows read as `read` reads them.
    const rows = await db.transaction((tx) => tx.run([put('a'), { sql: 'SELECT count(*)::int AS c FROM batch_probe' }], { commit: true }));
    expect(rows).toEqual([[{ n: 9007199254740993n, at: new Date('2030-01-02T03:04:05.678Z') }], [{ c: 1 }]]);
    // Two batches, committed when the function returns; the second sees the first.
    expect(
      await db.transaction(async (tx) => {
        await tx.run([put('b')]);
        return (await tx.run([{ sql: 'SELECT count(*)::int AS c FROM batch_probe' }]))[0];
      }),
    ).toEqual([{ c: 2 }]);
    // A throw after a batch rolls it back.
    await expect(
      db.transaction(async (tx) => {
        await tx.run([put('c')]);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    // A failed statement rolls back the whole transaction, the batches before it included, and fails as a unique violation.
    const failed = await db
      .transaction(async (tx) => {
        await tx.run([put('d')]);
        await tx.run([put('e'), put('a')], { commit: true });
      })
      .catch((e) => e);
    expect(isUniqueViolation(failed)).toBe(true);
    expect(await keys()).toEqual(['a', 'b']);
    // The database is free for the next one.
    await db.transaction((tx) => tx.run([put('f')]));
    expect(await keys()).toEqual(['a', 'b', 'f']);
  });

  it('writes a row handed over leased due when its lease ends: the claim of due rows passes over it, and a restart dropping the lease makes it due at once', async () => {
    await addRelayer('handed', '0xabc');
    const [row] = await insertTransactions(handle(), [{ ...full(7n), relayerId: 'handed', idempotencyKey: null }], {
      relayers: [{ id: 'handed', notificationId: null }],
      leaseOwner: 'me',
    });
    expect(row.dueAt).toEqual(row.leaseUntil);
    expect(await db.prisma.transaction.findUniqueOrThrow({ where: { id: row.id } })).toMatchObject({ dueAt: row.leaseUntil, leaseOwner: 'me' });
    const claim = () => claimDue(db, 'transactions', { owner: 'next life', limit: 10, leaseMs: 30_000, where: `relayer_id = 'handed'` });
    expect(await claim()).toEqual([]);

    await dropStaleLeases(db, 'me', 'transactions');
    const after = await db.prisma.transaction.findUniqueOrThrow({ where: { id: row.id } });
    expect(after).toMatchObject({ leaseOwner: null, leaseUntil: null });
    expect(after.dueAt!.getTime()).toBeLessThanOrEqual(Date.now());
    expect(await claim()).toEqual([row.id]);
  });

  it('commits a batch told to commit unless a returned row has a column set when none has, else keeps the transaction open', async () => {
    await db.query('CREATE TABLE IF NOT EXISTS commit_probe (k text PRIMARY KEY, tag text)');
    const keys = async () => (await db.query<{ k: string }>('SELECT k FROM commit_probe ORDER BY k')).map((r) => r.k);
    const put = (k: string, tag: string | null) => ({ sql: 'INSERT INTO commit_probe VALUES ($1, $2) RETURNING k, tag', params: [k, tag] });
    const unless = { commit: { unlessSet: 'tag' } };
    const thenThrow = (statements: Statement[]) =>
      db.transaction(async (tx) => {
        await tx.run(statements, unless);
        throw new Error('after the batch');
      });

    // No row names one: committed with the batch (a throw after it changes nothing), and it ends the transaction.
    await expect(thenThrow([put('a', null)])).rejects.toThrow('after the batch');
    await expect(
      db.transaction(async (tx) => {
        await tx.run([put('b', null)], unless);
        await tx.run([put('x', null)]);
      }),
    ).rejects.toThrow('the transaction has ended');
    // A row of the last statement names one: still open, so a throw rolls it back and a later batch commits it.
    await expect(thenThrow([put('c', 't')])).rejects.toThrow('after the batch');
    await db.transaction(async (tx) => {
      await tx.run([put('d', null), put('e', 't')], unless);
      await tx.run([put('f', null)], { commit: true });
    });
    // Rows without the column are never taken for rows that name nothing.
    await expect(thenThrow([{ sql: 'INSERT INTO commit_probe VALUES ($1) RETURNING k', params: ['g'] }])).rejects.toThrow('after the batch');
    expect(await keys()).toEqual(['a', 'b', 'd', 'e', 'f']);
  });
});
