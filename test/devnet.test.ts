import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { freePort } from '../src/chains/evm/anvil.js';
import { ROOT, startTestService, type TestService } from './support/service.js';

let svc: TestService | undefined;
afterAll(() => svc?.stop());

async function sendAndConfirm(s: TestService): Promise<number> {
  const res = await s.request('POST', '/api/v1/relayers/devnet-relayer/transactions', { to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', value: 1 });
  expect(res.status).toBe(200);
  const { data } = await res.json();
  for (let i = 0; i < 100; i++) {
    const tx = await (await s.request('GET', `/api/v1/relayers/devnet-relayer/transactions/${data.id}`)).json();
    if (tx.data.status === 'confirmed') return tx.data.nonce;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('not confirmed in time');
}

it('the default config relays on its devnet at once, and the devnet keeps its chain across restarts', async () => {
  const config = JSON.parse(await readFile(path.join(ROOT, 'config/config.json'), 'utf8'));
  config.signers[0].config.path = path.join(ROOT, config.signers[0].config.path);
  svc = await startTestService({ config: () => config, env: { DEVNET: 'true', DEVNET_PORT: String(await freePort()) } });
  expect(await sendAndConfirm(svc)).toBe(0);
  // The ERC-4337 contracts are where clients look for them.
  for (const at of ['0x0000000071727De22E5E9d8BAf0edAc6f37da032', '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108', '0xe6Cae83BdE06E4c305530e199D7217f42808555B']) {
    const res = await svc.request('POST', '/api/v1/relayers/devnet-relayer/rpc', { jsonrpc: '2.0', id: 1, method: 'eth_getCode', params: [at, 'latest'] });
    const body = await res.json();
    expect(body.result.length, at).toBeGreaterThan(1000);
  }
  svc = await svc.restart();
  expect(await sendAndConfirm(svc)).toBe(1);
});
