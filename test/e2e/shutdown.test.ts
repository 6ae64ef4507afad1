import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startAnvil } from '../../src/chains/evm/anvil.js';
import { rpc } from '../support/evm.js';
import { waitFor } from '../support/receiver.js';
import { allTransactions, startInstance, type Instance } from '../support/instance.js';
import { createTestDatabase, postgresReachable } from '../support/postgres.js';
import { DEV_ADDRESS, evmConfig } from '../support/service.js';

/** Sends SIGTERM/SIGINT and waits for the exit: its code and how long it took. */
async function terminate(instance: Instance, signal: NodeJS.Signals) {
  const started = Date.now();
  const exited = new Promise<number | null>((resolve) => instance.process.once('exit', (code) => resolve(code)));
  instance.process.kill(signal);
  const code = await exited;
  return { code, ms: Date.now() - started };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

describe.runIf(await postgresReachable())('SIGTERM drains an instance; another one finishes its work at once', () => {
  it('in-flight sends are answered, leases are released, the other instance confirms everything once, long before the leases would have run out', async () => {
    const [anvil, database, dir] = await Promise.all([startAnvil({ port: 0 }), createTestDatabase(), mkdtemp(path.join(tmpdir(), 'relayer-drain-'))]);
    cleanups.push(
      () => anvil.stop(),
      () => database.drop(),
      () => rm(dir, { recursive: true, force: true }),
    );
    const configPath = path.join(dir, 'config.json');
    await writeFile(configPath, JSON.stringify(evmConfig(anvil.url)));
    const env = { CONFIG_PATH: configPath, DATABASE_URL: database.url, DATA_DIR: dir, RATE_LIMIT_BURST_SIZE: '10000', RATE_LIMIT_REQUESTS_PER_SECOND: '10000' };
    const [a, b] = await Promise.all([
      startInstance({ ...env, INSTANCE_ID: 'instance-a', LOG_LEVEL: 'info' }),
      startInstance({ ...env, INSTANCE_ID: 'instance-b' }),
    ]);
    cleanups.push(
      () => a.kill(),
      () => b.kill(),
    );
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    cleanups.push(() => db.end());
    // Nothing is mined while A works: its transactions stay in flight.
    await rpc(anvil.url, 'evm_setAutomine', [false]);
    const recipient = `0x${'5a'.repeat(20)}`;

    // A burst of sends to A; SIGTERM arrives while some are still being answered.
    const N = 60;
    let answered = 0;
    const sends = Array.from({ length: N }, (_, i) =>
      a.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: recipient, value: i + 1 }).then(
        async (r) => {
          answered++;
          return { status: r.status, body: await r.json() };
        },
        (e: Error) => ({ status: 0, body: e.message }),
      ),
    );
    await waitFor(() => answered >= 10, 'the first answers', 30_000);
    const held = await db.query(`SELECT count(*)::int AS n, min(lease_until) AS until FROM transactions WHERE lease_owner = 'instance-a'`);
    expect(held.rows[0].n).toBeGreaterThan(0);
    const leaseRunsOut = new Date(held.rows[0].until).getTime();
    const { code, ms } = await terminate(a, 'SIGTERM');
    expect(code, a.output()).toBe(0);
    expect(ms).toBeLessThan(10_000);
    for (const stage of ['shutting down', 'requests finished', 'leases released', 'database closed', 'shut down cleanly']) expect(a.output()).toContain(stage);

    // Every send was answered or never reached A (connection refused): none cut off mid-request.
    const results = await Promise.all(sends);
    const accepted = results.filter((r) => r.status === 200).map((r) => r.body.data.id as string);
    expect(results.filter((r) => r.status !== 200 && r.status !== 0)).toEqual([]);
    expect(accepted.length).toBeGreaterThanOrEqual(10);
    const rows = await db.query('SELECT id, lease_owner FROM transactions');
    expect(rows.rows.map((r) => r.id).sort()).toEqual([...accepted].sort());
    // A holds nothing any more.
    expect(rows.rows.filter((r) => r.lease_owner === 'instance-a')).toEqual([]);
    expect((await db.query(`SELECT count(*)::int AS n FROM deliveries WHERE lease_owner = 'instance-a'`)).rows[0].n).toBe(0);

    // B finishes A's work before A's leases would have run out.
    await rpc(anvil.url, 'evm_setAutomine', [true]);
    await rpc(anvil.url, 'evm_mine', []);
    await waitFor(
      async () => (await allTransactions(b)).filter((t) => t.status === 'confirmed').length === accepted.length,
      'B to confirm every accepted transaction',
      Math.max(1_000, leaseRunsOut - Date.now()),
    );
    expect(Date.now()).toBeLessThan(leaseRunsOut);

    // On chain: each accepted transfer exactly once.
    const list = await allTransactions(b);
    expect(list.map((t) => t.nonce).sort((x, y) => x - y)).toEqual(accepted.map((_, i) => i));
    expect(BigInt(await rpc<string>(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']))).toBe(BigInt(accepted.length));
    const expected = list.reduce((s, t) => s + BigInt(t.value), 0n);
    expect(BigInt(await rpc<string>(anvil.url, 'eth_getBalance', [recipient, 'latest']))).toBe(expected);
  }, 240_000);
});

describe('SIGINT on the embedded defaults', () => {
  it('exits 0, stops the devnet it started, and the restarted service goes on from the same state', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'relayer-sigint-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // No CONFIG_PATH: the bundled config with its devnet relayer, on PGlite under DATA_DIR.
    const env = { DEVNET: 'true', DEVNET_PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'info' };
    const first = await startInstance(env);
    cleanups.push(() => first.kill());
    const pid = Number(await readFile(path.join(dir, 'devnet.pid'), 'utf8'));
    expect(alive(pid)).toBe(true);
    const sent = await first.request('POST', '/api/v1/relayers/devnet-relayer/transactions', { to: `0x${'6b'.repeat(20)}`, value: 1 });
    expect(sent.status).toBe(200);
    const id = (await sent.json()).data.id;

    const { code } = await terminate(first, 'SIGINT');
    expect(code, first.output()).toBe(0);
    expect(first.output()).toContain('devnet stopped');
    expect(alive(pid)).toBe(false);

    const second = await startInstance(env);
    cleanups.push(() => second.kill());
    await waitFor(
      async () => (await (await second.request('GET', `/api/v1/relayers/devnet-relayer/transactions/${id}`)).json()).data?.status === 'confirmed',
      'the transaction confirmed after the restart',
      60_000,
    );
    expect((await terminate(second, 'SIGTERM')).code).toBe(0);

    // A drain that takes longer than SHUTDOWN_TIMEOUT_MS ends with status 1, and says why.
    const third = await startInstance({ ...env, SHUTDOWN_TIMEOUT_MS: '1' });
    cleanups.push(async () => {
      third.process.kill('SIGKILL');
      const orphan = Number(await readFile(path.join(dir, 'devnet.pid'), 'utf8'));
      if (alive(orphan)) process.kill(orphan, 'SIGKILL');
    });
    const timedOut = await terminate(third, 'SIGTERM');
    expect(timedOut.code, third.output()).toBe(1);
    expect(third.output()).toContain('shutdown did not finish within 1 ms (SHUTDOWN_TIMEOUT_MS); exiting with status 1');
    const orphan = Number(await readFile(path.join(dir, 'devnet.pid'), 'utf8'));
    await waitFor(() => !alive(orphan), 'the devnet to stop after all', 10_000);
  }, 240_000);
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
