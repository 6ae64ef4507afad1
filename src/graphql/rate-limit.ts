import { createHash } from 'node:crypto';
import { rateLimitDirective } from 'graphql-rate-limit-directive';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Context } from './context.js';
import { rateLimited } from './errors.js';

/**
 * Marks a field as drawing on the caller's request budget (spec 4.1-4.3). Every marked field
 * shares one token bucket per caller, on both surfaces; its size and refill rate are deployment
 * settings (RATE_LIMIT_BURST_SIZE, RATE_LIMIT_REQUESTS_PER_SECOND), not per-field arguments.
 */
export const RATE_LIMITED = { rateLimit: { limit: 1, duration: 1 } } as const;

export interface Bucket {
  /** Takes one token; resolves to 0 when granted, else the milliseconds until one is available. */
  take(key: string): Promise<number>;
}

/** A token bucket in this process: `burst` tokens, refilled at `perSecond`. */
export function memoryBucket(perSecond: number, burst: number): Bucket {
  const state = new Map<string, { tokens: number; at: number }>();
  return {
    async take(key) {
      const now = Date.now();
      const s = state.get(key) ?? { tokens: burst, at: now };
      s.tokens = Math.min(burst, s.tokens + ((now - s.at) / 1000) * perSecond);
      s.at = now;
      state.set(key, s);
      if (s.tokens >= 1) {
        s.tokens -= 1;
        return 0;
      }
      return Math.ceil(((1 - s.tokens) / perSecond) * 1000);
    },
  };
}

export const callerKey = (token: string) => createHash('sha256').update(token).digest('base64url').slice(0, 22);

export function rateLimitTransformer() {
  // The directive builds its limiter from this class; ours defers to the runtime's bucket.
  class SharedBucket {
    async consume(key: string) {
      const [bucketId, caller] = key.split('\0');
      const wait = await buckets.get(bucketId)!.take(caller);
      if (wait > 0) throw { msBeforeNext: wait, remainingPoints: 0, consumedPoints: 1, isFirstInDuration: false };
      return { msBeforeNext: 0, remainingPoints: 1, consumedPoints: 1, isFirstInDuration: false };
    }
  }
  return rateLimitDirective<Context>({
    limiterClass: SharedBucket as unknown as typeof RateLimiterAbstract,
    keyGenerator: (_args, _source, _fieldArgs, ctx) => `${registerBucket(ctx.rt.rateLimit)}\0${ctx.caller}`,
    onLimit: (res) => {
      throw rateLimited(res.msBeforeNext / 1000);
    },
  });
}

// One schema serves every runtime in the process (tests run several): buckets are looked up per runtime.
const buckets = new Map<string, Bucket>();
const ids = new WeakMap<Bucket, string>();
function registerBucket(bucket: Bucket): string {
  let id = ids.get(bucket);
  if (!id) {
    id = String(buckets.size + 1);
    ids.set(bucket, id);
    buckets.set(id, bucket);
  }
  return id;
}
