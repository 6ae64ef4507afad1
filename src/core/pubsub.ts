import { createRedisEventTarget } from '@graphql-yoga/redis-event-target';
import { createPubSub, type PubSub } from 'graphql-yoga';
import type { Redis } from 'ioredis';
import type { Topics } from './runtime.js';

// Events carry database rows (bigint and Date fields): tag them so they survive the trip through Redis.
const serializer = {
  stringify: (message: unknown) =>
    JSON.stringify(message, function (key, value) {
      const raw = (this as Record<string, unknown>)[key];
      if (typeof raw === 'bigint') return { $bigint: raw.toString() };
      if (raw instanceof Date) return { $date: raw.toISOString() };
      return value;
    }),
  parse: (text: string) =>
    JSON.parse(text, (_key, value) => {
      if (value && typeof value === 'object' && !Array.isArray(value)) {
        if (typeof value.$bigint === 'string' && Object.keys(value).length === 1) return BigInt(value.$bigint);
        if (typeof value.$date === 'string' && Object.keys(value).length === 1) return new Date(value.$date);
      }
      return value;
    }),
};

/** Live events: in this process, or through Redis so subscribers on every instance see every event. */
export function createEvents(redis?: { publish: Redis; subscribe: Redis }): PubSub<Topics> {
  if (!redis) return createPubSub<Topics>();
  return createPubSub<Topics>({
    eventTarget: createRedisEventTarget({ publishClient: redis.publish, subscribeClient: redis.subscribe, serializer }),
  });
}
