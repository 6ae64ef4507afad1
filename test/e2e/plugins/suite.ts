// Plugins end to end on one database: written against @openzeppelin/relayer-sdk's types, called
// through its PluginsApi, on a real anvil chain.
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evmConfig, startTestService, type TestService } from '../../support/service.js';
import { sdkClient, type Client } from '../../support/sdk.js';

export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** The error an SDK call rejects with: its status, body and headers. */
async function rejected(call: Promise<unknown>): Promise<{ status: number; body: any; headers: Record<string, string> }> {
  try {
    await call;
  } catch (e) {
    const response = (e as { response?: { status: number; data: any; headers: Record<string, string> } }).response;
    if (!response) throw e;
    return { status: response.status, body: response.data, headers: response.headers };
  }
  throw new Error('the call succeeded');
}

const plugin = (id: string, file: string, extra: object = {}) => ({ id, path: file, ...extra });

export function pluginSuite(db: 'pglite' | 'postgres', run = true) {
  describe.runIf(run)(`plugins (${db})`, () => {
    let svc: TestService;
    let client: Client;

    beforeAll(async () => {
      svc = await startTestService({
        db,
        anvil: true,
        env: { PLUGIN_MEMORY_MB: '64', PLUGIN_MAX_CONCURRENCY: '2', PLUGIN_MAX_QUEUE: '1' },
        config: ({ rpcUrl }) => ({
          ...evmConfig(rpcUrl),
          plugins: [
            // Relative to the config file's folder (a new one under the temporary directory).
            plugin('counter', path.join(path.relative(path.join(tmpdir(), 'any'), FIXTURES), 'counter.ts'), { emit_logs: true, emit_traces: true }),
            plugin('failing', path.join(FIXTURES, 'failing.ts'), { emit_logs: true }),
            plugin('forever', path.join(FIXTURES, 'forever.ts'), { timeout: 1 }),
            plugin('hungry', path.join(FIXTURES, 'hungry.ts')),
            plugin('exits', path.join(FIXTURES, 'exits.ts')),
            plugin('echo', path.join(FIXTURES, 'echo.ts'), { allow_get_invocation: true, emit_logs: true, config: { greeting: 'hi' } }),
            plugin('echo-post', path.join(FIXTURES, 'echo.ts'), { raw_response: true }),
            plugin('sleepy', path.join(FIXTURES, 'sleepy.ts')),
            plugin('trespass', path.join(FIXTURES, 'trespass.ts')),
            plugin('store', path.join(FIXTURES, 'store.ts')),
            plugin('payout', path.join(FIXTURES, '../../../../examples/plugins/payout.ts'), { config: { relayerId: 'evm-relayer', maxAmount: 1000 } }),
          ],
        }),
      });
      client = await sdkClient(svc);
    }, 120_000);
    afterAll(async () => {
      await client?.close();
      await svc?.stop();
    });

    it('sends a transaction, waits for it and counts under a lock, called through PluginsApi', async () => {
      const call = () => client.plugins.callPlugin('counter', { params: { relayerId: 'evm-relayer', to: RECEIVER } });
      const first = await call();
      expect(first.status).toBe(200);
      expect(first.data).toMatchObject({ success: true, error: null, data: { status: expect.stringMatching(/^(mined|confirmed)$/), count: 1 } });
      const { hash, id } = first.data.data as { hash: string; id: string };
      const receipt = await fetch(svc.anvil!.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionReceipt', params: [hash] }),
      }).then((r) => r.json());
      expect(receipt.result).toMatchObject({ status: '0x1', to: RECEIVER.toLowerCase() });
      const tx = await svc.request('GET', `/api/v1/relayers/evm-relayer/transactions/${id}`).then((r) => r.json());
      expect(tx.data).toMatchObject({ id, hash });
      // Logs and the relayer calls it made, as emit_logs and emit_traces ask.
      const metadata = (first.data as { metadata: { logs: unknown[]; traces: { method: string }[] } }).metadata;
      expect(metadata.logs).toContainEqual({ level: 'info', message: `sending to ${RECEIVER}` });
      expect(metadata.traces.map((t) => t.method)).toEqual(['sendTransaction', 'transactionWait']);
      expect(metadata.traces[0]).toMatchObject({ relayerId: 'evm-relayer', method: 'sendTransaction', payload: { to: RECEIVER } });
      expect((await call()).data.data).toMatchObject({ count: 2 });
    });

    it("answers a PluginError's status, code and details in the envelope", async () => {
      const { status, body } = await rejected(client.plugins.callPlugin('failing', { params: { amount: 99 } }));
      expect(status).toBe(422);
      expect(body).toEqual({
        success: false,
        data: { code: 'AMOUNT_TOO_LARGE', details: { max: 10, given: 99 } },
        error: 'amount is too large',
        message: 'amount is too large',
        metadata: { logs: [], traces: [] },
      });
      const plain = await rejected(client.plugins.callPlugin('failing', { params: { plain: true } }));
      expect(plain.status).toBe(500);
      expect(plain.body).toMatchObject({ success: false, error: 'plain failure', data: { code: null, details: null } });
    });

    it('stops a plugin that never returns at its timeout, and goes on serving', async () => {
      const started = Date.now();
      const { status, body } = await rejected(client.plugins.callPlugin('forever', { params: {} }));
      expect(status).toBe(504);
      expect(body.error).toBe('plugin forever did not answer within 1 s and was stopped');
      expect(Date.now() - started).toBeLessThan(5_000);
      // Its worker is gone: what remains is one spare per plugin.
      await expect.poll(() => svc.rt.plugins.workers.size, { timeout: 5_000 }).toBe(svc.rt.plugins.byId.size);
      expect((await svc.request('GET', '/api/v1/relayers/evm-relayer')).status).toBe(200);
      expect((await client.plugins.callPlugin('sleepy', { params: { ms: 1 } })).data.data).toBe('rested');
    });

    it('stops a plugin that allocates without bound, and one that exits', async () => {
      const hungry = await rejected(client.plugins.callPlugin('hungry', { params: {} }));
      expect(hungry.status).toBe(500);
      expect(hungry.body.error).toBe('plugin hungry ran out of memory (limit 64 MB) and was stopped');
      const exits = await rejected(client.plugins.callPlugin('exits', { params: {} }));
      expect(exits.status).toBe(500);
      expect(exits.body.error).toBe('plugin exits exited (code 3) before answering');
      expect((await svc.request('GET', '/api/v1/relayers')).status).toBe(200);
      expect((await client.plugins.callPlugin('sleepy', { params: { ms: 1 } })).status).toBe(200);
    });

    it("refuses, inside the plugin, a relayer its caller's key may not use: 403 and nothing sent", async () => {
      const created = await svc
        .request('POST', '/api/v1/api-keys', { name: 'plugin only', permissions: ['plugin:trespass:execute', 'relayer:evm-relayer:read'] })
        .then((r) => r.json());
      const limited = await sdkClient(svc, created.data.value);
      try {
        const before = (await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions').then((r) => r.json())).pagination.total_items;
        const { status, body } = await rejected(limited.plugins.callPlugin('trespass', { params: { relayerId: 'evm-relayer', to: RECEIVER } }));
        expect(status).toBe(403);
        expect(body).toMatchObject({ success: false, error: 'Forbidden: this API key lacks relayer:evm-relayer:execute', data: { code: 'FORBIDDEN' } });
        const after = (await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions').then((r) => r.json())).pagination.total_items;
        expect(after).toBe(before);
        // Without plugin:<id>:execute the call itself is refused.
        const outside = await rejected(limited.plugins.callPlugin('echo', { params: {} }));
        expect(outside.status).toBe(403);
        expect(outside.body.error).toBe('this API key lacks plugin:echo:execute');
      } finally {
        await limited.close();
      }
    });

    it('takes GET calls only from plugins that allow them, with the route, query and headers', async () => {
      const res = await fetch(`${client.url}/api/v1/plugins/echo/call/some/route?x=1&x=2`, {
        headers: { authorization: `Bearer ${svc.apiKey}`, 'x-trace': 'abc' },
      });
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body.data).toMatchObject({ params: {}, route: '/some/route', method: 'GET', query: { x: ['1', '2'] }, config: { greeting: 'hi' }, env: [] });
      expect(body.data.headers['x-trace']).toEqual(['abc']);
      expect(body.data.headers.authorization).toBeUndefined();
      expect(body.metadata.logs).toEqual([
        { level: 'log', message: 'echo /some/route' },
        { level: 'warn', message: 'a warning' },
      ]);
      expect((await client.plugins.callPluginGet('echo', '/by-query')).data.data).toMatchObject({ route: '/by-query', method: 'GET' });

      const refused = await rejected(client.plugins.callPluginGet('echo-post'));
      expect(refused.status).toBe(405);
      expect(refused.body.error).toBe("GET requests are not enabled for this plugin. Set 'allow_get_invocation: true' in plugin configuration to enable.");
      // Allowed once PATCHed, and read back so.
      const patched = await client.plugins.updatePlugin('echo-post', { allow_get_invocation: true });
      expect(patched.data.data).toMatchObject({ id: 'echo-post', allow_get_invocation: true, raw_response: true });
      expect((await client.plugins.getPlugin('echo-post')).data.data).toMatchObject({ allow_get_invocation: true });
      // raw_response: the bare result.
      expect((await client.plugins.callPluginGet('echo-post')).data).toMatchObject({ method: 'GET', params: {} });
      await client.plugins.updatePlugin('echo-post', { allow_get_invocation: false });
      expect((await rejected(client.plugins.callPluginGet('echo-post'))).status).toBe(405);
    });

    it('takes the whole body as params when it has no params field', async () => {
      const res = await svc.request('POST', '/api/v1/plugins/echo/call', { amount: 5 });
      expect((await res.json()).data.params).toEqual({ amount: 5 });
      const bad = await svc.request('POST', '/api/v1/plugins/echo/call', '{"params":');
      expect(bad.status).toBe(400);
    });

    it('keeps kv per plugin: get, set with ttl, del, exists, listKeys, clear', async () => {
      const { data } = await client.plugins.callPlugin('store', { params: {} });
      expect(data.data).toEqual({
        before: { a: { n: 1 }, exists: true, keys: ['a:1', 'a:2'], all: ['a:1', 'a:2', 'b_1', 'short'] },
        expired: { get: null, exists: false },
        deleted: true,
        again: false,
        invalid: 'invalid key: 1 to 512 of A-Z a-z 0-9 : _ -',
        cleared: 2,
        after: [],
      });
      // The counter plugin's keys are its own.
      const counter = await svc.rt.db.prisma.pluginKv.findUnique({ where: { namespace_key: { namespace: 'counter', key: 'count' } } });
      expect(counter?.value).toBe(2);
    });

    it("runs the repository's example plugin: one payout per reference", async () => {
      const pay = (params: object) => client.plugins.callPlugin('payout', { params });
      const first = await pay({ reference: 'order-1', to: RECEIVER, amount: 5, wait: true });
      expect(first.data.data).toMatchObject({ reference: 'order-1', status: expect.stringMatching(/^(mined|confirmed)$/), hash: expect.stringMatching(/^0x/) });
      const again = await pay({ reference: 'order-1', to: RECEIVER, amount: 5 });
      expect((again.data.data as { transactionId: string }).transactionId).toBe((first.data.data as { transactionId: string }).transactionId);
      const bad = await rejected(pay({ reference: 'order-2', to: RECEIVER, amount: 5000 }));
      expect(bad).toMatchObject({ status: 400, body: { error: 'amount: a whole number of wei from 1 to 1000', data: { code: 'INVALID_AMOUNT' } } });
    });

    it('answers 429 past the concurrency and queue bounds', async () => {
      const calls = await Promise.all(
        Array.from({ length: 5 }, () =>
          svc
            .request('POST', '/api/v1/plugins/sleepy/call', { params: { ms: 700 } })
            .then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after') })),
        ),
      );
      expect(calls.filter((c) => c.status === 200)).toHaveLength(3);
      expect(calls.filter((c) => c.status === 429)).toEqual([
        { status: 429, retry: '1' },
        { status: 429, retry: '1' },
      ]);
    });

    it('lists, reads and updates plugins; 404 and 400 change nothing', async () => {
      const list = await client.plugins.listPlugins(1, 3);
      expect(list.data.pagination).toEqual({ current_page: 1, per_page: 3, total_items: 11 });
      expect((list.data.data as unknown as { id: string }[]).map((p) => p.id)).toEqual(['counter', 'failing', 'forever']);
      expect((await client.plugins.getPlugin('forever')).data.data).toMatchObject({ id: 'forever', timeout: 1, emit_logs: false, config: null });
      const missing = await rejected(client.plugins.getPlugin('nope'));
      expect(missing).toMatchObject({ status: 404, body: { error: 'Plugin with id nope not found' } });
      expect((await rejected(client.plugins.callPlugin('nope', { params: {} }))).status).toBe(404);
      const bad = await svc.request('PATCH', '/api/v1/plugins/sleepy', { timeout: 0, emit_log: true });
      expect(bad.status).toBe(400);
      expect((await bad.json()).error).toMatch(/timeout.*emit_log|emit_log.*timeout/);
      expect((await client.plugins.getPlugin('sleepy')).data.data).toMatchObject({ timeout: 300 });
      const updated = await client.plugins.updatePlugin('sleepy', { timeout: 30, config: { a: 1 } });
      expect(updated.data.data).toMatchObject({ timeout: 30, config: { a: 1 } });
      expect((await client.plugins.updatePlugin('sleepy', { config: null } as never)).data.data).toMatchObject({ timeout: 30, config: null });
    });

    it('is called through GraphQL too, and counted in the metrics', async () => {
      const r = await svc.gql('mutation { callPlugin(id: "echo", params: { a: 1 }, route: "/x") { status success data error logs { level message } } }');
      expect(r.errors).toBeUndefined();
      expect(r.data.callPlugin).toMatchObject({ status: 200, success: true, data: { params: { a: 1 }, route: '/x', method: 'POST' } });
      const failed = await svc.gql('mutation { callPlugin(id: "failing", params: { amount: 1 }) { status success data error } }');
      expect(failed.data.callPlugin).toEqual({
        status: 422,
        success: false,
        data: { code: 'AMOUNT_TOO_LARGE', details: { max: 10, given: 1 } },
        error: 'amount is too large',
      });
      const list = await svc.gql('{ plugins(perPage: 100) { items { id timeout } } plugin(id: "forever") { timeout } }');
      expect(list.data.plugins.items).toHaveLength(11);
      const text = await svc.rt.metrics.registry.getSingleMetricAsString('relayer_plugin_calls_total');
      for (const line of [
        'plugin_id="counter",outcome="ok"',
        'plugin_id="forever",outcome="timeout"',
        'plugin_id="hungry",outcome="memory"',
        'plugin_id="failing",outcome="plugin_error"',
      ])
        expect(text).toContain(line);
      expect(await svc.rt.metrics.registry.getSingleMetricAsString('relayer_plugin_call_duration_seconds')).toContain('plugin_id="echo"');
    });
  });
}
