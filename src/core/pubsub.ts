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

/**
 * Live events: in this process, or through Redis so subscribers on every instance see every event.
 * While Redis cannot be reached, an event reaches only this instance's subscribers (and a failed
 * publish or subscribe is logged): the relay goes on without live events across instances.
 */
export function createEvents(redis?: { publish: Redis; subscribe: Redis }, onError: (err: unknown) => void = () => {}): PubSub<Topics> {
  if (!redis) return createPubSub<Topics>();
  // The event target fires these commands and forgets them; a rejection there would be unhandled.
  const failed = (err: unknown) => {
    onError(err);
    return 0;
  };
  const publishClient = {
    publish(channel: string, message: string) {
      if (redis.publish.status !== 'ready') {
        redis.subscribe.emit('message', channel, message);
        return Promise.resolve(0);
      }
      return redis.publish.publish(channel, message).catch((err) => failed(err));
    },
  } as unknown as Redis;
  const subscribeClient = {
    on: (event: string, listener: (...args: unknown[]) => void) => redis.subscribe.on(event, listener),
    subscribe: (channel: string) => redis.subscribe.subscribe(channel).catch((err) => failed(err)),
    unsubscribe: (channel: string) => redis.subscribe.unsubscribe(channel).catch((err) => failed(err)),
  } as unknown as Redis;
  return createPubSub<Topics>({
    eventTarget: createRedisEventTarget({ publishClient, subscribeClient, serializer }),
  });
}
