import type { Redis } from 'ioredis';

/** A Redis client that fails fast on start-up problems and reconnects later on its own. */
export async function connectRedis(url: string): Promise<Redis> {
  // Loaded only when REDIS_URL is set.
  const { Redis } = await import('ioredis');
  // A command that gets no answer in 2 s fails: a hung server must not hang requests.
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 3,
    enableAutoPipelining: true,
    commandTimeout: 2_000,
  });
  client.on('error', () => {}); // reconnects by itself; each failed command reports its own error
  await client.connect();
  return client;
}
