import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createEvents } from '../../src/core/pubsub.js';
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
