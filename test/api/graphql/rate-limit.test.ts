import { randomUUID } from 'node:crypto';
import { createYoga } from 'graphql-yoga';
import { afterAll, describe, expect, it } from 'vitest';
import { maskError } from '../../../src/api/graphql/app-error.js';
import { createBuilder } from '../../../src/api/graphql/builder.js';
import { applyRateLimits, RATE_LIMITED, rateLimitPlugin } from '../../../src/api/graphql/rate-limit.js';
import { createLogger } from '../../../src/lib/log.js';
import { type RateLimits, rateLimits } from '../../../src/lib/rate-limits.js';
import { connectRedis } from '../../../src/lib/redis.js';
import { REDIS_URL, redisReachable } from '../../support/redis.js';

// The deployment window of these tests: 10 calls a minute.
const DEPLOYMENT = { limit: 10, duration: 60 };

/**
 * A small schema through the real rate-limit path (the directive applied last, the plugin taking
 * root fields' points before execution): `open` has the deployment window, `scarce` its own of 2 a
 * minute, and each `Item.slow` resolved takes one of 4 a minute.
 */
function server(limits: RateLimits) {
  const builder = createBuilder();
  const Item = builder.objectRef<{ n: number }>('Item').implement({
    fields: (t) => ({
      n: t.exposeInt('n'),
      slow: t.int({ nullable: true, directives: { rateLimit: { limit: 4, duration: 60 } }, resolve: (i) => i.n }),
    }),
  });
  builder.queryFields((t) => ({
    open: t.string({ directives: RATE_LIMITED, resolve: () => 'open' }),
    scarce: t.string({ directives: { rateLimit: { limit: 2, duration: 60 } }, resolve: () => 'scarce' }),
    items: t.field({ type: [Item], resolve: () => [{ n: 1 }, { n: 2 }, { n: 3 }] }),
  }));
  builder.mutationField('touch', (t) => t.string({ directives: RATE_LIMITED, resolve: () => 'touched' }));
  builder.subscriptionField('nothing', (t) => t.string({ subscribe: async function* () {}, resolve: () => '' }));
  const log = createLogger('silent');
  const rt = { access: { rateLimit: limits }, env: { rateLimit: { perSecond: 10 / 60, burst: 10 } }, log };
  const yoga = createYoga({
    schema: applyRateLimits(builder.toSchema(), limits),
    logging: false,
    plugins: [rateLimitPlugin(429)],
    maskedErrors: { maskError: maskError(log, (code) => (code === 'RATE_LIMITED' ? 429 : 400)) },
    context: ({ request }) => ({ rt, log, requestId: '', caller: { budget: request.headers.get('x-caller') } }),
  });
  return async (caller: string, query: string) => {
    const res = await yoga.fetch('http://test/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-caller': caller },
      body: JSON.stringify({ query }),
    });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: await res.json() };
  };
}

describe("the directive's arguments, per field", () => {
  const gql = server(rateLimits(DEPLOYMENT));

  it('a field with its own window is refused after its limit; a field of the deployment window is not', async () => {
    const caller = randomUUID();
    for (let i = 0; i < 2; i++) expect((await gql(caller, '{ scarce }')).body).toEqual({ data: { scarce: 'scarce' } });
    const refused = await gql(caller, '{ scarce }');
    expect(refused.status).toBe(429);
    expect(refused.body.errors[0]).toMatchObject({ message: 'Too Many Requests', extensions: { code: 'RATE_LIMITED' } });
    expect(Number(refused.retryAfter)).toBeGreaterThan(55);
    expect(Number(refused.retryAfter)).toBeLessThanOrEqual(60);
    // The deployment's budget is another: 10 a minute, untouched by `scarce`.
    for (let i = 0; i < 10; i++) expect((await gql(caller, '{ open }')).status).toBe(200);
    expect((await gql(caller, '{ open }')).status).toBe(429);
    // Mutations of the deployment window share it.
    expect((await gql(caller, 'mutation { touch }')).status).toBe(429);
    // Another caller has budgets of its own.
    expect((await gql(randomUUID(), '{ scarce }')).body).toEqual({ data: { scarce: 'scarce' } });
  });

  it('counts each alias, takes an operation whole or not at all, and refuses with a 400 one that can never fit', async () => {
    const caller = randomUUID();
    expect((await gql(caller, '{ a: scarce b: open }')).status).toBe(200);
    // Two more of `scarce` do not fit in the one left: nothing is taken, not even the `open` of the same operation.
    const whole = await gql(caller, '{ a: scarce b: scarce c: open }');
    expect(whole.status).toBe(429);
    expect(whole.body.data).toBeUndefined();
    expect((await gql(caller, '{ a: scarce }')).status).toBe(200);
    for (let i = 0; i < 9; i++) expect((await gql(caller, '{ open }')).status, String(i)).toBe(200);
    const never = await gql(randomUUID(), '{ a: scarce b: scarce c: scarce }');
    expect(never.status).toBe(400);
    expect(never.body.errors[0].extensions).toMatchObject({
      code: 'BAD_REQUEST',
      detail: 'the operation runs 3 rate-limited fields; at most 2 (the @rateLimit limit of scarce) fit in one operation',
    });
  });

  it('below the root, the directive takes a point of the field’s window each time it resolves', async () => {
    const caller = randomUUID();
    expect((await gql(caller, '{ items { slow } }')).body).toEqual({ data: { items: [{ slow: 1 }, { slow: 2 }, { slow: 3 }] } });
    // One of the 4 is left: the first item resolves, the others are refused.
    const second = await gql(caller, '{ items { n slow } }');
    expect(second.status).toBe(429);
    expect(second.body.data).toEqual({
      items: [
        { n: 1, slow: 1 },
        { n: 2, slow: null },
        { n: 3, slow: null },
      ],
    });
    expect(second.body.errors).toEqual([1, 2].map(() => expect.objectContaining({ message: 'Too Many Requests', extensions: { code: 'RATE_LIMITED' } })));
    // Fields without the directive resolve as ever.
    expect((await gql(caller, '{ items { n } }')).status).toBe(200);
  });
});

describe.runIf(await redisReachable())('two instances on one Redis', () => {
  const clients: { disconnect(): void }[] = [];
  afterAll(() => clients.forEach((c) => c.disconnect()));
  const instance = async () => {
    const redis = await connectRedis(REDIS_URL);
    clients.push(redis);
    return server(rateLimits(DEPLOYMENT, redis));
  };

  it('share each budget: spent on one, refused on the other', async () => {
    const [a, b] = [await instance(), await instance()];
    const caller = randomUUID();
    expect((await a(caller, '{ scarce }')).status).toBe(200);
    expect((await a(caller, '{ scarce }')).status).toBe(200);
    const refused = await b(caller, '{ scarce }');
    expect(refused.status).toBe(429);
    expect(Number(refused.retryAfter)).toBeGreaterThan(0);
    expect((await b(caller, '{ a: open b: open c: open d: open e: open }')).status).toBe(200);
    expect((await a(caller, '{ a: open b: open c: open d: open e: open f: open }')).status).toBe(429);
    expect((await a(caller, '{ a: open b: open c: open d: open e: open }')).status).toBe(200);
    expect((await b(caller, '{ open }')).status).toBe(429);
  });
});
