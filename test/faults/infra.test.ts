// Infrastructure faults, each with real servers started here: the relayer as its own process, a
// private PostgreSQL stopped and started under it, a private Redis killed and brought back, and RPC
// URLs that hang or answer garbage. What a user sees: answers (a clean error envelope while a part
// is down, never a dead process), and in the end every accepted transaction confirmed exactly once.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startAnvil, type AnvilInstance } from '../../src/chains/evm/anvil.js';
import { rpc } from '../support/evm.js';
import { startChaosProxy, type ChaosProxy } from '../support/chaos-proxy.js';
import { allTransactions, startInstance } from '../support/instance.js';
import { startPostgresServer } from '../support/pg-server.js';
import { startRedisServer } from '../support/redis-server.js';
import { DEV_ADDRESS, evmConfig } from '../support/service.js';

const SEND_PATH = '/api/v1/relayers/evm-relayer/transactions';
const FINAL = ['confirmed', 'failed', 'expired', 'canceled'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

let nextValue = 1_000;
/** A recipient of this test only, so its balance is exactly what the relayer sent it. */
const freshReceiver = () =>
  `0x${'fa'.repeat(10)}${Math.floor(Math.random() * 2 ** 32)
    .toString(16)
    .padStart(8, '0')}${'0'.repeat(11)}1`;

async function setUp(opts: { rpcUrls?: (anvil: string) => string[] | Promise<string[]>; env?: Record<string, string> } = {}) {
  const anvil: AnvilInstance = await startAnvil({ blockTime: 1 });
  cleanup.push(() => anvil.stop());
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-faults-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  const config = evmConfig(anvil.url);
  config.networks[0].rpc_urls = (await opts.rpcUrls?.(anvil.url)) ?? [anvil.url];
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
  const env = {
    CONFIG_PATH: path.join(dir, 'config.json'),
    DATA_DIR: dir,
    INSTANCE_ID: 'faults',
    LOG_LEVEL: 'info',
    RATE_LIMIT_REQUESTS_PER_SECOND: '10000',
    RATE_LIMIT_BURST_SIZE: '10000',
    ...opts.env,
  };
  const startNonce = Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));
  const instance = await startInstance(env);
  cleanup.push(() => instance.stop());
  return { anvil, instance, startNonce, receiver: freshReceiver(), accepted: new Map<string, string>() };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

/** One send with a unique value; the answer's status and body (never a thrown error while the process lives). */
async function sendOne(s: Setup) {
  const value = String(nextValue++);
  const res = await s.instance.request('POST', SEND_PATH, { to: s.receiver, value: Number(value) });
  const body = (await res.json()) as any;
  if (res.status === 200) s.accepted.set(body.data.id, value);
  return { status: res.status, body };
}

async function waitAllFinal(s: Setup, ms: number) {
  const deadline = Date.now() + ms;
  for (;;) {
    const rows = await allTransactions(s.instance).catch(() => null);
    if (rows && rows.length >= s.accepted.size && rows.every((r) => FINAL.includes(r.status))) return rows;
    if (Date.now() > deadline)
      throw new Error(`not all final after ${ms} ms: ${JSON.stringify(rows?.filter((r) => !FINAL.includes(r.status)))}\n${s.instance.output().slice(-3000)}`);
    await sleep(500);
  }
}

/** Every accepted transaction (and every other row) confirmed, each payload mined once, nonces contiguous, balance exact. */
async function expectExactlyOnce(s: Setup, rows: any[]) {
  const byId = new Map(rows.map((r) => [r.id, r]));
  for (const [id, value] of s.accepted) expect(byId.get(id), id).toMatchObject({ status: 'confirmed', value });
  expect(rows.filter((r) => r.status !== 'confirmed')).toEqual([]);
  const nonces = rows.map((r) => r.nonce).sort((a, b) => a - b);
  expect(nonces).toEqual(Array.from({ length: rows.length }, (_, i) => s.startNonce + i));
  expect(Number(await rpc(s.anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']))).toBe(s.startNonce + rows.length);
  const seen = new Map<string, number>();
  const head = Number(await rpc(s.anvil.url, 'eth_blockNumber'));
  for (let b = 0; b <= head; b++) {
    const block = await rpc(s.anvil.url, 'eth_getBlockByNumber', [`0x${b.toString(16)}`, true]);
    for (const t of block.transactions)
      if (t.to?.toLowerCase() === s.receiver.toLowerCase()) seen.set(BigInt(t.value).toString(), (seen.get(BigInt(t.value).toString()) ?? 0) + 1);
  }
  expect(Object.fromEntries(seen)).toEqual(Object.fromEntries(rows.map((r) => [r.value, 1])));
  const total = rows.reduce((sum, r) => sum + BigInt(r.value), 0n);
  expect(BigInt(await rpc(s.anvil.url, 'eth_getBalance', [s.receiver, 'latest']))).toBe(total);
}

const alive = (s: Setup) => s.instance.process.exitCode === null && s.instance.process.signalCode === null;

describe('PostgreSQL restarted mid-run', () => {
  it('answers with a clean error while it is down, reconnects by itself and loses nothing', async () => {
    const pg = await startPostgresServer();
    cleanup.push(() => pg.destroy());
    const s = await setUp({ env: { DATABASE_URL: pg.url } });

    // Sends in flight, and confirmations pending (a block a second), when the server stops.
    const first = Array.from({ length: 20 }, (_, i) => sleep(i * 50).then(() => sendOne(s).catch((e) => ({ status: 0, body: String(e) }))));
    const deadline = Date.now() + 30_000;
    while (s.accepted.size < 8 && Date.now() < deadline) await sleep(20);
    expect(s.accepted.size).toBeGreaterThanOrEqual(8);
    // As a crash: no goodbye to the connections, no checkpoint (the server recovers from its WAL).
    await pg.stop('immediate');

    const during = [];
    for (let i = 0; i < 5; i++) during.push(await sendOne(s));
    const firstAnswers = await Promise.all(first);
    // Every answer is the spec's envelope: accepted, or a clean server error; the process lives on.
    for (const a of [...during, ...firstAnswers]) {
      expect(a.status === 200 || a.status >= 500, JSON.stringify(a)).toBe(true);
      if (a.status !== 200) expect(a.body).toMatchObject({ success: false, data: null, message: expect.any(String) });
    }
    expect(during.every((a) => a.status >= 500)).toBe(true);
    await sleep(5_000); // the workers meet the outage too
    expect(alive(s), s.instance.output().slice(-3000)).toBe(true);

    await pg.start();
    // Back by itself: a send is accepted again within a bounded time, without a restart.
    const back = Date.now() + 60_000;
    let again = await sendOne(s);
    while (again.status !== 200 && Date.now() < back) {
      await sleep(500);
      again = await sendOne(s);
    }
    expect(again.status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await sendOne(s)).status).toBe(200);

    const rows = await waitAllFinal(s, 120_000);
    await sleep(1_500);
    await expectExactlyOnce(s, rows);
    expect(alive(s)).toBe(true);
  }, 300_000);
});

describe('Redis gone', () => {
  it('relaying goes on, rate limits fall back to the instance bucket, and Redis is used again when it returns', async () => {
    const redis = await startRedisServer();
    cleanup.push(() => redis.destroy());
    // A small budget so the limit shows: 5 at once, then one a second.
    const s = await setUp({ env: { REDIS_URL: redis.url, RATE_LIMIT_BURST_SIZE: '5', RATE_LIMIT_REQUESTS_PER_SECOND: '1' } });
    const rateKeys = async () => {
      const c = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => {});
      try {
        await c.connect();
        return await c.keys('relayer:rate:*');
      } finally {
        c.disconnect();
      }
    };

    for (let i = 0; i < 3; i++) expect((await sendOne(s)).status).toBe(200);
    expect(await rateKeys()).toHaveLength(1); // the budget is kept in Redis

    await redis.kill();
    // The instance's own bucket (5 tokens) answers: sends go on, then the limit applies, never a 500.
    const during = [];
    for (let i = 0; i < 8; i++) during.push(await sendOne(s));
    const statuses = during.map((a) => a.status);
    expect(
      statuses.every((st) => st === 200 || st === 429),
      JSON.stringify(during),
    ).toBe(true);
    expect(statuses.filter((st) => st === 200).length).toBeGreaterThanOrEqual(3);
    expect(statuses).toContain(429);
    expect(during.find((a) => a.status === 429)!.body).toMatchObject({ success: false, message: 'Too Many Requests' });
    // Relaying goes on: what was accepted is confirmed while Redis is still gone.
    const rowsWhileDown = await waitAllFinal(s, 60_000);
    expect(rowsWhileDown.every((r) => r.status === 'confirmed')).toBe(true);
    expect(alive(s), s.instance.output().slice(-3000)).toBe(true);

    await redis.start(); // empty, on the same port
    // Used again once the client has reconnected: a rate-limited request puts the budget back in Redis.
    const deadline = Date.now() + 30_000;
    let keys: string[] = [];
    while (keys.length === 0 && Date.now() < deadline) {
      await s.instance.request('GET', `${SEND_PATH}?per_page=1`);
      keys = await rateKeys();
      if (keys.length === 0) await sleep(500);
    }
    expect(keys).toHaveLength(1);
    await sleep(5_000); // refill
    expect((await sendOne(s)).status).toBe(200);

    const rows = await waitAllFinal(s, 60_000);
    await sleep(1_500);
    await expectExactlyOnce(s, rows);
    expect(alive(s)).toBe(true);
  }, 240_000);
});

const badUrls = [
  { name: 'hangs', mode: { kind: 'hang' }, fault: 'hang' },
  { name: 'answers garbage', mode: { kind: 'garbage' }, fault: 'garbage' },
  { name: 'answers results of the wrong shape', mode: { kind: 'garbage', wrongResults: true }, fault: 'garbage' },
] as const;

describe.each(badUrls)('an RPC URL that $name', ({ mode, fault }) => {
  it('listed beside a good one: relaying goes on through failover', async () => {
    const bad = await startChaosProxy('http://127.0.0.1:9'); // never forwards in these modes
    cleanup.push(() => bad.close());
    bad.setMode(mode);
    const s = await setUp({ rpcUrls: (good) => [bad.url, good] });
    for (let i = 0; i < 8; i++) expect((await sendOne(s)).status).toBe(200);
    const rows = await waitAllFinal(s, 90_000);
    await sleep(1_500);
    await expectExactlyOnce(s, rows);
    expect(bad.counts[fault]).toBeGreaterThan(0); // it was tried, and failed over
  }, 180_000);

  it('as the only one: transactions wait, saying the network cannot be reached, and complete once it is healthy, none sent twice', async () => {
    let proxy!: ChaosProxy;
    const s = await setUp({
      rpcUrls: async (good) => {
        proxy = await startChaosProxy(good);
        cleanup.push(() => proxy.close());
        return [proxy.url];
      },
    });
    // Healthy first: the account's nonce and the recipient are known.
    expect((await sendOne(s)).status).toBe(200);
    await waitAllFinal(s, 60_000);

    proxy.setMode(mode);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const a = await sendOne(s);
      expect(a.status, JSON.stringify(a.body)).toBe(200);
      ids.push(a.body.data.id);
    }
    // They wait, and say why.
    const deadline = Date.now() + 120_000;
    let waiting: any[] = [];
    for (;;) {
      const rows = await allTransactions(s.instance);
      waiting = rows.filter((r) => ids.includes(r.id));
      if (waiting.every((r) => /network cannot be reached/.test(r.statusReason ?? ''))) break;
      if (Date.now() > deadline) throw new Error(`not waiting on the network: ${JSON.stringify(waiting)}\n${s.instance.output().slice(-3000)}`);
      await sleep(500);
    }
    expect(waiting.every((r) => !FINAL.includes(r.status))).toBe(true);
    expect(proxy.counts[fault]).toBeGreaterThan(0);

    proxy.setMode({ kind: 'clean' });
    const rows = await waitAllFinal(s, 120_000);
    await sleep(1_500);
    await expectExactlyOnce(s, rows);
    expect(rows.filter((r) => ids.includes(r.id)).every((r) => r.statusReason === null || !/cannot be reached/.test(r.statusReason))).toBe(true);
  }, 300_000);
});
