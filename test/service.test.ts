import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { parseEnv } from '../src/config/env.js';
import { createLogger } from '../src/lib/log.js';
import { createApp } from '../src/app.js';
import { startService } from '../src/service.js';
import { databaseKinds } from './support/postgres.js';
import { API_KEY, evmConfig, startTestService, type TestService } from './support/service.js';

const running: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

describe.each(await databaseKinds())('restarts on %s', (db) => {
  it('a restart with the same file changes nothing; API changes survive it; an edited entry replaces the stored one', async () => {
    let svc = await startTestService({ db, workers: false });
    running.push({ stop: () => svc.stop() });
    const before = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'evm-relayer' } });
    await svc.rt.db.prisma.relayer.update({ where: { id: 'evm-relayer' }, data: { paused: true } });
    const paused = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'evm-relayer' } });

    svc = await svc.restart();
    const after = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'evm-relayer' } });
    expect(after).toEqual(paused);
    expect(after.configDigest).toBe(before.configDigest);

    await writeFile(svc.rt.env.configPath, JSON.stringify(evmConfig('http://127.0.0.1:1', { relayer: { name: 'Renamed relayer' } })));
    svc = await svc.restart();
    const renamed = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'evm-relayer' } });
    expect(renamed).toMatchObject({ name: 'Renamed relayer', paused: false });
  });
});

describe('API key', () => {
  it('is generated once under DATA_DIR when none is given on the embedded database, and reused', async () => {
    let svc = await startTestService({ env: { API_KEY: '' }, workers: false });
    running.push({ stop: () => svc.stop() });
    const stored = (await readFile(path.join(svc.dir, 'api-key'), 'utf8')).trim();
    expect(stored.length).toBeGreaterThanOrEqual(32);
    expect(svc.apiKey).toBe(stored);
    const res = await svc.request('GET', '/graphql?query={relayers{pagination{totalItems}}}', undefined, { authorization: `Bearer ${stored}` });
    expect(res.status).toBe(200);
    svc = await svc.restart();
    expect(svc.apiKey).toBe(stored);
  });

  it('is required with DATABASE_URL', async () => {
    const env = parseEnv({ DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres', CONFIG_PATH: 'config/config.json', DEVNET: 'false' });
    await expect(startService(env, { log: createLogger('silent') })).rejects.toThrow(/API_KEY is required/);
  });

  it('rejects wrong and malformed tokens on /graphql', async () => {
    const svc = await startTestService();
    running.push(svc);
    for (const authorization of ['', `Bearer ${API_KEY}x`, API_KEY, `Basic ${API_KEY}`, 'Bearer']) {
      const res = await svc.request('POST', '/graphql', { query: '{ relayers { pagination { totalItems } } }' }, { authorization });
      expect(res.status).toBe(401);
      expect((await res.json()).errors[0].message).toBe('Unauthorized');
    }
  });
});

describe('GraphQL', () => {
  let svc: TestService;
  it('reads a relayer with its notification and transactions in one request', async () => {
    svc = await startTestService({
      config: ({ rpcUrl }) => evmConfig(rpcUrl, { notifications: [{ id: 'hook', url: 'http://127.0.0.1:9/hook' }], relayer: { notification_id: 'hook' } }),
    });
    running.push(svc);
    await svc.rt.db.prisma.transaction.create({
      data: {
        relayerId: 'evm-relayer',
        networkType: 'evm',
        from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
        to: '0x0000000000000000000000000000000000000001',
        value: '340282366920938463463374607431768211455',
        nonce: 0n,
        request: {},
        status: 'submitted',
        dueAt: null,
      },
    });
    const { data, errors } = await svc.gql(`{
      relayer(id: "evm-relayer") {
        id paused systemDisabled
        notification { id url hasSigningKey }
        transactions(perPage: 5, status: submitted) { items { status value nonce to } pagination { totalItems currentPage perPage } }
      }
    }`);
    expect(errors).toBeUndefined();
    expect(data.relayer).toEqual({
      id: 'evm-relayer',
      paused: false,
      systemDisabled: false,
      notification: { id: 'hook', url: 'http://127.0.0.1:9/hook', hasSigningKey: false },
      transactions: {
        items: [{ status: 'submitted', value: '340282366920938463463374607431768211455', nonce: 0, to: '0x0000000000000000000000000000000000000001' }],
        pagination: { totalItems: 1, currentPage: 1, perPage: 5 },
      },
    });
  });

  it('names the relayer in a not-found error', async () => {
    svc = await startTestService();
    running.push(svc);
    const { errors } = await svc.gql('{ relayer(id: "nope") { id } }');
    expect(errors?.[0]).toMatchObject({ message: 'Relayer with ID nope not found', extensions: { code: 'NOT_FOUND' } });
  });

  it('serves GraphiQL to a browser without exposing the key', async () => {
    svc = await startTestService();
    running.push(svc);
    const res = await svc.request('GET', '/graphql', undefined, { authorization: '', accept: 'text/html' });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain('GraphiQL');
    expect(html).not.toContain(API_KEY);
  });
});

describe('logs', () => {
  it('are JSON lines with a request id, and never carry the token or secrets', async () => {
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, cb) => (lines.push(...String(chunk).trim().split('\n')), cb()) });
    const log = createLogger('debug', sink);
    log.info({ headers: { authorization: `Bearer ${API_KEY}` }, passphrase: 'devnet', signing_key: 'hook-secret' }, 'something with secrets');
    const svc = await startTestService({ workers: false });
    running.push(svc);
    await createApp({ ...svc.rt, log }, API_KEY).fetch(
      new Request('http://x/graphql', {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'x-request-id': 'req-42' },
        body: '{"query":"{ relayer(id: \\"missing\\") { id } }"}',
      }),
    );
    const text = lines.join('\n');
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain('hook-secret');
    expect(text).not.toMatch(/"passphrase":"devnet"/);
    const request = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.path === '/graphql');
    expect(request).toMatchObject({ requestId: 'req-42', method: 'POST', status: 200 });
  });
});
