// Error answers of the signing and JSON-RPC routes, on both databases: each in the envelope with the
// spec's message, a 400 naming the field, and nothing changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dbState, expectError, SOLANA_RELAYER, startRestService, STELLAR_RELAYER } from '../../support/rest.js';
import { databaseKinds } from '../../support/postgres.js';
import type { TestService } from '../../support/service.js';

/** anvil's dev key #0, which the test relayers sign with: never in an answer. */
const DEV_KEY = 'ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';

const ROUTES = [
  { path: 'sign', good: { message: 'hi' } },
  { path: 'sign-typed-data', good: { domain_separator: '00'.repeat(32), hash_struct_message: '11'.repeat(32) } },
  { path: 'sign-transaction', good: { unsigned_xdr: 'AAAA' } },
  { path: 'rpc', good: { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] } },
] as const;

describe.each(await databaseKinds())('signing and JSON-RPC route errors on %s', (db) => {
  let svc: TestService;
  let before: string;

  beforeAll(async () => {
    svc = await startRestService({ db });
    before = await dbState(svc.rt);
  }, 120_000);
  afterAll(async () => {
    await svc?.stop();
  });

  const post = (relayer: string, path: string, body: unknown, headers?: Record<string, string>) =>
    svc.request('POST', `/api/v1/relayers/${relayer}/${path}`, body, headers);

  it.each(ROUTES)('$path: 401 without a valid token, 404 for an unknown relayer, 405 for another method', async ({ path, good }) => {
    await expectError(await post('evm-relayer', path, good, { authorization: '' }), 401, 'Unauthorized');
    await expectError(await post('evm-relayer', path, good, { authorization: 'Bearer wrong-wrong-wrong-wrong-wrong-wrong' }), 401, 'Unauthorized');
    await expectError(await post('nobody', path, good), 404, 'Relayer with ID nobody not found');
    const get = await svc.request('GET', `/api/v1/relayers/evm-relayer/${path}`);
    await expectError(get, 405, 'Method Not Allowed');
    expect(get.headers.get('allow')).toBe('POST');
    expect(await dbState(svc.rt)).toBe(before);
  });

  it.each([
    ['sign', undefined, 'body: required (a JSON object)'],
    ['sign', '{"message": ', /^body: invalid JSON/],
    ['sign', [], 'body: must be a JSON object'],
    ['sign', {}, 'message: required'],
    ['sign', { message: 5 }, 'message: must be a string, got a number'],
    ['sign', { message: 'x', extra: 1 }, 'extra: unknown field'],
    ['sign', { message: null }, 'message: must not be null'],
    ['sign-typed-data', { domain_separator: '00'.repeat(32) }, 'hash_struct_message: required'],
    [
      'sign-typed-data',
      { domain_separator: 'zz', hash_struct_message: '11'.repeat(31) },
      'domain_separator: must be 32 bytes of hex; hash_struct_message: must be 32 bytes of hex',
    ],
    ['sign-transaction', { transaction: 1 }, 'transaction: must be a string, got a number'],
    ['sign-transaction', { xdr: 'AAAA' }, 'xdr: unknown field'],
    ['rpc', '"eth_chainId"', 'body: must be a JSON object or array'],
    ['rpc', { jsonrpc: '2.0', id: 1 }, 'method: required'],
    ['rpc', { jsonrpc: '2.0', id: 1, method: 'eth_chainId', extra: true }, 'extra: unknown field'],
  ] as const)('%s %j: 400 naming the field, nothing changed', async (path, body, error) => {
    const relayer = path === 'sign-transaction' ? SOLANA_RELAYER : 'evm-relayer';
    await expectError(await post(relayer, path, body), 400, 'Bad Request', error);
    expect(await dbState(svc.rt)).toBe(before);
  });

  it('a paused relayer: 400 on every route, nothing changed', async () => {
    for (const id of ['evm-relayer', SOLANA_RELAYER, STELLAR_RELAYER]) {
      await svc.rt.db.prisma.relayer.update({ where: { id }, data: { paused: true } });
      const paused = await dbState(svc.rt);
      for (const { path, good } of ROUTES) {
        await expectError(await post(id, path, good), 400, 'Bad Request', `relayer ${id} is paused`);
      }
      expect(await dbState(svc.rt)).toBe(paused);
      await svc.rt.db.prisma.relayer.update({ where: { id }, data: { paused: false } });
    }
  });

  it('answers carry signatures and public keys, never the key', async () => {
    const answers = await Promise.all([
      post('evm-relayer', 'sign', { message: 'k' }),
      post('evm-relayer', 'sign-typed-data', ROUTES[1].good),
      post(SOLANA_RELAYER, 'sign', { message: 'k' }),
      post(STELLAR_RELAYER, 'sign', { message: 'k' }),
    ]);
    for (const res of answers) {
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text.toLowerCase()).not.toContain(DEV_KEY);
      expect(text).not.toContain(Buffer.from(DEV_KEY, 'hex').toString('base64'));
    }
  });
});
