import { claimDue, dropStaleLeases } from '../../db/lease.js';
import type { Delivery, DeliveryStatus } from '../../generated/prisma/client.js';
import { startLoop } from '../../lib/loop.js';
import type { Runtime } from '../runtime.js';
import { createPoster, type Poster, type PostResult } from './send.js';
import { signatureHeaders } from './signature.js';

/**
 * Which pending deliveries may be sent now: per notification, only the oldest pending event of a
 * transaction (or, for relayer events, of the relayer) goes out, so a receiver sees each
 * transaction's changes in order. Failed (final) and delivered events no longer hold others back.
 * Trusted SQL for claimDue, where `deliveries` is the candidate row.
 */
export const SENDABLE = `status = 'pending' AND NOT EXISTS (
  SELECT 1 FROM deliveries earlier
  WHERE earlier.status = 'pending' AND earlier.seq < deliveries.seq AND earlier.notification_id = deliveries.notification_id
    AND CASE WHEN deliveries.transaction_id IS NULL
      THEN earlier.transaction_id IS NULL AND earlier.relayer_id = deliveries.relayer_id
      ELSE earlier.transaction_id = deliveries.transaction_id END)`;

/** However old an event is, it gets at least this many tries (a redelivery starts counting again). */
export const MIN_ATTEMPTS = 5;
const MAX_IN_FLIGHT = 32;

export interface RetrySettings {
  retryBaseMs: number;
  retryMaxDelayMs: number;
  retryWindowMs: number;
}

/** Full jitter: a random wait below base * 2^(failures - 1), capped. */
export function backoffMs(failures: number, s: Pick<RetrySettings, 'retryBaseMs' | 'retryMaxDelayMs'>, random = Math.random): number {
  const ceiling = Math.min(s.retryMaxDelayMs, s.retryBaseMs * 2 ** Math.min(Math.max(failures - 1, 0), 40));
  return Math.floor(random() * ceiling);
}

/** Retry-After as seconds or an HTTP date, in ms from now; null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export interface Outcome {
  status: DeliveryStatus;
  error: string | null;
  statusCode: number | null;
  /** When to try again (pending only). */
  retryInMs?: number;
}

/**
 * What one attempt means: 2xx delivered; 429, 5xx, network errors and timeouts retried with backoff
 * until the event is older than the retry window (and had MIN_ATTEMPTS tries); any other status,
 * and a refused target, is final.
 */
export function decide(result: PostResult, attempts: number, ageMs: number, s: RetrySettings, now = Date.now()): Outcome {
  const retry = (error: string, statusCode: number | null, hint: number | null = null): Outcome => {
    if (attempts >= MIN_ATTEMPTS && ageMs >= s.retryWindowMs) return { status: 'failed', error: `${error} (gave up after ${attempts} attempts)`, statusCode };
    const wait = Math.max(backoffMs(attempts, s), Math.min(hint ?? 0, s.retryMaxDelayMs));
    return { status: 'pending', error, statusCode, retryInMs: wait };
  };
  if (!result.ok) return result.blocked ? { status: 'failed', error: result.error, statusCode: null } : retry(result.error, null);
  const code = result.status;
  if (code >= 200 && code < 300) return { status: 'delivered', error: null, statusCode: code };
  if (code === 429 || code >= 500) return retry(`HTTP ${code}`, code, retryAfterMs(result.retryAfter, now));
  return { status: 'failed', error: code >= 300 && code < 400 ? `HTTP ${code} (redirects are not followed)` : `HTTP ${code}`, statusCode: code };
}

const WITH_TARGET = { notification: { select: { url: true, signingKey: true } } } as const;
type Claimed = Delivery & { notification: { url: string; signingKey: string | null } };

/** Sends one claimed delivery, signed with the notification's current key, and records the outcome. */
async function attempt(rt: Runtime, poster: Poster, d: Claimed): Promise<void> {
  const id = d.id;
  const started = Date.now();
  const result = await poster.post(d.notification.url, d.body, signatureHeaders(d.notification.signingKey, d.body, started));
  const attempts = d.attempts + 1;
  const outcome = decide(result, attempts, Date.now() - d.createdAt.getTime(), rt.env.webhook);
  await recordOutcome(rt, d, attempts, outcome);
  rt.metrics.deliveries.inc({ outcome: outcome.status === 'delivered' ? 'success' : outcome.status === 'pending' ? 'retry' : 'failed' });
  const fields = { deliveryId: id, event: d.event, notificationId: d.notificationId, attempts, statusCode: outcome.statusCode, ms: Date.now() - started };
  if (outcome.status === 'delivered') rt.log.debug(fields, 'webhook delivered');
  else if (outcome.status === 'failed') rt.log.warn({ ...fields, error: outcome.error }, 'webhook delivery failed for good');
  else rt.log.info({ ...fields, error: outcome.error, retryInMs: outcome.retryInMs }, 'webhook delivery failed; will retry');
}

/**
 * Writes an attempt's outcome and gives the lease back, only under the lease the delivery was
 * claimed with (a holder whose lease ran out and was taken over changes nothing). Returns whether
 * it was written.
 */
export async function recordOutcome(rt: Runtime, d: Pick<Delivery, 'id' | 'leaseUntil'>, attempts: number, outcome: Outcome): Promise<boolean> {
  const now = new Date();
  const { count } = await rt.prisma.delivery.updateMany({
    where: { id: d.id, leaseOwner: rt.instanceId, leaseUntil: d.leaseUntil },
    data: {
      status: outcome.status,
      attempts,
      lastStatusCode: outcome.statusCode,
      ...(outcome.error ? { lastError: outcome.error } : {}),
      ...(outcome.status === 'delivered' ? { deliveredAt: now } : {}),
      ...(outcome.retryInMs !== undefined ? { dueAt: new Date(now.getTime() + outcome.retryInMs) } : {}),
      leaseOwner: null,
      leaseUntil: null,
    },
  });
  return count > 0;
}

/**
 * Sends due webhook deliveries, up to MAX_IN_FLIGHT at a time (a slow receiver holds one slot, not
 * the loop). Each finished attempt wakes the loop, so the next event of the same transaction
 * follows at once.
 */
export function startDeliveryWorker(rt: Runtime) {
  const { timeoutMs, blockPrivateTargets } = rt.env.webhook;
  const poster = createPoster({ timeoutMs, blockPrivate: blockPrivateTargets });
  const leaseMs = timeoutMs + 30_000;
  const inFlight = new Set<Promise<void>>();
  let started = false;
  const loop = startLoop(
    async () => {
      if (!started) await dropStaleLeases(rt, 'deliveries');
      started = true;
      const room = MAX_IN_FLIGHT - inFlight.size;
      if (room <= 0) return false;
      const ids = await claimDue(rt.prisma, 'deliveries', { owner: rt.instanceId, limit: room, leaseMs, where: SENDABLE });
      if (ids.length === 0) return false;
      const claimed = await rt.prisma.delivery.findMany({ where: { id: { in: ids } }, include: WITH_TARGET });
      for (const d of claimed) {
        const p: Promise<void> = attempt(rt, poster, d)
          .catch((err) => rt.log.error({ err, deliveryId: d.id }, 'webhook attempt failed; retried when its lease ends'))
          .finally(() => {
            inFlight.delete(p);
            loop.wake();
          });
        inFlight.add(p);
      }
      return ids.length === room;
    },
    { idleMs: 200, onError: (err) => rt.log.error({ err }, 'webhook worker error') },
  );
  return {
    wake: loop.wake,
    async stop() {
      await loop.stop();
      await Promise.all(inFlight);
      poster.close();
    },
  };
}
