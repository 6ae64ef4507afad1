import { Redis } from 'ioredis';

/** A Redis client that fails fast on start-up problems and reconnects later on its own. */
export async function connectRedis(url: string): Promise<Redis> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 3, enableAutoPipelining: true });
  client.on('error', () => {}); // reconnects by itself; each failed command reports its own error
  await client.connect();
  return client;
}
