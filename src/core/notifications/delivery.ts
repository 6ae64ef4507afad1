import type { Delivery, DeliveryStatus } from '../../generated/prisma/client.js';
import { startLoop } from '../../lib/loop.js';
import type { Runtime } from '../runtime.js';
import { slot } from '../state.js';
import { createPoster, type Poster, type PostResult } from './send.js';
import { signatureHeaders } from './signature.js';

/** Most attempts in flight to one target (notification) at a time, so a slow or dead one holds a few slots, not all. */
export const PER_TARGET = 8;
/** Due rows of one target looked at per claim (those queued behind an earlier event are parked). */
const SCAN_PER_TARGET = 32;

// The earliest pending delivery before `d` in its stream: per notification, a transaction's events
// (or, for relayer events, the relayer's), which a receiver gets in order. Failed (final) and
// delivered events no longer hold others back. One index probe (the indexes on transactionId and
// on relayerId, which cover every condition and the order).
const BLOCKER = `CASE WHEN d.transaction_id IS NOT NULL THEN (
    SELECT greatest(e.due_at, e.lease_until, now() + interval '1 second') FROM deliveries e
    WHERE e.transaction_id = d.transaction_id AND e.seq < d.seq AND e.notification_id = d.notification_id AND e.status = 'pending'
    ORDER BY e.seq LIMIT 1)
  ELSE (
    SELECT greatest(e.due_at, e.lease_until, now() + interval '1 second') FROM deliveries e
    WHERE e.relayer_id = d.relayer_id AND e.transaction_id IS NULL AND e.seq < d.seq AND e.notification_id = d.notification_id AND e.status = 'pending'
    ORDER BY e.seq LIMIT 1) END`;

/** Whether a notification has been seen: from then on every delivery claim is made. */
const TARGETS = slot('webhook targets', () => ({ seen: false }));

/**
 * Claims up to `limit` sendable deliveries in one statement whose cost does not grow with the
 * number pending: per target with room (fewer than PER_TARGET in flight), its few earliest due
 * rows by index. A row whose stream has an earlier pending row is not sent but parked until that
 * row is due again (so a backlog behind a failing receiver is looked at once per retry, not on
 * every claim); recordOutcome makes the next row of a stream due once its predecessor is done.
 */
export async function claimDeliveries(
  rt: Pick<Runtime, 'db' | 'instanceId' | 'state'>,
  limit: number,
  leaseMs: number,
  /** Targets resting after failures (TargetPauses): none of their rows is looked at. */
  resting: string[] = [],
): Promise<{ claimed: string[]; parked: number }> {
  // Deliveries go with their notification, so until one exists there is nothing to claim. Most of
  // the claim's cost is parsing and planning it, which this look saves a service without webhooks.
  // One deleted later only costs a claim.
  const targets = rt.state(TARGETS);
  if (!targets.seen) {
    if (!(await rt.db.prisma.notification.findFirst({ select: { id: true } }))) return { claimed: [], parked: 0 };
    targets.seen = true;
  }
  const rows = await rt.db.prisma.$queryRawUnsafe<{ id: string; kind: 'claimed' | 'parked' }[]>(
    `WITH targets AS (
       SELECT t.id, $4::int - (SELECT count(*) FROM deliveries l WHERE l.notification_id = t.id AND l.lease_until > now())::int AS room
       FROM notifications t),
     cand AS (
       SELECT d.id, d.notification_id, d.due_at, t.room, ${BLOCKER} AS blocked_until
       FROM targets t CROSS JOIN LATERAL (
         SELECT id, seq, notification_id, transaction_id, relayer_id, due_at FROM deliveries d
         WHERE d.notification_id = t.id AND d.status = 'pending' AND d.due_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
         ORDER BY d.due_at LIMIT $5) d
       WHERE t.room > 0 AND NOT (t.id = ANY(ARRAY(SELECT jsonb_array_elements_text($6::jsonb))))),
     parked AS (
       UPDATE deliveries SET due_at = (SELECT c.blocked_until FROM cand c WHERE c.id = deliveries.id)
       WHERE id = ANY(ARRAY(SELECT id FROM cand WHERE blocked_until IS NOT NULL)) AND (lease_until IS NULL OR lease_until < now())
         -- unless recordOutcome made it due meanwhile (its predecessor finished after this statement began)
         AND due_at = (SELECT c.due_at FROM cand c WHERE c.id = deliveries.id)
       RETURNING id),
     picked AS (
       SELECT id FROM (SELECT id, due_at, room, row_number() OVER (PARTITION BY notification_id ORDER BY due_at) AS k FROM cand WHERE blocked_until IS NULL) f
       WHERE k <= room ORDER BY due_at LIMIT $3),
     claimed AS (
       UPDATE deliveries SET lease_owner = $1, lease_until = now() + ($2 || ' milliseconds')::interval
       WHERE id = ANY(ARRAY(SELECT id FROM picked)) AND status = 'pending' AND (lease_until IS NULL OR lease_until < now())
       RETURNING id)
     SELECT id, 'claimed' AS kind FROM claimed UNION ALL SELECT id, 'parked' FROM parked`,
    rt.instanceId,
    String(leaseMs),
    limit,
    PER_TARGET,
    SCAN_PER_TARGET,
    JSON.stringify(resting),
  );
  return { claimed: rows.filter((r) => r.kind === 'claimed').map((r) => r.id), parked: rows.filter((r) => r.kind === 'parked').length };
}

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

/**
 * Per-target rest after failures: a target whose attempt failed in a retryable way (5xx, 429,
 * timeout, network) gets no new attempts for base * 2^(failures - 1) ms, capped (one failure counted
 * per rest, however many attempts were in flight); any answer that is not retried ends its rest.
 * So a dead receiver gets a few attempts per rest, whatever its backlog, and others are untouched.
 */
export class TargetPauses {
  private readonly state = new Map<string, { failures: number; until: number }>();
  constructor(private readonly s: Pick<RetrySettings, 'retryBaseMs' | 'retryMaxDelayMs'>) {}

  record(target: string, outcome: Pick<Outcome, 'status' | 'retryInMs'>, now = Date.now()): void {
    if (outcome.status !== 'pending') {
      this.state.delete(target);
      return;
    }
    const cur = this.state.get(target);
    if (cur && now < cur.until) return;
    const failures = (cur?.failures ?? 0) + 1;
    this.state.set(target, { failures, until: now + Math.min(this.s.retryMaxDelayMs, this.s.retryBaseMs * 2 ** Math.min(failures - 1, 40)) });
  }

  resting(now = Date.now()): string[] {
    return [...this.state].filter(([, v]) => now < v.until).map(([k]) => k);
  }
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
async function attempt(rt: Runtime, poster: Poster, pauses: TargetPauses, d: Claimed): Promise<void> {
  const id = d.id;
  const started = Date.now();
  const result = await poster.post(d.notification.url, d.body, signatureHeaders(d.notification.signingKey, d.body, started));
  const attempts = d.attempts + 1;
  const outcome = decide(result, attempts, Date.now() - d.createdAt.getTime(), rt.env.webhook);
  pauses.record(d.notificationId, outcome);
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
export async function recordOutcome(
  rt: Runtime,
  d: Pick<Delivery, 'id' | 'leaseUntil' | 'seq' | 'notificationId' | 'relayerId' | 'transactionId'>,
  attempts: number,
  outcome: Outcome,
): Promise<boolean> {
  const now = new Date();
  const { count } = await rt.db.prisma.delivery.updateMany({
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
  // Done with: the next event of its stream (parked behind it) goes now. Written even when it is
  // due already, so a claim parking it concurrently sees the change and leaves it (claimDeliveries).
  if (count > 0 && outcome.status !== 'pending') {
    await rt.db.prisma.$executeRawUnsafe(
      `UPDATE deliveries SET due_at = now() WHERE id = (
         SELECT id FROM deliveries WHERE notification_id = $1 AND status = 'pending' AND seq > $2
           AND ${d.transactionId ? 'transaction_id = $3' : 'relayer_id = $3 AND transaction_id IS NULL'}
         ORDER BY seq LIMIT 1)`,
      d.notificationId,
      d.seq,
      d.transactionId ?? d.relayerId,
    );
  }
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
  const pauses = new TargetPauses(rt.env.webhook);
  const loop = startLoop(
    async () => {
      const room = MAX_IN_FLIGHT - inFlight.size;
      if (room <= 0) return false;
      const { claimed: ids, parked } = await claimDeliveries(rt, room, leaseMs, pauses.resting());
      // Only parked: go on at once, but let requests in between.
      if (ids.length === 0) return parked > 0 && new Promise<boolean>((resolve) => setImmediate(() => resolve(true)));
      const claimed = await rt.db.prisma.delivery.findMany({ where: { id: { in: ids } }, include: WITH_TARGET });
      for (const d of claimed) {
        const p: Promise<void> = attempt(rt, poster, pauses, d)
          .catch((err) => rt.log.error({ err, deliveryId: d.id }, 'webhook attempt failed; retried when its lease ends'))
          .finally(() => {
            inFlight.delete(p);
            loop.wake();
          });
        inFlight.add(p);
      }
      return ids.length === room || parked > 0;
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
