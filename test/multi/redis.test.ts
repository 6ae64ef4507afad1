import { randomUUID } from 'node:crypto';
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
