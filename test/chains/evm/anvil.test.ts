import { afterAll, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { createPublicClient, http } from 'viem';
import {
  ANVIL_DEFAULT_MNEMONIC,
  ANVIL_DEPLOYER_PRIVATE_KEY,
  ANVIL_DEV_ADDRESS,
  ANVIL_DEV_PRIVATE_KEY,
  anvilBinaryPath,
  startAnvil,
  type AnvilInstance,
} from '../../../src/chains/evm/anvil.js';
import { mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';

const started: AnvilInstance[] = [];
afterAll(async () => {
  await Promise.all(started.map((a) => a.stop()));
});

describe('startAnvil', () => {
  it('exports the default dev account', () => {
    expect(ANVIL_DEFAULT_MNEMONIC.split(' ')).toHaveLength(12);
    expect(ANVIL_DEV_ADDRESS).toBe('0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266');
    expect(privateKeyToAccount(ANVIL_DEV_PRIVATE_KEY).address).toBe(ANVIL_DEV_ADDRESS);
    expect(privateKeyToAccount(ANVIL_DEPLOYER_PRIVATE_KEY).address).toBe(mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 9 }).address);
    expect(mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC).address).toBe(ANVIL_DEV_ADDRESS);
    expect(anvilBinaryPath()).toMatch(/anvil(\.exe)?$/);
  });

  it('starts on a free port, answers, and stops', async () => {
    const node = await startAnvil({ chainId: 1337, accounts: 2, balance: 5 });
    started.push(node);
    expect(node.url).toBe(`http://127.0.0.1:${node.port}`);
    const client = createPublicClient({ transport: http(node.url, { retryCount: 0 }) });
    expect(await client.getChainId()).toBe(1337);
    expect(await client.getBalance({ address: ANVIL_DEV_ADDRESS })).toBe(5n * 10n ** 18n);

    await node.stop();
    expect(node.process.exitCode !== null || node.process.signalCode !== null).toBe(true);
    await expect(client.getChainId()).rejects.toThrow();
    await node.stop(); // idempotent
  });

  it('runs several instances side by side', async () => {
    const nodes = await Promise.all([startAnvil(), startAnvil(), startAnvil()]);
    started.push(...nodes);
    expect(new Set(nodes.map((n) => n.port)).size).toBe(3);
    await Promise.all(nodes.map((n) => n.stop()));
  });

  it('mines on an interval with blockTime', async () => {
    const node = await startAnvil({ blockTime: 1 });
    started.push(node);
    const client = createPublicClient({ transport: http(node.url) });
    const first = await client.getBlockNumber({ cacheTime: 0 });
    await new Promise((r) => setTimeout(r, 2200));
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBeGreaterThan(first);
    await node.stop();
  });

  it('fails fast with anvil stderr when it cannot start', async () => {
    const t0 = Date.now();
    await expect(startAnvil({ mnemonic: 'not a valid mnemonic' })).rejects.toThrow(/anvil failed to start: .*invalid/);
    expect(Date.now() - t0).toBeLessThan(5000);
  });

  it('reports an explicitly requested port that is taken', async () => {
    const blocker = createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    try {
      await expect(startAnvil({ port })).rejects.toThrow(new RegExp(`port ${port} in use`));
    } finally {
      blocker.close();
    }
  });
});
