import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toHex, type Address } from 'viem';
import { startAnvil, type AnvilInstance } from '../../src/chains/evm/anvil.js';
import { minedAt } from '../../src/chains/evm/evidence.js';
import { createEvmRpc } from '../../src/chains/evm/rpc-client.js';
import { getTx, RECEIVER, rpc, sendOk, waitFor } from '../support/evm.js';
import { startRpcProxy, type Intercept } from '../support/rpc-proxy.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from '../support/service.js';

const NO_METHOD = { error: { code: -32601, message: 'the method does not exist/is not available' } };
const PRUNED = { error: { code: -32000, message: 'missing trie node' } };
/** The node keeps no history and no index by sender: nothing proves who used a nonce. */
const noHistory: Intercept = (c) => {
  if (c.method === 'eth_getTransactionBySenderAndNonce' || c.method === 'ots_getTransactionBySenderAndNonce') return NO_METHOD;
  if (c.method === 'eth_getTransactionCount' && /^0x/.test(String(c.params?.[1]))) return PRUNED;
  return undefined;
};
const noReceipts: Intercept = (c) => (c.method === 'eth_getTransactionReceipt' ? { result: null } : undefined);

async function transfersOnChain(url: string, values: string[]) {
  const head = Number(await rpc(url, 'eth_blockNumber'));
  const seen = new Map<string, number>();
  for (let b = 0; b <= head; b++) {
    const block = await rpc(url, 'eth_getBlockByNumber', [`0x${b.toString(16)}`, true]);
    for (const t of block.transactions)
      if (t.from.toLowerCase() === DEV_ADDRESS.toLowerCase()) seen.set(BigInt(t.value).toString(), (seen.get(BigInt(t.value).toString()) ?? 0) + 1);
  }
  return values.map((v) => seen.get(v) ?? 0);
}

describe('who used a nonce: evidence on chain', () => {
  let anvil: AnvilInstance;
  beforeAll(async () => {
    anvil = await startAnvil();
  });
  afterAll(() => anvil?.stop());

  it('finds the mined transaction at a nonce by sender index, by a search of the account history, or not at all', async () => {
    const hashes: string[] = [];
    for (let i = 0; i < 3; i++) hashes.push(await rpc(anvil.url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: RECEIVER, value: toHex(i + 1) }]));
    const nonceOf = async (h: string) => BigInt((await rpc(anvil.url, 'eth_getTransactionByHash', [h])).nonce);
    const n = await nonceOf(hashes[1]);
    const head = BigInt(await rpc(anvil.url, 'eth_blockNumber'));
    expect(await minedAt(createEvmRpc([{ url: anvil.url, weight: 100 }]), DEV_ADDRESS as Address, n, head)).toBe(hashes[1]);

    const proxy = await startRpcProxy(anvil.url, (c) => (c.method.endsWith('getTransactionBySenderAndNonce') ? NO_METHOD : undefined));
    try {
      expect(await minedAt(createEvmRpc([{ url: proxy.url, weight: 100 }]), DEV_ADDRESS as Address, n, head)).toBe(hashes[1]);
      expect(await minedAt(createEvmRpc([{ url: proxy.url, weight: 100 }]), DEV_ADDRESS as Address, await nonceOf(hashes[2]), head)).toBe(hashes[2]);
      // A nonce the chain has not passed was used by nothing yet.
      expect(await minedAt(createEvmRpc([{ url: proxy.url, weight: 100 }]), DEV_ADDRESS as Address, 10_000n, head)).toBeNull();
      proxy.state.intercept = noHistory;
      expect(await minedAt(createEvmRpc([{ url: proxy.url, weight: 100 }]), DEV_ADDRESS as Address, n, head)).toBeNull();
    } finally {
      await proxy.close();
    }
  });
});

describe('a nonce the chain passed with no receipt in sight', () => {
  let anvil: AnvilInstance;
  let proxy: Awaited<ReturnType<typeof startRpcProxy>>;
  let svc: TestService;
  beforeAll(async () => {
    anvil = await startAnvil();
    proxy = await startRpcProxy(anvil.url);
    svc = await startTestService({ config: () => evmConfig(proxy.url) });
  });
  afterAll(async () => {
    await svc?.stop();
    await proxy?.close();
    await anvil?.stop();
  });

  it("is not taken for someone else's when the node just does not give receipts: the transaction mined is found to be ours, nothing is sent again", async () => {
    proxy.state.intercept = noReceipts;
    const start = Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));
    const values = ['1001', '1002', '1003', '1004', '1005'];
    const txs = [];
    for (const value of values) txs.push(await sendOk(svc, { to: RECEIVER, value }));
    // Mined (anvil mines each at once), receipts hidden: well past the three seconds after which
    // the old pipeline gave up on its own broadcasts and sent the payload again at a new nonce.
    await new Promise((r) => setTimeout(r, 8_000));
    expect(Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']))).toBe(start + values.length);
    for (const t of txs) expect((await getTx(svc, t.id)).nonce).toBe(t.nonce);
    proxy.state.intercept = () => undefined;
    for (const t of txs) await waitFor(svc, t.id, (x) => x.status === 'confirmed', 20_000);
    expect(await transfersOnChain(anvil.url, values)).toEqual([1, 1, 1, 1, 1]);
  });

  it('reads receipts served late again instead of searching the account for what took the nonce', async () => {
    // The node serves no receipt for 2 s from the first time one is asked for: the nonce has passed
    // by then (anvil mines at once), as when a node reports the nonce before it serves the receipts.
    const searches: string[] = [];
    let hideUntil: number | undefined;
    proxy.state.intercept = (c) => {
      if (c.method.endsWith('getTransactionBySenderAndNonce')) searches.push(c.method);
      if (c.method !== 'eth_getTransactionReceipt') return undefined;
      hideUntil ??= Date.now() + 2_000;
      return Date.now() < hideUntil ? { result: null } : undefined;
    };
    const tx = await sendOk(svc, { to: RECEIVER, value: '3001' });
    const done = await waitFor(svc, tx.id, (x) => x.status === 'confirmed', 20_000);
    expect(hideUntil).toBeDefined();
    expect(searches).toEqual([]);
    expect(done.nonce).toBe(tx.nonce);
    expect(await transfersOnChain(anvil.url, ['3001'])).toEqual([1]);
  });

  it('without proof of whose transaction used the nonce, keeps the nonce, sends nothing again and says so; then finishes once the node answers', async () => {
    proxy.state.intercept = (c) => noReceipts(c) ?? noHistory(c);
    const start = Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));
    const tx = await sendOk(svc, { to: RECEIVER, value: '2001' });
    const held = await waitFor(svc, tx.id, (x) => /not sent again/.test(x.statusReason ?? ''), 20_000);
    expect(held.statusReason).toContain(`nonce ${tx.nonce} was used on chain`);
    expect(held.nonce).toBe(tx.nonce);
    await new Promise((r) => setTimeout(r, 5_000));
    expect(Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']))).toBe(start + 1);
    proxy.state.intercept = () => undefined;
    const done = await waitFor(svc, tx.id, (x) => x.status === 'confirmed', 45_000);
    expect(done.nonce).toBe(tx.nonce);
    expect(done.statusReason).toBeNull();
    expect(await transfersOnChain(anvil.url, ['2001'])).toEqual([1]);
  }, 90_000);
});
