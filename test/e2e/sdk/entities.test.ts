// The reference system's own client (@openzeppelin/relayer-sdk) against the whole service over
// HTTP: health and readiness, relayer create/delete/status/balance, transactions by nonce and the
// cancel of all pending ones, the list's status filter, signers and networks. Then each route's
// errors on both databases, and a restart with the same config file.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServerAdapter } from '@whatwg-node/server';
import { Configuration, HealthApi, NetworksApi, RelayersApi, SignersApi } from '@openzeppelin/relayer-sdk';
import { Networks } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSigner } from '../../../src/signers/index.js';
import { readKeystoreFile } from '../../../src/signers/keystore.js';
import { dbState, expectError, seedTransaction, SOLANA_RELAYER, startRestService, STELLAR_RELAYER } from '../../support/rest.js';
import { rpc } from '../../support/evm.js';
import { postgresReachable } from '../../support/postgres.js';
import { API_KEY, DEV_ADDRESS, DEV_KEYSTORE, evmConfig, startTestService, type TestService } from '../../support/service.js';
import { startSolanaRpc, type SolanaRpcStub } from '../../support/solana-rpc.js';
import { startStellarRpc, type StellarRpcStub } from '../../support/stellar-rpc.js';
import { startRedisServer } from '../../support/redis-server.js';

const STORE_KEY = 'signer-store-key-for-tests-0123456789';
// anvil's dev account #1.
const KEY_1 = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d';
const ADDRESS_1 = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';
const SOL = 1_000_000_000n;
const XLM = 10_000_000n;

/** The service on a real port, as a team would point the SDK at it. */
async function serve(svc: TestService) {
  const server: Server = createServer(createServerAdapter((request: Request) => svc.app.fetch(request)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const basePath = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const config = new Configuration({ basePath, accessToken: API_KEY });
  return {
    basePath,
    relayers: new RelayersApi(config),
    signers: new SignersApi(config),
    networks: new NetworksApi(config),
    health: new HealthApi(new Configuration({ basePath })),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The status and envelope of a refused SDK call (axios throws on non-2xx). */
async function refused(call: Promise<unknown>): Promise<{ status: number; body: any }> {
  try {
    await call;
  } catch (e) {
    const r = (e as { response?: { status: number; data: unknown } }).response;
    if (r) return { status: r.status, body: r.data };
    throw e;
  }
  throw new Error('the call succeeded');
}

async function until<T>(fn: () => Promise<T | undefined | false>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('@openzeppelin/relayer-sdk against the service (anvil, Solana and Stellar stand-ins)', () => {
  let svc: TestService;
  let api: Awaited<ReturnType<typeof serve>>;
  let solana: SolanaRpcStub;
  let stellar: StellarRpcStub;
  let solanaAddress: string;
  let stellarAddress: string;

  beforeAll(async () => {
    const secret = await readKeystoreFile(DEV_KEYSTORE, 'devnet');
    solanaAddress = createLocalSigner(secret, 'solana').address;
    stellarAddress = createLocalSigner(secret, 'stellar').address;
    solana = await startSolanaRpc({ airdrops: [{ address: solanaAddress, lamports: 3n * SOL }] });
    stellar = await startStellarRpc({ networkPassphrase: Networks.TESTNET, accounts: [{ address: stellarAddress, balance: 500n * XLM, sequence: 41n }] });
    svc = await startTestService({
      anvil: true,
      env: { SIGNER_STORE_KEY: STORE_KEY },
      config: ({ rpcUrl }) => {
        const c = evmConfig(rpcUrl);
        return {
          ...c,
          networks: [
            ...c.networks,
            { type: 'solana', network: 'devnet', rpc_urls: [solana.url], is_testnet: true },
            { type: 'stellar', network: 'testnet', rpc_urls: [stellar.url], passphrase: Networks.TESTNET, is_testnet: true },
          ],
        };
      },
    });
    api = await serve(svc);
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    await svc?.stop();
    await solana?.stop();
    await stellar?.stop();
  });

  it('health and readiness answer without a token', async () => {
    const health = await api.health.health();
    expect(health.status).toBe(200);
    expect(health.data).toBe('OK');
    const ready = await api.health.readiness();
    expect(ready.status).toBe(200);
    expect(ready.data.ready).toBe(true);
    expect(ready.data.status).toBe('healthy');
    expect(ready.data.components.queue.status).toBe('healthy');
    const extra = ready.data.components as unknown as { database: { status: string; kind: string }; networks: { id: string; status: string }[] };
    expect(extra.database).toMatchObject({ status: 'healthy', kind: 'pglite' });
    expect(extra.networks).toEqual([{ id: 'evm:localnet', status: 'healthy' }]);
  });

  it('signers: create from a key and generated, get, list, update; key material never returned', async () => {
    const created = await api.signers.createSigner({ id: 'sdk-signer', type: 'plain' as never, config: { key: KEY_1 } });
    expect(created.status).toBe(201);
    expect(created.data.data).toEqual({ id: 'sdk-signer', type: 'local', config: {}, source: 'api' });
    expect(JSON.stringify(created.data)).not.toContain(KEY_1.slice(2));
    const generated = await api.signers.createSigner({ id: 'generated', type: 'local' as never, config: undefined as never });
    expect(generated.data.data?.id).toBe('generated');
    expect((await api.signers.getSigner('sdk-signer')).data.data?.id).toBe('sdk-signer');
    const list = await api.signers.listSigners(1, 10);
    expect(list.data.data?.map((s) => s.id)).toEqual(['dev-signer', 'generated', 'sdk-signer']);
    expect(list.data.pagination).toEqual({ current_page: 1, per_page: 10, total_items: 3 });
    const updated = await api.signers.updateSigner('generated', { type: 'local', config: {} });
    expect(updated.data.data?.id).toBe('generated');
    const rows = await svc.rt.db.prisma.signer.findMany();
    expect(JSON.stringify(rows)).not.toContain(KEY_1.slice(2));
  });

  it('relayers: create (address from the signer), 409 on a duplicate, status and balance per family', async () => {
    const evm = await api.relayers.createRelayer({
      id: 'sdk-evm',
      name: 'SDK EVM relayer',
      network: 'localnet',
      network_type: 'evm' as never,
      paused: false,
      signer_id: 'sdk-signer',
      policies: { min_balance: 0 } as never,
    });
    expect(evm.status).toBe(201);
    expect(evm.data.data).toMatchObject({ id: 'sdk-evm', address: ADDRESS_1, network_type: 'evm', paused: false, signer_id: 'sdk-signer' });
    const dup = await refused(
      api.relayers.createRelayer({ id: 'sdk-evm', name: 'x', network: 'localnet', network_type: 'evm' as never, paused: false, signer_id: 'sdk-signer' }),
    );
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ success: false, data: null, message: 'Relayer with this ID already exists' });

    const balance = await api.relayers.getRelayerBalance('sdk-evm');
    expect(balance.data.data).toEqual({ balance: 1e22, unit: 'wei' });
    const status = await api.relayers.getRelayerStatus('sdk-evm');
    expect(status.data.data).toEqual({
      network_type: 'evm',
      balance: '10000000000000000000000',
      nonce: '0',
      pending_transactions_count: 0,
      last_confirmed_transaction_timestamp: null,
      paused: false,
      system_disabled: false,
    });

    for (const [type, network] of [
      ['solana', 'devnet'],
      ['stellar', 'testnet'],
    ] as const) {
      const r = await api.relayers.createRelayer({
        id: `sdk-${type}`,
        name: type,
        network,
        network_type: type as never,
        paused: false,
        signer_id: 'dev-signer',
      });
      expect(r.data.data?.address).toBe(type === 'solana' ? solanaAddress : stellarAddress);
    }
    expect((await api.relayers.getRelayerBalance('sdk-solana')).data.data).toEqual({ balance: 3e9, unit: 'lamports' });
    expect((await api.relayers.getRelayerStatus('sdk-solana')).data.data).toEqual({
      network_type: 'solana',
      balance: '3000000000',
      pending_transactions_count: 0,
      last_confirmed_transaction_timestamp: null,
      paused: false,
      system_disabled: false,
    });
    expect((await api.relayers.getRelayerBalance('sdk-stellar')).data.data).toEqual({ balance: 5e9, unit: 'stroops' });
    const stellarStatus = (await api.relayers.getRelayerStatus('sdk-stellar')).data.data as unknown as Record<string, unknown>;
    expect(stellarStatus).toMatchObject({ network_type: 'stellar', balance: '5000000000', pending_transactions_count: 0, paused: false });
    expect(stellarStatus.sequence_number).toBe('42');
  });

  it('transactions: by nonce, the status filter, and the cancel of every pending one', async () => {
    const sent = await api.relayers.sendTransaction('sdk-evm', { to: DEV_ADDRESS, value: 1000, gas_limit: 21000, speed: 'fast' } as never);
    const id = sent.data.data!.id!;
    await until(async () => (await api.relayers.getTransactionById('sdk-evm', id)).data.data?.status === 'confirmed');
    const byNonce = await api.relayers.getTransactionByNonce('sdk-evm', 0);
    expect(byNonce.data.data).toMatchObject({ id, nonce: 0, status: 'confirmed' });
    expect((await refused(api.relayers.getTransactionByNonce('sdk-evm', 7))).status).toBe(404);
    const confirmed = await api.relayers.listTransactions('sdk-evm', 1, 10, { params: { status: 'confirmed' } });
    expect(confirmed.data.data?.map((t) => t.id)).toEqual([id]);
    const failed = await api.relayers.listTransactions('sdk-evm', 1, 10, { params: { status: 'failed' } });
    expect(failed.data.data).toEqual([]);
    const status = (await api.relayers.getRelayerStatus('sdk-evm')).data.data as unknown as Record<string, unknown>;
    expect(status.nonce).toBe('1');
    expect(typeof status.last_confirmed_transaction_timestamp).toBe('string');

    // With mining stopped, two transactions wait in the mempool; the cancel replaces each by a NOOP.
    await rpc(svc.anvil!.url, 'evm_setAutomine', [false]);
    const pending: string[] = [];
    for (let i = 0; i < 2; i++)
      pending.push((await api.relayers.sendTransaction('sdk-evm', { to: DEV_ADDRESS, value: 1, gas_limit: 21000 } as never)).data.data!.id!);
    await until(async () => {
      const all = await Promise.all(pending.map(async (p) => (await api.relayers.getTransactionById('sdk-evm', p)).data.data?.status));
      return all.every((s) => s === 'sent' || s === 'submitted');
    });
    const refusedDelete = await refused(api.relayers.deleteRelayer('sdk-evm'));
    expect(refusedDelete.status).toBe(400);
    expect(refusedDelete.body.error).toMatch(/in flight/);
    const canceled = await api.relayers.deletePendingTransactions('sdk-evm');
    expect(canceled.data.data).toEqual({ queued_for_cancellation_transaction_ids: pending, failed_to_queue_transaction_ids: [], total_processed: 2 });
    // Mining resumes once each NOOP replaced its transaction in the mempool.
    for (const p of pending) {
      await until(async () => (await svc.gql('query($id: ID!) { transaction(id: $id) { hashes } }', { id: p })).data?.transaction.hashes.length >= 2);
    }
    await rpc(svc.anvil!.url, 'evm_setAutomine', [true]);
    for (const p of pending) {
      await until(async () => {
        await rpc(svc.anvil!.url, 'evm_mine', []);
        const t = (await api.relayers.getTransactionById('sdk-evm', p)).data.data;
        return t?.status === 'canceled';
      });
    }
    expect((await api.relayers.deletePendingTransactions('sdk-evm')).data.data?.total_processed).toBe(0);
  }, 120_000);

  it('relayers: delete once nothing is in flight; signers: delete refused while used', async () => {
    const used = await refused(api.signers.deleteSigner('sdk-signer'));
    expect(used.status).toBe(400);
    expect(used.body.error).toMatch(/used by relayer sdk-evm/);
    const deleted = await api.relayers.deleteRelayer('sdk-evm');
    expect(deleted.data).toMatchObject({ success: true, data: 'Relayer deleted successfully' });
    expect((await refused(api.relayers.getRelayer('sdk-evm'))).body.message).toBe('Relayer with ID sdk-evm not found');
    expect((await api.signers.deleteSigner('sdk-signer')).data.data).toBe('Signer deleted successfully');
    expect((await refused(api.signers.getSigner('sdk-signer'))).status).toBe(404);
  });

  it('networks: list, get, and update of the RPC URLs (shown masked)', async () => {
    const list = await api.networks.listNetworks(1, 10);
    expect(list.data.data?.map((n) => n.id)).toEqual(['evm:localnet', 'solana:devnet', 'stellar:testnet']);
    const evm = (await api.networks.getNetwork('evm:localnet')).data.data!;
    expect(evm).toMatchObject({
      id: 'evm:localnet',
      name: 'localnet',
      network_type: 'evm',
      chain_id: 31337,
      required_confirmations: 1,
      symbol: 'ETH',
      features: ['eip1559'],
    });
    expect(evm.rpc_urls).toEqual([{ url: `${new URL(svc.anvil!.url).origin}`, weight: 100 }].map((u) => ({ ...u, url: maskedOf(svc.anvil!.url) })));
    expect((await api.networks.getNetwork('stellar:testnet')).data.data?.passphrase).toBe(Networks.TESTNET);
    const updated = await api.networks.updateNetwork('evm:localnet', { rpc_urls: [`${svc.anvil!.url}/`, { url: svc.anvil!.url, weight: 50 }] });
    expect(updated.data.data?.rpc_urls).toEqual([
      { url: maskedOf(`${svc.anvil!.url}/`), weight: 100 },
      { url: maskedOf(svc.anvil!.url), weight: 50 },
    ]);
    // The relayers of the network keep working on the new URLs.
    expect((await api.relayers.getRelayerBalance('evm-relayer')).data.data?.unit).toBe('wei');
  });
});

const maskedOf = (url: string) => {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname !== '/' || u.search ? '/***' : ''}`;
};

const dbs = ['pglite', ...((await postgresReachable()) ? ['postgres' as const] : [])] as const;

describe.each(dbs)('entity routes: errors on %s', (db) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ db: db as 'pglite' | 'postgres', env: { SIGNER_STORE_KEY: STORE_KEY } });
  }, 120_000);
  afterAll(() => svc?.stop());

  const relayer = { id: 'new-relayer', name: 'New', network: 'localnet', network_type: 'evm', paused: false, signer_id: 'dev-signer' };

  it('create relayer: 400 naming the field, 409 on a taken id, and nothing changes', async () => {
    const before = await dbState(svc.rt);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...relayer, name: undefined }, /^name: required/],
      [{ ...relayer, network_type: 'tron' }, /^network_type: must be one of/],
      [{ ...relayer, network: 'mainnet' }, /^network: unknown evm network "mainnet"/],
      [{ ...relayer, signer_id: 'nobody' }, /^signer_id: unknown signer "nobody"/],
      [{ ...relayer, notification_id: 'nothing' }, /^notification_id: unknown notification "nothing"/],
      [{ ...relayer, policies: { gas_price_cap: -1 } }, /^policies\.gas_price_cap/],
      [{ ...relayer, id: 'bad id' }, /^id: may contain only/],
      [{ ...relayer, custom_rpc_urls: [{ url: 'not a url' }] }, /^custom_rpc_urls\[0\]\.url/],
      [{ ...relayer, colour: 'blue' }, /^colour: unknown field/],
    ];
    for (const [body, detail] of cases) await expectError(await svc.request('POST', '/api/v1/relayers', body), 400, 'Bad Request', detail);
    await expectError(
      await svc.request('POST', '/api/v1/relayers', { ...relayer, id: 'evm-relayer' }),
      409,
      'Relayer with this ID already exists',
      /evm-relayer/,
    );
    expect(await dbState(svc.rt)).toBe(before);
  });

  it('delete relayer: 404 for an unknown id, refused while a transaction is in flight', async () => {
    await expectError(await svc.request('DELETE', '/api/v1/relayers/nobody'), 404, 'Relayer with ID nobody not found');
    await seedTransaction(svc.rt, { relayerId: SOLANA_RELAYER, networkType: 'solana', status: 'submitted', nonce: null });
    await expectError(await svc.request('DELETE', `/api/v1/relayers/${SOLANA_RELAYER}`), 400, 'Bad Request', /has 1 transaction\(s\) in flight/);
    expect(await svc.rt.db.prisma.relayer.findUnique({ where: { id: SOLANA_RELAYER } })).not.toBeNull();
    const res = await svc.request('DELETE', `/api/v1/relayers/${STELLAR_RELAYER}`);
    expect(res.status).toBe(200);
    expect(await svc.rt.db.prisma.relayer.findUnique({ where: { id: STELLAR_RELAYER } })).toBeNull();
  });

  it('status, balance, by-nonce and pending: 404 for an unknown relayer, 400 for a bad nonce', async () => {
    for (const path of ['status', 'balance', 'transactions/by-nonce/1']) {
      await expectError(await svc.request('GET', `/api/v1/relayers/nobody/${path}`), 404, 'Relayer with ID nobody not found');
    }
    await expectError(await svc.request('DELETE', '/api/v1/relayers/nobody/transactions/pending'), 404, 'Relayer with ID nobody not found');
    await expectError(await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions/by-nonce/abc'), 400, 'Bad Request', /^nonce: must be an integer/);
    await expectError(await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions/by-nonce/99'), 404, 'Transaction with nonce 99 not found');
    // The stand-in RPC URL leads nowhere: the balance cannot be read, which is not a server failure.
    await expectError(await svc.request('GET', '/api/v1/relayers/evm-relayer/balance'), 400, 'Bad Request', /cannot be reached|could not be read/);
    const bad = await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions?status=lost');
    await expectError(bad, 400, 'Bad Request', /^status: must be one of/);
  });

  it('signers: 400 naming the field, 404, 409, and refused deletes', async () => {
    const before = await dbState(svc.rt);
    await expectError(
      await svc.request('POST', '/api/v1/signers', { id: 's1', type: 'yubikey' }),
      400,
      'Bad Request',
      /^type: must be one of local, plain, pkcs11, .*cdp/,
    );
    await expectError(await svc.request('POST', '/api/v1/signers', { id: 's1', type: 'aws_kms' }), 400, 'Bad Request', /^config\.region: .*config\.key_id: /);
    await expectError(
      await svc.request('POST', '/api/v1/signers', { id: 's1', type: 'plain', config: { key: '0x12' } }),
      400,
      'Bad Request',
      /^config\.key: must be a 32-byte hex/,
    );
    await expectError(
      await svc.request('POST', '/api/v1/signers', { id: 's1', type: 'local', config: { keystore: { version: 3 }, passphrase: 'x' } }),
      400,
      'Bad Request',
      /^config\.keystore/,
    );
    await expectError(await svc.request('POST', '/api/v1/signers', { id: 'dev-signer', type: 'local' }), 409, 'Signer with this ID already exists');
    await expectError(await svc.request('GET', '/api/v1/signers/nobody'), 404, 'Signer with ID nobody not found');
    await expectError(await svc.request('PATCH', '/api/v1/signers/nobody', { config: {} }), 404, 'Signer with ID nobody not found');
    await expectError(await svc.request('DELETE', '/api/v1/signers/nobody'), 404, 'Signer with ID nobody not found');
    await expectError(await svc.request('DELETE', '/api/v1/signers/dev-signer'), 400, 'Bad Request', /used by relayer/);
    await expectError(await svc.request('PATCH', '/api/v1/signers/dev-signer', { config: {} }), 400, 'Bad Request', /used by relayer/);
    expect(await dbState(svc.rt)).toBe(before);
    expect(await svc.rt.db.prisma.signer.count()).toBe(0);
  });

  it('networks: 404 for an unknown id, 400 naming rpc_urls; readiness 503 names the unreachable network', async () => {
    await expectError(await svc.request('GET', '/api/v1/networks/evm:nowhere'), 404, 'Network with ID evm:nowhere not found');
    await expectError(await svc.request('PATCH', '/api/v1/networks/evm:localnet', { rpc_urls: ['ftp://x'] }), 400, 'Bad Request', /^rpc_urls/);
    await expectError(await svc.request('PATCH', '/api/v1/networks/evm:localnet', { rpc_urls: [] }), 400, 'Bad Request', /^rpc_urls: must list at least one/);
    expect(await svc.rt.db.prisma.networkOverride.count()).toBe(0);
    const ready = await svc.request('GET', '/api/v1/ready', undefined, { authorization: '' });
    expect(ready.status).toBe(503);
    const body = await ready.json();
    expect(body.ready).toBe(false);
    expect(body.reason).toMatch(/network evm:localnet/);
    expect(body.components.database.status).toBe('healthy');
  });

  it('signers need SIGNER_STORE_KEY on PostgreSQL; the embedded default generates one and keeps it', async () => {
    if (await postgresReachable()) {
      const shared = await startRestService({ db: 'postgres' });
      try {
        await expectError(await shared.request('POST', '/api/v1/signers', { id: 'x', type: 'local' }), 400, 'Bad Request', /SIGNER_STORE_KEY/);
      } finally {
        await shared.stop();
      }
    }
    let embedded = await startRestService({ db: 'pglite' });
    try {
      expect((await embedded.request('POST', '/api/v1/signers', { id: 'x', type: 'local' })).status).toBe(201);
      const kept = readFileSync(path.join(embedded.dir, 'signer-store-key'), 'utf8').trim();
      expect(kept.length).toBeGreaterThanOrEqual(32);
      // Restarted, the service reads the same key back and can still load the signer.
      embedded = await embedded.restart();
      const relayer = { id: 'on-x', name: 'On x', network: 'localnet', network_type: 'evm', paused: false, signer_id: 'x' };
      expect((await embedded.request('POST', '/api/v1/relayers', relayer)).status).toBe(201);
      expect(readFileSync(path.join(embedded.dir, 'signer-store-key'), 'utf8').trim()).toBe(kept);
    } finally {
      await embedded.stop();
    }
  });
});

describe('readiness and Redis; the GraphQL side of the new operations', () => {
  it('names Redis when it stops answering, after the cached verdict expires', async () => {
    const redis = await startRedisServer();
    const svc = await startRestService({ env: { REDIS_URL: redis.url } });
    try {
      const first = await (await svc.request('GET', '/api/v1/ready', undefined, { authorization: '' })).json();
      expect(first.components.redis).toMatchObject({ status: 'healthy', configured: true, primary_pool: { connected: true } });
      await redis.kill();
      // Within the cache window the verdict is the same document.
      const cached = await (await svc.request('GET', '/api/v1/ready', undefined, { authorization: '' })).json();
      expect(cached.timestamp).toBe(first.timestamp);
      await new Promise((r) => setTimeout(r, 5_100));
      const res = await svc.request('GET', '/api/v1/ready', undefined, { authorization: '' });
      expect(res.status).toBe(503);
      const after = await res.json();
      expect(after.components.redis.status).toBe('unhealthy');
      expect(after.reason).toMatch(/redis: /);
    } finally {
      await svc.stop();
      await redis.destroy();
    }
  }, 60_000);

  it('answers the same operations through GraphQL', async () => {
    const svc = await startRestService({ env: { SIGNER_STORE_KEY: STORE_KEY } });
    try {
      const created = await svc.gql('mutation { createSigner(input: { id: "g", type: "local" }) { id type source } }');
      expect(created.data?.createSigner).toEqual({ id: 'g', type: 'local', source: 'api' });
      const read = await svc.gql(
        '{ signers { items { id source } } networks { items { id networkType rpcUrls { url } } } network(id: "evm:localnet") { chainId } readiness }',
      );
      expect(read.data.signers.items).toEqual([
        { id: 'dev-signer', source: 'config' },
        { id: 'g', source: 'api' },
      ]);
      expect(read.data.networks.items.map((n: { id: string }) => n.id)).toEqual(['evm:localnet', 'solana:devnet', 'stellar:testnet']);
      expect(read.data.network.chainId).toBe(31337);
      expect(read.data.readiness.ready).toBe(false);
      const del = await svc.gql(`mutation { deleteRelayer(id: "${STELLAR_RELAYER}") }`);
      expect(del.data?.deleteRelayer).toBe(true);
      const again = await svc.gql(`mutation { deleteRelayer(id: "${STELLAR_RELAYER}") }`);
      expect(again.errors?.[0]).toMatchObject({ message: `Relayer with ID ${STELLAR_RELAYER} not found`, extensions: { code: 'NOT_FOUND' } });
    } finally {
      await svc.stop();
    }
  }, 60_000);
});

describe.each(dbs)('API changes survive a restart with the same config file (%s)', (db) => {
  it('created, updated and deleted entities stay as the API left them', async () => {
    const config = ({ rpcUrl }: { rpcUrl: string }) => {
      const c = evmConfig(rpcUrl, { notifications: [{ id: 'file-hook', type: 'webhook', url: 'https://example.com/hook' }] });
      return { ...c, relayers: [...c.relayers, { ...c.relayers[0], id: 'evm-2', name: 'Second' }] };
    };
    let svc = await startTestService({ db: db as 'pglite' | 'postgres', workers: false, config, env: { SIGNER_STORE_KEY: STORE_KEY } });
    try {
      const ok = async (method: string, path: string, body?: unknown) => {
        const res = await svc.request(method, path, body);
        expect(res.status, await res.clone().text()).toBeLessThan(300);
      };
      await ok('POST', '/api/v1/signers', { id: 'api-signer', type: 'plain', config: { key: KEY_1 } });
      await ok('POST', '/api/v1/relayers', {
        id: 'api-relayer',
        name: 'API',
        network: 'localnet',
        network_type: 'evm',
        paused: false,
        signer_id: 'api-signer',
      });
      await ok('PATCH', '/api/v1/relayers/evm-relayer', { name: 'Renamed', paused: true });
      await ok('DELETE', '/api/v1/relayers/evm-2');
      await ok('DELETE', '/api/v1/notifications/file-hook');
      await ok('PATCH', '/api/v1/networks/evm:localnet', { rpc_urls: ['http://127.0.0.1:2'] });

      svc = await svc.restart();
      const relayers = (await (await svc.request('GET', '/api/v1/relayers')).json()).data;
      expect(relayers.map((r: { id: string }) => r.id)).toEqual(['api-relayer', 'evm-relayer']);
      expect(relayers.find((r: { id: string }) => r.id === 'api-relayer').address).toBe(ADDRESS_1);
      expect(relayers.find((r: { id: string }) => r.id === 'evm-relayer')).toMatchObject({ name: 'Renamed', paused: true });
      expect((await (await svc.request('GET', '/api/v1/notifications')).json()).data).toEqual([]);
      const signers = (await (await svc.request('GET', '/api/v1/signers')).json()).data;
      expect(signers.map((s: { id: string }) => s.id)).toEqual(['api-signer', 'dev-signer']);
      const network = (await (await svc.request('GET', '/api/v1/networks/evm:localnet')).json()).data;
      expect(network.rpc_urls).toEqual([{ url: 'http://127.0.0.1:2', weight: 100 }]);
      // The created relayer's signer was loaded again from its encrypted keystore.
      expect(svc.rt.signers.loaded.get('api-signer:evm')?.address).toBe(ADDRESS_1);

      // Created again through the API, a deleted entity is the API's: the file does not overwrite it.
      await ok('POST', '/api/v1/relayers', { id: 'evm-2', name: 'Mine now', network: 'localnet', network_type: 'evm', paused: true, signer_id: 'dev-signer' });
      svc = await svc.restart();
      expect((await (await svc.request('GET', '/api/v1/relayers/evm-2')).json()).data).toMatchObject({ name: 'Mine now', paused: true });
    } finally {
      await svc.stop();
    }
  }, 120_000);
});
