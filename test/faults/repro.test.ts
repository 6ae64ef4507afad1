import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startAnvil } from '../../src/chains/evm/anvil.js';
import { startInstance } from '../support/instance.js';
import { DEV_ADDRESS, evmConfig } from '../support/service.js';
import { RECEIVER, rpc } from '../evm/helpers.js';

const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

it('repro: held pool, resubmissions, kill -9, restart, then mining', async () => {
  const anvil = await startAnvil();
  cleanup.push(() => anvil.stop());
  await rpc(anvil.url, 'evm_setAutomine', [false]);
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-repro-'));
  cleanup.push(() => rm(dir, { recursive: true, force: true }));
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(evmConfig(anvil.url)));
  const env = { CONFIG_PATH: path.join(dir, 'config.json'), DATA_DIR: dir, LOG_LEVEL: 'info' };
  const a = await startInstance(env);
  cleanup.push(() => a.kill());
  const ids: string[] = [];
  for (let i = 0; i < 20; i++) {
    const res = await a.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 1000 + i });
    expect(res.status).toBe(200);
    ids.push(((await res.json()) as any).data.id);
  }
  await new Promise((r) => setTimeout(r, Number(process.env.KILL_AFTER ?? 8000)));
  await a.kill();
  const b = await startInstance(env);
  cleanup.push(() => b.stop());
  await rpc(anvil.url, 'evm_setIntervalMining', [1]);
  await new Promise((r) => setTimeout(r, 15000));
  const n = Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));
  const head = Number(await rpc(anvil.url, 'eth_blockNumber'));
  let toReceiver = 0;
  for (let i = 0; i <= head; i++) {
    const block = await rpc(anvil.url, 'eth_getBlockByNumber', [`0x${i.toString(16)}`, true]);
    for (const t of block.transactions) if (t.to?.toLowerCase() === RECEIVER.toLowerCase()) toReceiver++;
  }
  console.log('nonce', n, 'to receiver', toReceiver);
  console.log(a.output().split('\n').filter((l) => /warn|error|nonce/i.test(l)).slice(0, 20).join('\n'));
  console.log(b.output().split('\n').filter((l) => /warn|error|nonce/i.test(l)).slice(0, 20).join('\n'));
  expect(toReceiver).toBe(20);
});
