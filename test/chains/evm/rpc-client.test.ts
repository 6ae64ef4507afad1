import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPublicClient } from 'viem';
import { startAnvil, type AnvilInstance } from '../../../src/chains/evm/anvil.js';
import { createEvmRpc, isTransientRpcError, RpcError, RpcUnavailableError } from '../../../src/chains/evm/rpc-client.js';
import { countingProxy, rpcErrorServer, testServer, type TestServer } from './servers.js';

const DEAD = 'http://127.0.0.1:1';
// Contract-creation init code that immediately REVERTs (PUSH1 0 PUSH1 0 REVERT).
const REVERTING_INIT_CODE = '0x60006000fd';

/** The error a promise rejects with; fails the test if it resolves. */
function rejection(p: Promise<unknown>): Promise<any> {
  return p.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e) => e,
  );
}

let anvil: AnvilInstance;
const servers: TestServer[] = [];
async function track(s: Promise<TestServer>): Promise<TestServer> {
  const server = await s;
  servers.push(server);
  return server;
}

beforeAll(async () => {
  anvil = await startAnvil();
});

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await anvil?.stop();
});

describe('createEvmRpc', () => {
  it('fails over from a dead endpoint and marks it unhealthy', async () => {
    const warn = vi.fn();
    const rpc = createEvmRpc(
      [
        { url: DEAD, weight: 1_000_000 },
        { url: anvil.url, weight: 1 },
      ],
      { logger: { warn } },
    );
    for (let i = 0; i < 5; i++) expect(await rpc.request('eth_chainId')).toBe('0x7a69');

    const [dead, live] = rpc.status();
    expect(dead).toMatchObject({ host: '127.0.0.1:1', healthy: false, consecutiveFailures: 1 });
    expect(live).toMatchObject({ healthy: true, consecutiveFailures: 0 });
    // Logged once (on entering cooldown), with the host only.
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toMatchObject({ host: '127.0.0.1:1', method: 'eth_chainId' });
    expect(JSON.stringify(warn.mock.calls[0][0])).not.toContain('http://');
  });

  it('throws RpcUnavailableError when every endpoint is down', async () => {
    const closed = await track(testServer(() => {}));
    await closed.close();
    const rpc = createEvmRpc(
      [
        { url: DEAD, weight: 100 },
        { url: closed.url, weight: 100 },
      ],
      { retries: 3 },
    );
    const err = await rejection(rpc.request('eth_chainId'));
    expect(err).toBeInstanceOf(RpcUnavailableError);
    expect(err.failures).toHaveLength(4);
    expect(rpc.status().every((s) => !s.healthy)).toBe(true);
  });

  it('throws deterministic node errors to the caller without retrying', async () => {
    const a = await track(countingProxy(anvil.url));
    const b = await track(countingProxy(anvil.url));
    const rpc = createEvmRpc(
      [
        { url: a.url, weight: 100 },
        { url: b.url, weight: 100 },
      ],
      { retries: 2 },
    );
    const err = await rejection(rpc.request('eth_call', [{ data: REVERTING_INIT_CODE }]));
    expect(err).toBeInstanceOf(RpcError);
    expect(err.code).toBe(3);
    expect(err.message).toMatch(/execution reverted/);
    expect(err.data).toBe('0x');
    expect(a.hits() + b.hits()).toBe(1);
    expect(rpc.status().every((s) => s.healthy)).toBe(true);
  });

  it('gathers the calls of several callers in one turn into one request; each gets its own answers, a refusal only its own', async () => {
    const proxy = await track(countingProxy(anvil.url));
    const rpc = createEvmRpc([{ url: proxy.url, weight: 100 }]);
    const [a, b, c] = await Promise.all([
      rpc.gather([{ method: 'eth_chainId' }, { method: 'eth_getTransactionCount', params: ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'latest'] }]),
      rpc.gather([{ method: 'eth_call', params: [{ data: REVERTING_INIT_CODE }] }]),
      rpc.gather([{ method: 'eth_blockNumber' }]),
    ]);
    expect(proxy.hits()).toBe(1);
    expect(a).toEqual([
      { ok: true, result: '0x7a69' },
      { ok: true, result: expect.stringMatching(/^0x/) },
    ]);
    expect(b).toHaveLength(1);
    expect(b[0]).toMatchObject({ ok: false, error: { code: 3 } });
    expect(c).toEqual([{ ok: true, result: expect.stringMatching(/^0x/) }]);
    // A lone caller's calls go as they would on their own.
    expect(await rpc.gather([{ method: 'eth_chainId' }])).toEqual([{ ok: true, result: '0x7a69' }]);
    expect(proxy.hits()).toBe(2);
  });

  it('fails every gathered caller when no endpoint answers', async () => {
    const rpc = createEvmRpc([{ url: DEAD, weight: 100 }], { retries: 0 });
    const failed = await Promise.all([rpc.gather([{ method: 'eth_chainId' }]), rpc.gather([{ method: 'eth_blockNumber' }])].map(rejection));
    for (const err of failed) expect(err).toBeInstanceOf(RpcUnavailableError);
  });

  it.each([
    [-32000, 'nonce too low'],
    [-32000, 'already known'],
    [-32003, 'insufficient funds for gas * price + value'],
    [-32603, 'execution reverted: nope'],
  ])('does not retry %i %s', async (code, message) => {
    const a = await track(rpcErrorServer(code, message));
    const b = await track(rpcErrorServer(code, message));
    const rpc = createEvmRpc([
      { url: a.url, weight: 100 },
      { url: b.url, weight: 100 },
    ]);
    const err = await rejection(rpc.request('eth_sendRawTransaction', ['0x00']));
    expect(err).toBeInstanceOf(RpcError);
    expect(err).toMatchObject({ code, message });
    expect(a.hits() + b.hits()).toBe(1);
  });

  it('fails over on transient JSON-RPC errors and HTTP 429/5xx', async () => {
    const headerNotFound = await track(rpcErrorServer(-32000, 'header not found'));
    const internal = await track(rpcErrorServer(-32603, 'internal error'));
    const http503 = await track(testServer((_b, res) => void res.writeHead(503).end('down')));
    const http429 = await track(testServer((_b, res) => void res.writeHead(429).end('slow down')));
    for (const bad of [headerNotFound, internal, http503, http429]) {
      // Weight 0 on the live node: it is only used once the bad one has failed.
      const rpc = createEvmRpc([
        { url: bad.url, weight: 100 },
        { url: anvil.url, weight: 0 },
      ]);
      const before = bad.hits();
      expect(await rpc.request('eth_chainId')).toBe('0x7a69');
      expect(bad.hits() - before).toBe(1);
    }
  });

  it('times out a hanging endpoint', async () => {
    const hanging = await track(testServer(() => {}));
    const alone = createEvmRpc([{ url: hanging.url, weight: 100 }], { timeoutMs: 200, retries: 0 });
    const started = Date.now();
    const err = await rejection(alone.request('eth_chainId'));
    expect(err).toBeInstanceOf(RpcUnavailableError);
    expect(err.failures[0].error).toMatch(/timeout/);
    expect(Date.now() - started).toBeLessThan(2000);

    const withBackup = createEvmRpc(
      [
        { url: hanging.url, weight: 100 },
        { url: anvil.url, weight: 0 },
      ],
      { timeoutMs: 200 },
    );
    expect(await withBackup.request('eth_chainId')).toBe('0x7a69');
  });

  it('keeps a failing endpoint in cooldown, doubling it on repeated failure', async () => {
    const flaky = await track(testServer((_b, res) => void res.writeHead(502).end()));
    const rpc = createEvmRpc(
      [
        { url: flaky.url, weight: 100 },
        { url: anvil.url, weight: 0 },
      ],
      { cooldownMs: 150 },
    );
    for (let i = 0; i < 5; i++) await rpc.request('eth_chainId');
    expect(flaky.hits()).toBe(1);

    await new Promise((r) => setTimeout(r, 200));
    await rpc.request('eth_chainId');
    expect(flaky.hits()).toBe(2);
    expect(rpc.status()[0].consecutiveFailures).toBe(2);

    // Second cooldown is 300ms: still skipped after 200ms.
    await new Promise((r) => setTimeout(r, 200));
    await rpc.request('eth_chainId');
    expect(flaky.hits()).toBe(2);
  });

  it('retries the only endpoint instead of refusing while it cools down', async () => {
    let calls = 0;
    const blip = await track(
      testServer((body, res) => {
        if (++calls === 1) return void res.writeHead(503).end();
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: '0x1' }));
      }),
    );
    const rpc = createEvmRpc([{ url: blip.url, weight: 100 }]);
    expect(await rpc.request('eth_chainId')).toBe('0x1');
    expect(blip.hits()).toBe(2);
  });

  it('takes an answer to another request as a failing endpoint, not as the result', async () => {
    const confused = await track(
      testServer((_body, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: 987654, result: '0x1' }));
      }),
    );
    const alone = createEvmRpc([{ url: confused.url, weight: 100 }], { retries: 0 });
    expect(await rejection(alone.request('eth_chainId'))).toBeInstanceOf(RpcUnavailableError);
    const beside = createEvmRpc(
      [
        { url: confused.url, weight: 1000 },
        { url: anvil.url, weight: 1 },
      ],
      { retries: 1 },
    );
    expect(await beside.request('eth_chainId')).toBe('0x7a69');
  });

  it('takes a result of the wrong shape for its method as a failing endpoint', async () => {
    const odd = await track(
      testServer((body, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, result: { unexpected: true } }));
      }),
    );
    const alone = createEvmRpc([{ url: odd.url, weight: 100 }], { retries: 0 });
    expect((await rejection(alone.request('eth_blockNumber'))).message).toMatch(/malformed result for eth_blockNumber/);
    // Methods whose shape is not known are passed through as they come.
    expect(await alone.request('web3_clientVersion')).toEqual({ unexpected: true });
    const beside = createEvmRpc(
      [
        { url: odd.url, weight: 1000 },
        { url: anvil.url, weight: 1 },
      ],
      { retries: 1 },
    );
    expect(await beside.request('eth_chainId')).toBe('0x7a69');
    const [receipt] = await beside.batch([{ method: 'eth_getTransactionReceipt', params: [`0x${'ab'.repeat(32)}`] }, { method: 'eth_blockNumber' }]);
    expect(receipt).toEqual({ ok: true, result: null });
  });

  it('picks endpoints by weight and never a weight-0 one while others are healthy', async () => {
    const light = await track(countingProxy(anvil.url));
    const heavy = await track(countingProxy(anvil.url));
    const backup = await track(countingProxy(anvil.url));
    const rpc = createEvmRpc([
      { url: light.url, weight: 100 },
      { url: heavy.url, weight: 300 },
      { url: backup.url, weight: 0 },
    ]);
    const n = 800;
    for (let i = 0; i < n; i += 50) {
      await Promise.all(Array.from({ length: 50 }, () => rpc.request('eth_blockNumber')));
    }
    expect(backup.hits()).toBe(0);
    expect(light.hits() + heavy.hits()).toBe(n);
    // Expected 600 of 800 (sd ≈ 12); generous bounds keep this from flaking.
    expect(heavy.hits()).toBeGreaterThan(530);
    expect(heavy.hits()).toBeLessThan(670);
  });

  it('falls back to a weight-0 endpoint when the others fail', async () => {
    const rpc = createEvmRpc([
      { url: DEAD, weight: 100 },
      { url: anvil.url, weight: 0 },
    ]);
    expect(await rpc.request('eth_chainId')).toBe('0x7a69');
  });

  it('rejects invalid URLs without echoing them', () => {
    expect(() => createEvmRpc([{ url: 'not a url/secret-key', weight: 100 }])).toThrow(/endpoint #0/);
    try {
      createEvmRpc([{ url: 'not a url/secret-key', weight: 100 }]);
    } catch (e) {
      expect(String(e)).not.toContain('secret-key');
    }
  });

  it('works as a viem transport with failover', async () => {
    const rpc = createEvmRpc([
      { url: DEAD, weight: 1_000_000 },
      { url: anvil.url, weight: 1 },
    ]);
    const client = createPublicClient({ transport: rpc.transport });
    expect(await client.getChainId()).toBe(31337);
    expect(typeof (await client.getBlockNumber())).toBe('bigint');
    await expect(client.call({ data: REVERTING_INIT_CODE })).rejects.toThrow(/revert/i);
  });
});

describe('isTransientRpcError', () => {
  it('classifies common node errors', () => {
    expect(isTransientRpcError(-32000, 'header not found')).toBe(true);
    expect(isTransientRpcError(-32603, 'Internal error')).toBe(true);
    expect(isTransientRpcError(-32005, 'limit exceeded')).toBe(true);
    expect(isTransientRpcError(-32000, 'nonce too low')).toBe(false);
    expect(isTransientRpcError(-32000, 'replacement transaction underpriced')).toBe(false);
    expect(isTransientRpcError(3, 'execution reverted')).toBe(false);
    expect(isTransientRpcError(-32602, 'invalid params')).toBe(false);
    expect(isTransientRpcError(-32601, 'Method not found')).toBe(false);
  });
});
