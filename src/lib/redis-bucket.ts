import type { Redis } from 'ioredis';
import { memoryBucket, type Bucket } from './bucket.js';

// Refill and take in one atomic step, on Redis' clock, so every instance shares one bucket per caller.
const TAKE = `
local key = KEYS[1]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', key, 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if tokens >= count then
  tokens = tokens - count
else
  wait = math.ceil((count - tokens) * 1000 / rate)
end
redis.call('HSET', key, 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', key, math.ceil(burst * 1000 / rate) + 1000)
return wait
`;

/**
 * The token bucket of rate-limit.ts, kept in Redis. While Redis cannot be reached, each instance
 * limits on its own bucket (`fallback`, same size and rate) instead of failing the request, and
 * goes back to the shared one as soon as the connection is ready again.
 */
export function redisBucket(
  redis: Redis,
  perSecond: number,
  burst: number,
  prefix = 'relayer:rate:',
  fallback: Bucket = memoryBucket(perSecond, burst),
  onFallback: (err: unknown) => void = () => {},
): Bucket {
  return {
    async take(key, count = 1) {
      // Not connected: do not wait in the client's offline queue for a Redis that may be gone for good.
      if (redis.status !== 'ready') return fallback.take(key, count);
      try {
        return Number(await redis.eval(TAKE, 1, prefix + key, String(perSecond), String(burst), String(count)));
      } catch (err) {
        onFallback(err);
        return fallback.take(key, count);
      }
    },
  };
}
