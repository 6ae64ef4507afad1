import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.js';
import { envelope, expectError, RECEIVER, startRestService } from '../support/rest.js';

const TX = '/api/v1/relayers/evm-relayer/transactions';
const GQL_LIST = '{ relayerTransactions(relayerId: "evm-relayer") { pagination { totalItems } } }';

describe('rate limit (spec 4.1-4.3, section 7 "Too Many Requests")', () => {
  let svc: TestService;
  beforeAll(async () => {
    // 3 calls per 300 s (the burst, over the time the rate takes to allow as many): nothing comes back during the test.
    svc = await startRestService({ env: { RATE_LIMIT_BURST_SIZE: '3', RATE_LIMIT_REQUESTS_PER_SECOND: '0.01' } });
  });
  afterAll(() => svc?.stop());

  it('REST and GraphQL draw on one budget per token; the 4th call is a 429 with Retry-After', async () => {
    const started = Date.now();
    // The window opened at the first call ends 300 s later: Retry-After counts down from 300 as time passes.
    const retryAfter = (res: Response) => {
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      const s = Number(res.headers.get('retry-after'));
      expect(s).toBeLessThanOrEqual(300);
      expect(s).toBeGreaterThanOrEqual(300 - Math.ceil((Date.now() - started) / 1000));
    };
    expect((await svc.request('GET', TX)).status).toBe(200);
    const gql = await svc.gql(GQL_LIST);
    expect(gql.errors).toBeUndefined();
    expect((await svc.request('PATCH', '/api/v1/relayers/evm-relayer', { name: 'Still EVM' })).status).toBe(200);

    const limited = [
      await svc.request('GET', `${TX}/`),
      await svc.request('POST', TX, { value: 1, to: RECEIVER }),
      await svc.request('PATCH', '/api/v1/relayers/evm-relayer', { paused: true }),
    ];
    for (const res of limited) {
      await expectError(res, 429, 'Too Many Requests');
      retryAfter(res);
    }
    expect((await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'evm-relayer' } })).paused).toBe(false);

    const res = await svc.request('POST', '/graphql', { query: GQL_LIST });
    expect(res.status).toBe(429);
    retryAfter(res);
    expect((await res.json()).errors[0]).toMatchObject({ message: 'Too Many Requests', extensions: { code: 'RATE_LIMITED' } });
  });

  it('leaves the other routes alone', async () => {
    for (const path of ['/api/v1/relayers', '/api/v1/relayers/evm-relayer', '/api/v1/notifications']) {
      expect((await svc.request('GET', path)).status, path).toBe(200);
    }
    const created = await svc.request('POST', '/api/v1/notifications', { url: 'https://example.com/limited' });
    expect(created.status).toBe(201);
    await envelope(created);
  });

  it('answers a malformed request with 400 even when the budget is spent (the adapter checks it first)', async () => {
    await expectError(await svc.request('GET', `${TX}?page=x`), 400, 'Bad Request', /^page: /);
  });
});
