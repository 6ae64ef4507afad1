import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultWindow, rateLimits } from '../../src/lib/rate-limits.js';
import { connectRedis } from '../../src/lib/redis.js';
import { REDIS_URL, redisReachable } from '../support/redis.js';

const clients: { disconnect(): void }[] = [];
afterAll(() => clients.forEach((c) => c.disconnect()));
const connect = async () => {
  const c = await connectRedis(REDIS_URL);
  clients.push(c);
  return c;
};
/** Milliseconds until the count may be taken: 0 when it was. */
const take = (p: Promise<unknown>) =>
  p.then(
    () => 0,
    (e) => {
      if (e instanceof RateLimiterRes) return e.msBeforeNext;
      throw e;
    },
  );

describe('the deployment window (RATE_LIMIT_BURST_SIZE, RATE_LIMIT_REQUESTS_PER_SECOND)', () => {
  it('is the burst, over the seconds the rate takes to allow as many', () => {
    expect(defaultWindow(100, 300)).toEqual({ limit: 300, duration: 3 });
    expect(defaultWindow(0.01, 3)).toEqual({ limit: 3, duration: 300 });
    // Never above the rate: 7 a second for a burst of 300 is 300 per 43 s.
    expect(defaultWindow(7, 300)).toEqual({ limit: 300, duration: 43 });
    // A rate above the burst: a second's worth of the rate.
    expect(defaultWindow(1000, 100)).toEqual({ limit: 1000, duration: 1 });
  });
});

describe.runIf(await redisReachable())('shared through Redis', () => {
  it('two instances count one budget per caller and window', async () => {
    const w = { limit: 3, duration: 60 };
    const [a, b] = [rateLimits(w, await connect()), rateLimits(w, await connect())];
    const caller = `caller-${randomUUID()}`;
    expect([await take(a.limiter(w).consume(caller)), await take(b.limiter(w).consume(caller)), await take(a.limiter(w).consume(caller))]).toEqual([0, 0, 0]);
    const wait = await take(b.limiter(w).consume(caller));
    expect(wait).toBeGreaterThan(55_000);
    expect(wait).toBeLessThanOrEqual(60_000);
    expect(await take(a.limiter(w).consume(`caller-${randomUUID()}`))).toBe(0);
    // Another window is another budget.
    expect(await take(b.limiter({ limit: 1, duration: 60 }).consume(caller))).toBe(0);
    // One limiter per window, kept.
    expect(a.limiter({ ...w })).toBe(a.limiter(w));
  });
});

describe('while Redis cannot be reached', () => {
  it('each instance counts on its own, in a window of the same size, and nothing throws', async () => {
    // A client to a port where nothing listens, never connected: as after Redis went away.
    const offline = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    offline.on('error', () => {});
    clients.push(offline);
    const w = { limit: 2, duration: 60 };
    const l = rateLimits(w, offline).limiter(w);
    expect([await take(l.consume('caller')), await take(l.consume('caller'))]).toEqual([0, 0]);
    expect(await take(l.consume('caller'))).toBeGreaterThan(0);
    expect(await take(l.consume('someone-else'))).toBe(0);
    // Several at once: refused when they do not fit.
    expect(await take(l.consume('third', 3))).toBeGreaterThan(0);
  });
});
