import { ExpiringMap } from './expiring.js';

/** A caller's request budget (spec 4.1-4.3): one token bucket per caller key. */
export interface Bucket {
  /** Takes `count` tokens (all or none); resolves to 0 when granted, else the milliseconds until they are available. */
  take(key: string, count?: number): Promise<number>;
}

/** A token bucket in this process: `burst` tokens, refilled at `perSecond`. */
export function memoryBucket(perSecond: number, burst: number): Bucket {
  // A caller's bucket left alone this long is full again: forgetting it changes nothing.
  const state = new ExpiringMap<string, { tokens: number; at: number }>(Math.ceil((burst / perSecond) * 1000), { touch: true });
  return {
    async take(key, count = 1) {
      const now = Date.now();
      const s = state.get(key) ?? { tokens: burst, at: now };
      s.tokens = Math.min(burst, s.tokens + ((now - s.at) / 1000) * perSecond);
      s.at = now;
      state.set(key, s);
      if (s.tokens >= count) {
        s.tokens -= count;
        return 0;
      }
      return Math.ceil(((count - s.tokens) / perSecond) * 1000);
    },
  };
}
