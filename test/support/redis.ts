import { Redis } from 'ioredis';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let reachable: Promise<boolean> | undefined;

/** Whether this machine's Redis answers (suites that need it are skipped otherwise). */
export function redisReachable(): Promise<boolean> {
  reachable ??= (async () => {
    const client = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      await client.connect();
      return (await client.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  })();
  return reachable;
}
