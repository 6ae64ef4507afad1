import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil } from '../../src/chains/evm/anvil.js';
import { subscribe } from '../support/notifications.js';
import { startInstance, type Instance } from '../support/instance.js';
import { createTestDatabase, postgresReachable } from '../support/postgres.js';
import { REDIS_URL, redisReachable } from '../support/redis.js';
import { DEV_ADDRESS, evmConfig, type Anvil } from '../support/service.js';

const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

interface Row {
  id: string;
  status: string;
  nonce: number;
  hash: string | null;
}

async function listAll(instance: Instance): Promise<Row[]> {
  const rows: Row[] = [];
  for (let page = 1; ; page++) {
    const res = await instance.request('GET', `/api/v1/relayers/evm-relayer/transactions/?page=${page}&per_page=100`);
    const body = await res.json();
    if (res.status !== 200) throw new Error(`list failed: ${res.status} ${JSON.stringify(body)}`);
    rows.push(...body.data);
    if (rows.length >= body.pagination.total_items) return rows;
  }
}

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()).result;
}

describe.runIf((await postgresReachable()) && (await redisReachable()))('several instances on one PostgreSQL and Redis', () => {
  let anvil: Anvil;
  let dir: string;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  const instances: Instance[] = [];
  let env: Record<string, string>;

  beforeAll(async () => {
    [anvil, database, dir] = await Promise.all([startAnvil({ port: 0 }), createTestDatabase(), mkdtemp(path.join(tmpdir(), 'relayer-multi-'))]);
    const configPath = path.join(dir, 'config.json');
    await writeFile(configPath, JSON.stringify(evmConfig(anvil.url)));
    env = { CONFIG_PATH: configPath, DATABASE_URL: database.url, REDIS_URL, DATA_DIR: dir };
  });

  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await anvil?.stop();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const start = async (extra: Record<string, string>) => {
    const instance = await startInstance({ ...env, ...extra });
    instances.push(instance);
    return instance;
  };

  it('200 concurrent sends spread over two instances confirm with nonces 0..199; a killed instance leaves nothing undone', async () => {
    const budget = { RATE_LIMIT_BURST_SIZE: '100000', RATE_LIMIT_REQUESTS_PER_SECOND: '100000' };
    const [a, b] = await Promise.all([start({ ...budget, INSTANCE_ID: 'instance-a' }), start(budget)]);
    // Nothing is mined until A is dead, so A still has work (steps holding leases) when it is killed.
    await rpc(anvil.url, 'evm_setAutomine', [false]);
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        (i % 2 ? b : a)
          .request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: i + 1 })
          .then(async (r) => ({ status: r.status, body: await r.json() })),
      ),
    );
    expect(responses.filter((r) => r.status !== 200)).toEqual([]);
    const accepted = responses.map((r) => r.body.data.id as string);

    // A dies with its share of the work in flight: B must finish it once A's leases run out.
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    const inFlight = async () =>
      Number(
        (await db.query(`SELECT count(*) FROM transactions WHERE lease_owner = 'instance-a' AND status NOT IN ('confirmed','failed','expired','canceled')`))
          .rows[0].count,
      );
    // Freeze A, and kill it only if frozen while holding leases (else let it go on and look again).
    const caught = Date.now() + 60_000;
    for (;;) {
      if (Date.now() > caught) throw new Error('instance A never held a lease on unfinished work');
      a.process.kill('SIGSTOP');
      await new Promise((r) => setTimeout(r, 100)); // statements A sent before it froze land first
      if ((await inFlight()) > 0) break;
      a.process.kill('SIGCONT');
      await new Promise((r) => setTimeout(r, 5));
    }
    await a.kill();
    expect(await inFlight()).toBeGreaterThan(0);
    await db.end();
    await rpc(anvil.url, 'evm_setAutomine', [true]);
    await rpc(anvil.url, 'evm_mine', []);

    const deadline = Date.now() + 150_000;
    let rows: Row[] = [];
    while (Date.now() < deadline) {
      rows = await listAll(b);
      if (rows.length >= 200 && rows.every((r) => r.status === 'confirmed')) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const ours = rows.filter((r) => accepted.includes(r.id));
    expect(ours).toHaveLength(200);
    expect(ours.filter((r) => r.status !== 'confirmed')).toEqual([]);
    expect(ours.map((r) => r.nonce).sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(rows).toHaveLength(200); // no gap had to be filled: nothing else took a nonce

    // On chain: exactly 200 transactions from the relayer, each the one its row names.
    expect(BigInt(await rpc<string>(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']))).toBe(200n);
    const onChain = await Promise.all(ours.map((r) => rpc<{ nonce: string; from: string }>(anvil.url, 'eth_getTransactionByHash', [r.hash])));
    expect(onChain.map((t, _i) => [BigInt(t.nonce), t.from.toLowerCase()])).toEqual(ours.map((r) => [BigInt(r.nonce), DEV_ADDRESS.toLowerCase()]));
  }, 240_000);

  it('a subscriber on one instance sees every status of a transaction another instance works', async () => {
    const budget = { RATE_LIMIT_BURST_SIZE: '1000', RATE_LIMIT_REQUESTS_PER_SECOND: '1000' };
    const [watcher, worker] = await Promise.all([start(budget), start(budget)]);
    // Accepted by `worker`; either instance may work it. Every status must reach the watcher's subscriber.
    const viaWatcher = { fetch: (r: Request) => fetch(new Request(watcher.url + new URL(r.url).pathname, r)) };
    const stream = subscribe(viaWatcher, 'subscription($r: ID!) { transactionUpdated(relayerId: $r) { id status } }', { r: 'evm-relayer' });
    await stream.response;
    await new Promise((r) => setTimeout(r, 300));
    const res = await worker.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 7 });
    const id = (await res.json()).data.id;
    const deadline = Date.now() + 60_000;
    const seen = () => stream.events.filter((e) => e.data?.transactionUpdated.id === id).map((e) => e.data.transactionUpdated.status);
    while (!seen().includes('confirmed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    await stream.close();
    const order = ['pending', 'sent', 'submitted', 'mined', 'confirmed'];
    expect(seen()[0]).toBe('pending');
    expect(seen().at(-1)).toBe('confirmed');
    expect(seen()).toEqual([...seen()].sort((x, y) => order.indexOf(x) - order.indexOf(y)));
  }, 120_000);

  it('the rate limit is one budget per token across instances', async () => {
    const tight = { RATE_LIMIT_BURST_SIZE: '4', RATE_LIMIT_REQUESTS_PER_SECOND: '0.2' };
    const [c, d] = await Promise.all([start(tight), start(tight)]);
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await (i % 2 ? d : c).request('GET', '/api/v1/relayers/evm-relayer/transactions/?per_page=1');
      statuses.push(res.status);
      if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Four from the burst (a fifth only if a token was refilled meanwhile), whichever instance answered.
    const granted = statuses.filter((s) => s === 200).length;
    expect(granted).toBeGreaterThanOrEqual(4);
    expect(granted).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 429).length).toBe(10 - granted);
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
  }, 120_000);
});
