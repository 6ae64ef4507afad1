// API keys as their users meet them: created once with their value, listed and read without it,
// scoped per id on lists and nested reads, each with its own rate-limit bucket and origins, refused
// everywhere once deleted (on another instance too), never in a response after creation or in a log.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil } from '../../src/chains/evm/anvil.js';
import { startInstance, type Instance } from '../support/instance.js';
import { createTestDatabase, postgresReachable } from '../support/postgres.js';
import { evmConfig, startTestService, type Anvil, type TestService } from '../support/service.js';
import { subscribe } from '../support/subscribe.js';
import { sdkClient, sdkError } from '../support/sdk.js';

const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const TX = '/api/v1/relayers/evm-relayer/transactions';

interface Created {
  id: string;
  value: string;
}

async function create(svc: { request: TestService['request'] }, body: object, token?: string): Promise<Response> {
  return svc.request('POST', '/api/v1/api-keys', body, token ? { authorization: `Bearer ${token}` } : {});
}

async function createKey(svc: { request: TestService['request'] }, permissions: string[], extra: object = {}): Promise<Created> {
  const res = await create(svc, { name: 'test key', permissions, ...extra });
  const body = (await res.json()) as any;
  expect(res.status, JSON.stringify(body)).toBe(201);
  return body.data;
}

const as = (token: string) => ({ authorization: `Bearer ${token}` });

describe.each([
  { db: 'pglite' as const, run: true },
  { db: 'postgres' as const, run: await postgresReachable() },
])('API keys ($db)', ({ db, run }) => {
  let svc: TestService;

  beforeAll(async () => {
    if (!run) return;
    svc = await startTestService({
      db,
      anvil: true,
      config: ({ rpcUrl }) => {
        const c = evmConfig(rpcUrl, {
          relayer: { notification_id: 'hook' },
          notifications: [{ id: 'hook', type: 'webhook', url: 'https://example.com/hook' }],
        });
        // A second relayer on its own key, and a second notification.
        (c.relayers as object[]).push({ ...c.relayers[0], id: 'evm-other', name: 'other', signer_id: 'other-signer', notification_id: 'other-hook' });
        c.signers.push({ ...c.signers[0], id: 'other-signer' });
        (c.notifications as object[]).push({ id: 'other-hook', type: 'webhook', url: 'https://example.com/other' });
        return c;
      },
    });
  });
  afterAll(() => svc?.stop());

  it.runIf(run)('answers the key once, at creation; lists and permissions never show it; a deleted key is refused', async () => {
    const res = await create(svc, { name: 'backend', permissions: ['relayer:all:execute', 'relayer:all:execute'], allowed_origins: ['https://app.example'] });
    expect(res.status).toBe(201);
    const created = ((await res.json()) as any).data;
    expect(created).toEqual({
      id: expect.any(String),
      name: 'backend',
      permissions: ['relayer:all:execute'],
      allowed_origins: ['https://app.example'],
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      value: expect.stringMatching(/^rk_[\w-]{43}$/),
    });
    // The key works at once.
    expect((await svc.request('GET', '/api/v1/relayers/evm-relayer', undefined, as(created.value))).status).toBe(200);

    const list = await svc.request('GET', '/api/v1/api-keys?per_page=100');
    const listed = (await list.text()) as string;
    expect(JSON.parse(listed).data).toContainEqual({
      id: created.id,
      name: 'backend',
      permissions: ['relayer:all:execute'],
      allowed_origins: ['https://app.example'],
      created_at: created.created_at,
    });
    const perms = await svc.request('GET', `/api/v1/api-keys/${created.id}/permissions`);
    const permsText = await perms.text();
    expect(JSON.parse(permsText).data).toEqual(['relayer:all:execute']);
    const gql = await svc.gql(`{ apiKeys(perPage: 100) { items { id name permissions allowedOrigins } } apiKeyPermissions(id: "${created.id}") }`);
    for (const text of [listed, permsText, JSON.stringify(gql)]) expect(text).not.toContain(created.value);
    // Only the digest is stored.
    const rows = (await svc.rt.db.query('SELECT * FROM api_keys')) as object[];
    expect(JSON.stringify(rows)).not.toContain(created.value);

    const del = await svc.request('DELETE', `/api/v1/api-keys/${created.id}`);
    expect(await del.json()).toMatchObject({ success: true, data: created.id });
    const after = await svc.request('GET', '/api/v1/relayers/evm-relayer', undefined, as(created.value));
    expect(after.status).toBe(401);
    expect((await svc.request('DELETE', `/api/v1/api-keys/${created.id}`)).status).toBe(404);
    expect((await svc.request('GET', `/api/v1/api-keys/${created.id}/permissions`)).status).toBe(404);
  });

  it.runIf(run)('refuses bad permissions with 400 naming each, and a key giving more than it holds with 403; nothing is created', async () => {
    const count = async () => ((await svc.rt.db.query('SELECT count(*)::int AS n FROM api_keys')) as any[])[0].n;
    const before = await count();
    for (const [body, reason] of [
      [{ name: 'x', permissions: ['relayer:all'] }, /permissions\[0\]: "relayer:all": must be <resource>:<id or all>:<action>/],
      [{ name: 'x', permissions: ['relayers:all:read'] }, /unknown resource "relayers"/],
      [{ name: 'x', permissions: ['relayer:all:write'] }, /unknown action "write"/],
      [{ name: 'x', permissions: ['relayer:a*b:read'] }, /prefix ending in \*/],
      [{ name: 'x', permissions: [] }, /permissions: at least one/],
      [{ name: '', permissions: ['relayer:all:read'] }, /name: must not be empty/],
      [{ name: 'x', permissions: ['relayer:all:read'], allowed_origins: ['https://a.example/path'] }, /allowed_origins\[0\]: must be \* or an origin/],
      [{ name: 'x', permissions: ['relayer:all:read'], value: 'chosen' }, /value/],
    ] as const) {
      const res = await create(svc, body);
      const json = (await res.json()) as any;
      expect(res.status, JSON.stringify(json)).toBe(400);
      expect(json.error).toMatch(reason);
    }
    const manager = await createKey(svc, ['api_key:all:manage', 'relayer:evm-*:read']);
    const refused = await create(svc, { name: 'wider', permissions: ['relayer:all:read'] }, manager.value);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error).toMatch(/permissions beyond this key's own: relayer:all:read/);
    const star = await create(svc, { name: 'wider', permissions: ['*:*:*'] }, manager.value);
    expect(star.status).toBe(403);
    expect(await count()).toBe(before + 1);
    // Within what it holds, it may.
    expect((await create(svc, { name: 'narrower', permissions: ['relayer:evm-relayer:read'] }, manager.value)).status).toBe(201);
  });

  it.runIf(run)('lists show only the ids a key may read; nested reads are checked too', async () => {
    const one = await createKey(svc, ['relayer:evm-relayer:read', 'notification:hook:read']);
    const list = ((await (await svc.request('GET', '/api/v1/relayers', undefined, as(one.value))).json()) as any).data;
    expect(list.map((r: { id: string }) => r.id)).toEqual(['evm-relayer']);
    const page = await svc.request('GET', '/api/v1/notifications', undefined, as(one.value));
    expect(((await page.json()) as any).pagination.total_items).toBe(1);
    // A prefix: both relayers.
    const prefix = await createKey(svc, ['relayer:evm-*:read']);
    const both = ((await (await svc.request('GET', '/api/v1/relayers', undefined, as(prefix.value))).json()) as any).data;
    expect(both.map((r: { id: string }) => r.id)).toEqual(['evm-other', 'evm-relayer']);

    // Nested: a relayer's notification needs notification read; a notification's relayers need relayer read.
    const q = async (token: string, query: string) =>
      (await (await svc.request('POST', '/graphql', { query }, as(token))).json()) as { data: any; errors?: { extensions: { code: string } }[] };
    const nested = await q(prefix.value, '{ relayer(id: "evm-relayer") { id notification { id } } }');
    expect(nested.data.relayer).toEqual({ id: 'evm-relayer', notification: null });
    expect(nested.errors?.map((e) => e.extensions)).toEqual([{ code: 'FORBIDDEN', detail: 'this API key lacks notification:hook:read' }]);
    const allowed = await q(one.value, '{ relayer(id: "evm-relayer") { notification { id } transactions { items { id } } } }');
    expect(allowed.errors).toBeUndefined();
    const other = await q(one.value, '{ notification(id: "hook") { relayers { id } } }');
    expect(other.errors).toBeUndefined();
    const notMine = await q(one.value, '{ notification(id: "other-hook") { id } }');
    expect(notMine.errors?.[0].extensions.code).toBe('FORBIDDEN');
    // A transaction read by id alone is checked against its relayer.
    const tx = ((await (await svc.request('POST', TX, { to: RECEIVER, value: 1 })).json()) as any).data.id;
    const byId = await createKey(svc, ['relayer:evm-other:read']);
    const refused = await q(byId.value, `{ transaction(id: "${tx}") { id status } }`);
    expect(refused.errors?.[0].extensions.code).toBe('FORBIDDEN');
    expect(JSON.stringify(refused.data ?? null)).not.toContain(tx);
  });

  it.runIf(run)("answers CORS for the key's origins and refuses others before anything runs", async () => {
    const key = await createKey(svc, ['relayer:all:execute'], { allowed_origins: ['https://app.example'] });
    const preflight = await svc.app.fetch(
      new Request(`http://relayer.test${TX}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      }),
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/);

    const ok = await svc.request('GET', TX, undefined, { ...as(key.value), origin: 'https://app.example' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example');

    const count = async () => ((await svc.rt.db.query('SELECT count(*)::int AS n FROM transactions')) as any[])[0].n;
    const before = await count();
    const refused = await svc.request('POST', TX, { to: RECEIVER, value: 5 }, { ...as(key.value), origin: 'https://evil.example' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ message: 'Forbidden', error: 'origin https://evil.example is not allowed for this API key' });
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
    expect(await count()).toBe(before);
    // The administrator's key allows any origin.
    const admin = await svc.request('GET', TX, undefined, { origin: 'https://evil.example' });
    expect(admin.headers.get('access-control-allow-origin')).toBe('https://evil.example');
  });

  it.runIf(run)('a subscription needs read on its relayer and ends once its key is deleted', async () => {
    const reader = await createKey(svc, ['relayer:evm-relayer:read']);
    const outsider = await createKey(svc, ['relayer:evm-other:read']);
    const query = 'subscription S($r: ID) { transactionUpdated(relayerId: $r) { id status } }';
    const refused = subscribe(svc.app, query, { r: 'evm-relayer' }, outsider.value);
    await refused.ended;
    expect(refused.events.map((e) => e.errors?.[0]?.extensions?.code)).toEqual(['FORBIDDEN']);

    const sub = subscribe(svc.app, query, { r: 'evm-relayer' }, reader.value);
    await sub.response;
    await svc.request('POST', TX, { to: RECEIVER, value: 11 });
    await expect.poll(() => sub.events.length, { timeout: 10_000 }).toBeGreaterThan(0);
    await svc.request('DELETE', `/api/v1/api-keys/${reader.id}`);
    const seen = sub.events.length;
    await svc.request('POST', TX, { to: RECEIVER, value: 12 });
    await expect.poll(() => sub.events.some((e) => e.errors?.[0]?.extensions?.code === 'FORBIDDEN'), { timeout: 10_000 }).toBe(true);
    expect(sub.events.slice(seen).filter((e) => e.data?.transactionUpdated)).toEqual([]);
    await sub.close();
  });

  it.runIf(run)("OpenZeppelin's client works with a key: what it may do succeeds, the rest is 403", async () => {
    const key = await createKey(svc, ['relayer:evm-relayer:execute']);
    const client = await sdkClient(svc, key.value);
    try {
      const relayers = await client.relayers.listRelayers();
      expect(relayers.data.data?.map((r) => r.id)).toEqual(['evm-relayer']);
      const sent = await client.relayers.sendTransaction('evm-relayer', { to: RECEIVER, value: 3, data: '0x', gas_limit: 21000, speed: 'fast' } as never);
      expect(sent.data.success).toBe(true);
      const refused = await sdkError(client.relayers.sendTransaction('evm-other', { to: RECEIVER, value: 3, data: '0x', gas_limit: 21000 } as never));
      expect(refused.status).toBe(403);
      expect(refused.body.message).toBe('Forbidden');
      expect((await sdkError(client.notifications.listNotifications())).status).toBe(403);
    } finally {
      await client.close();
    }
  });
});

describe('API keys and rate limits', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ env: { RATE_LIMIT_BURST_SIZE: '3', RATE_LIMIT_REQUESTS_PER_SECOND: '1' } });
  });
  afterAll(() => svc?.stop());

  it("each key has its own bucket, apart from the administrator's", async () => {
    const [a, b] = [await createKey(svc, ['relayer:all:execute']), await createKey(svc, ['relayer:all:execute'])];
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await svc.request('GET', TX, undefined, as(a.value))).status);
    expect(statuses).toContain(429);
    expect((await svc.request('GET', TX, undefined, as(b.value))).status).toBe(200);
    expect((await svc.request('GET', TX)).status).toBe(200);
  });
});

describe.runIf(await postgresReachable())('API keys across instances', () => {
  let anvil: Anvil;
  let dir: string;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: Instance;
  let b: Instance;

  beforeAll(async () => {
    [anvil, database, dir] = await Promise.all([startAnvil({ port: 0 }), createTestDatabase(), mkdtemp(path.join(tmpdir(), 'relayer-keys-'))]);
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(evmConfig(anvil.url)));
    const env = { CONFIG_PATH: path.join(dir, 'config.json'), DATABASE_URL: database.url, DATA_DIR: dir, LOG_LEVEL: 'info' };
    [a, b] = await Promise.all([startInstance({ ...env, INSTANCE_ID: 'a' }), startInstance({ ...env, INSTANCE_ID: 'b' })]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await anvil?.stop();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a key made on one works on the other; deleted on one, the other refuses it within a second; logs name its id, never the key', async () => {
    const created = await createKey(a, ['relayer:all:read']);
    const read = () => b.request('GET', '/api/v1/relayers/evm-relayer', undefined, as(created.value));
    expect((await read()).status).toBe(200);
    const del = await a.request('DELETE', `/api/v1/api-keys/${created.id}`);
    expect(del.status).toBe(200);
    const deleted = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - deleted < 5_000) status = (await read()).status;
    expect(status).toBe(401);
    expect(Date.now() - deleted).toBeLessThan(1_000);

    for (const instance of [a, b]) {
      expect(instance.output()).not.toContain(created.value);
      expect(instance.output()).not.toContain('test-api-key-0123456789abcdef');
    }
    // The request log line names the key's id (and "admin" for API_KEY).
    expect(b.output()).toMatch(new RegExp(`"key":"${created.id}"[^\\n]*"path":"/api/v1/relayers/evm-relayer"`));
    expect(a.output()).toMatch(/"key":"admin"[^\n]*"path":"\/api\/v1\/api-keys"/);
  });
});
