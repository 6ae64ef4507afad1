import type { Redis } from 'ioredis';
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';

/** A budget: `limit` calls per `duration` seconds (the arguments of `@rateLimit`). */
export interface Window {
  limit: number;
  duration: number;
}

/**
 * The rate limiters of one service: one per window, made on first use and kept, so the
 * directive's wrappers and the count taken before an operation runs draw on the same one.
 */
export interface RateLimits {
  /** The deployment's window (RATE_LIMIT_*): that of fields marked without arguments. */
  defaults: Window;
  limiter(w: Window): RateLimiterAbstract;
}

/**
 * RATE_LIMIT_BURST_SIZE calls per the seconds RATE_LIMIT_REQUESTS_PER_SECOND takes to allow as
 * many: a caller may spend the whole burst at once, and over time no more than the rate. When the
 * rate is above the burst, a second's worth of the rate. See docs/configuration.md.
 */
export function defaultWindow(perSecond: number, burst: number): Window {
  const duration = Math.max(1, Math.ceil(burst / perSecond));
  return { limit: duration === 1 ? Math.max(burst, Math.floor(perSecond)) : burst, duration };
}

/**
 * Counters in Redis when one is given (shared by every instance, under `relayer:rate:`), else in
 * this process. While Redis is not ready or a command fails, each instance counts on its own
 * (rate-limiter-flexible's insuranceLimiter, same window) rather than failing the request.
 */
export function rateLimits(defaults: Window, redis?: Redis): RateLimits {
  const make = ({ limit, duration }: Window): RateLimiterAbstract => {
    const opts = { points: limit, duration, keyPrefix: `relayer:rate:${limit}/${duration}` };
    return redis
      ? new RateLimiterRedis({ ...opts, storeClient: redis, rejectIfRedisNotReady: true, insuranceLimiter: new RateLimiterMemory(opts) })
      : new RateLimiterMemory(opts);
  };
  const deployment = make(defaults);
  const made = new Map([[`${defaults.limit}/${defaults.duration}`, deployment]]);
  return {
    defaults,
    limiter(w) {
      // The window of nearly every call, found without making its name.
      if (w === defaults) return deployment;
      const name = `${w.limit}/${w.duration}`;
      let l = made.get(name);
      if (!l) made.set(name, (l = make(w)));
      return l;
    },
  };
}
