import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createEvents } from '../../src/core/pubsub.js';
import { redisBucket } from '../../src/lib/redis-bucket.js';
import { connectRedis } from '../../src/lib/redis.js';
import { REDIS_URL, redisReachable } from '../support/redis.js';

const clients: { disconnect(): void }[] = [];
const connect = async () => {
  const c = await connectRedis(REDIS_URL);
  clients.push(c);
  return c;
};
afterAll(() => clients.forEach((c) => c.disconnect()));

describe.runIf(await redisReachable())('shared through Redis', () => {
  it('one token bucket per caller, whichever instance takes from it', async () => {
    const prefix = `relayer:test:${randomUUID()}:`;
    const a = redisBucket(await connect(), 1, 3, prefix);
    const b = redisBucket(await connect(), 1, 3, prefix);
    expect([await a.take('caller'), await b.take('caller'), await a.take('caller')]).toEqual([0, 0, 0]);
    const wait = await b.take('caller');
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000);
    expect(await a.take('someone-else')).toBe(0);
  });

  it('takes several tokens at once, all or none (the aliases of one operation)', async () => {
    const prefix = `relayer:test:${randomUUID()}:`;
    // A refill of one token every 1,000 s: nothing comes back during the test.
    const bucket = redisBucket(await connect(), 0.001, 10, prefix);
    expect(await bucket.take('caller', 7)).toBe(0);
    const wait = await bucket.take('caller', 4);
    expect(wait).toBeGreaterThan(900_000);
    expect(await bucket.take('caller', 3)).toBe(0);
    expect(await bucket.take('caller')).toBeGreaterThan(0);
  });

  it('live events reach subscribers of another instance with their bigint and date fields intact', async () => {
    const one = createEvents({ publish: await connect(), subscribe: await connect() });
    const two = createEvents({ publish: await connect(), subscribe: await connect() });
    const id = randomUUID();
    const iterator = two.subscribe('transaction:id', id)[Symbol.asyncIterator]();
    const next = iterator.next();
    await new Promise((r) => setTimeout(r, 100)); // let the SUBSCRIBE reach Redis
    const row = { id, relayerId: 'r', status: 'mined', nonce: 12345678901234567890n, createdAt: new Date('2030-01-02T03:04:05.678Z'), hashes: ['0xab'] };
    one.publish('transaction:id', id, row as never);
    const { value } = await next;
    expect(value).toEqual(row);
    await iterator.return?.();
  });
});

describe('while Redis cannot be reached', () => {
  // Clients to a port where nothing listens, never connected: as after Redis went away.
  const offline = () => {
    const c = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => {});
    clients.push(c);
    return c;
  };

  it("the rate limit takes from the instance's own bucket of the same size", async () => {
    const bucket = redisBucket(offline(), 1, 2);
    expect([await bucket.take('caller'), await bucket.take('caller')]).toEqual([0, 0]);
    expect(await bucket.take('caller')).toBeGreaterThan(0);
    expect(await bucket.take('someone-else')).toBe(0);
    // The local bucket takes several at once too, all or none.
    expect(await bucket.take('third', 3)).toBeGreaterThan(0);
    expect(await bucket.take('third', 2)).toBe(0);
  });

  it("live events reach this instance's subscribers, and publishing does not throw", async () => {
    const events = createEvents({ publish: offline(), subscribe: offline() });
    const id = randomUUID();
    const iterator = events.subscribe('transaction:id', id)[Symbol.asyncIterator]();
    const next = iterator.next();
    await new Promise((r) => setTimeout(r, 20));
    events.publish('transaction:id', id, { id, nonce: 5n } as never);
    expect((await next).value).toEqual({ id, nonce: 5n });
    await iterator.return?.();
  });
});
