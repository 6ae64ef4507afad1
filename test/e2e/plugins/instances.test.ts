// Plugins on two instances (their own processes) over one PostgreSQL: a withLock key is held across
// them, and settings changed on one are those the other calls with.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, type Instance } from '../../support/instance.js';
import { createTestDatabase, postgresReachable } from '../../support/postgres.js';
import { FIXTURES } from './suite.js';

describe.runIf(await postgresReachable())('plugins on two instances', () => {
  let dir: string;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    [database, dir] = await Promise.all([createTestDatabase(), mkdtemp(path.join(tmpdir(), 'relayer-plugins-'))]);
    const configPath = path.join(dir, 'config.json');
    const plugins = [
      { id: 'locker', path: path.join(FIXTURES, 'locker.ts') },
      { id: 'echo', path: path.join(FIXTURES, 'echo.ts') },
    ];
    await writeFile(configPath, JSON.stringify({ relayers: [], signers: [], notifications: [], networks: [], plugins }));
    const env = { CONFIG_PATH: configPath, DATABASE_URL: database.url, DATA_DIR: dir, PLUGIN_MAX_CONCURRENCY: '16', RATE_LIMIT_BURST_SIZE: '10000' };
    [a, b] = await Promise.all([startInstance(env), startInstance(env)]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const call = (i: Instance, params: object) =>
    i.request('POST', '/api/v1/plugins/locker/call', { params }).then(async (r) => ({ status: r.status, body: await r.json() }));

  it('gives one withLock key to one call at a time across instances', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, n) => call(n % 2 ? b : a, { hold: 20 })));
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    // Each call read the count another left: every value once, none lost.
    expect(results.map((r) => r.body.data as number).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, n) => n + 1));
  });

  it('refuses or skips while the other instance holds the lock, as onBusy asks', async () => {
    const holding = call(a, { hold: 2_000 });
    await new Promise((r) => setTimeout(r, 700));
    const skipped = await call(b, { onBusy: 'skip' });
    expect(skipped).toMatchObject({ status: 200, body: { success: true, data: null } });
    const refused = await call(b, { onBusy: 'throw' });
    expect(refused).toMatchObject({ status: 409, body: { success: false, error: 'lock busy', data: { code: 'LOCK_BUSY' } } });
    expect((await holding).body.data).toBe(21);
    expect((await call(b, { onBusy: 'skip' })).body.data).toBe(22);
  });

  it('calls with the settings changed on the other instance', async () => {
    expect((await b.request('GET', '/api/v1/plugins/echo/call')).status).toBe(405);
    const patched = await a.request('PATCH', '/api/v1/plugins/echo', { allow_get_invocation: true, config: { from: 'a' } });
    expect(patched.status).toBe(200);
    const res = await b.request('GET', '/api/v1/plugins/echo/call?q=1');
    expect(res.status).toBe(200);
    expect((await res.json()).data).toMatchObject({ method: 'GET', config: { from: 'a' }, query: { q: ['1'] } });
    expect((await (await b.request('GET', '/api/v1/plugins/echo')).json()).data).toMatchObject({ allow_get_invocation: true, config: { from: 'a' } });
  });
});
