// Two instances on one PostgreSQL database: what one changes through the API (a network's RPC
// URLs, a signer deleted and made again under its id) reaches the other within about a second.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresReachable } from '../support/postgres.js';
import { evmConfig, startTestService, type TestService } from '../support/service.js';

const KEY_A = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const KEY_B = '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a';

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 3_000): Promise<{ value: T; ms: number }> {
  const start = Date.now();
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() - start > ms) return { value, ms: Date.now() - start };
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe.skipIf(!(await postgresReachable()))('changes made on one instance, seen on the other', () => {
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    a = await startTestService({ db: 'postgres', anvil: true, workers: false, env: { SIGNER_STORE_KEY: 'a-store-key-0123456789' } });
    const url = a.rt.env.databaseUrl!;
    b = await startTestService({
      workers: false,
      config: () => evmConfig(a.anvil!.url),
      env: { DATABASE_URL: url, SIGNER_STORE_KEY: 'a-store-key-0123456789' },
    });
  }, 120_000);
  afterAll(async () => {
    await b?.stop();
    await a?.stop();
  });

  it("a network's RPC URLs", async () => {
    const res = await a.request('PATCH', '/api/v1/networks/evm:localnet', { rpc_urls: [{ url: 'http://127.0.0.1:1/other', weight: 40 }] });
    expect(res.status).toBe(200);
    const seen = await until(
      async () => (await (await b.request('GET', '/api/v1/networks/evm:localnet')).json()).data.rpc_urls,
      (urls) => urls[0]?.weight === 40,
    );
    expect(seen.value[0].weight).toBe(40);
    expect(seen.ms).toBeLessThan(1_500);
  });

  it('a signer deleted and made again under its id signs with its new key on the other instance', async () => {
    const relayer = { id: 'on-s', name: 'On s', network: 'localnet', network_type: 'evm', paused: false, signer_id: 's' };
    expect((await a.request('POST', '/api/v1/signers', { id: 's', type: 'plain', config: { key: KEY_A } })).status).toBe(201);
    // b loads the signer (its key A) for a relayer made there, which then goes.
    const first = await (await b.request('POST', '/api/v1/relayers', relayer)).json();
    expect((await b.request('DELETE', '/api/v1/relayers/on-s')).status).toBe(200);
    expect((await a.request('DELETE', '/api/v1/signers/s')).status).toBe(200);
    expect((await a.request('POST', '/api/v1/signers', { id: 's', type: 'plain', config: { key: KEY_B } })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1_000));
    const second = await (await b.request('POST', '/api/v1/relayers', { ...relayer, id: 'on-s-2' })).json();
    expect(second.data.address).not.toBe(first.data.address);
    expect(second.data.address).toBe('0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC');
  });
});
