import { afterAll, beforeAll, expect, it } from 'vitest';
import { claimDeliveries } from '../../src/core/notifications/delivery.js';
import { seedBacklog, serveOverHttp, serviceLatency, startWithTargets } from '../support/backlog.js';
import type { TestService } from '../support/service.js';
import { startReceiver, waitFor } from '../support/receiver.js';

// A receiver answering 503 and one that never answers, with 5,000 deliveries pending between them,
// hold up neither the service (health, sends) nor a healthy target's deliveries. Timings are
// asserted loosely (the machine is shared); bench/webhooks.ts measures them.

let svc: TestService;
let ok: Awaited<ReturnType<typeof startReceiver>>;
let dead: Awaited<ReturnType<typeof startReceiver>>;
let hang: Awaited<ReturnType<typeof startReceiver>>;
let http: Awaited<ReturnType<typeof serveOverHttp>>;

beforeAll(async () => {
  [ok, dead, hang] = await Promise.all([startReceiver(), startReceiver(), startReceiver()]);
  dead.answer(() => 503);
  hang.answer(() => 'hang');
  svc = await startWithTargets(
    { ok: ok.url, dead503: dead.url, hang: hang.url },
    { WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_RETRY_BASE_MS: '200', WEBHOOK_RETRY_MAX_DELAY_MS: '5000' },
  );
  http = await serveOverHttp(svc);
});
afterAll(async () => {
  await http?.close();
  await svc?.stop();
  await Promise.all([ok, dead, hang].map((r) => r?.close()));
});

const deliveredTo = async (ids: string[]) => {
  const seen = new Set(ok.received.map((r) => r.body?.payload?.id));
  return ids.every((id) => seen.has(id));
};

it('5,000 deliveries pending to a 503 receiver and a silent one hold up neither health, sends nor a healthy target', async () => {
  await serviceLatency(http.url, svc.apiKey, 3); // warm-up
  const healthy = await serviceLatency(http.url, svc.apiKey, 20);
  await waitFor(() => deliveredTo(healthy.sentIds), 'the healthy baseline deliveries', 30_000);

  // 500 transactions of 5 events to each dead receiver: streams of several rows, all due now.
  await seedBacklog(svc.rt, { notificationId: 'dead503', transactions: 500, perTransaction: 5 });
  await seedBacklog(svc.rt, { notificationId: 'hang', transactions: 500, perTransaction: 5 });
  svc.rt.notifications.sender.to?.wake();
  await waitFor(() => dead.received.length >= 8 && hang.received.length >= 1, 'attempts at both dead receivers');

  const backlogged = await serviceLatency(http.url, svc.apiKey, 20);
  await waitFor(() => deliveredTo(backlogged.sentIds), 'deliveries to the healthy target during the backlog', 30_000);
  const pending = await svc.rt.db.prisma.delivery.count({ where: { status: 'pending', notificationId: { in: ['dead503', 'hang'] } } });
  expect(pending).toBeGreaterThanOrEqual(4_900);
  // Never more than PER_TARGET attempts at once to the silent receiver, so slots remain for others.
  const inFlight = await svc.rt.db.prisma.delivery.count({ where: { notificationId: 'hang', leaseUntil: { gt: new Date() } } });
  expect(inFlight).toBeLessThanOrEqual(8);
  // In a stream only the earliest pending event has been tried.
  const tried = await svc.rt.db.prisma.$queryRawUnsafe<{ n: number }[]>(
    `SELECT count(*)::int AS n FROM deliveries d WHERE d.attempts > 0 AND EXISTS (
       SELECT 1 FROM deliveries e WHERE e.transaction_id = d.transaction_id AND e.seq < d.seq AND e.status = 'pending')`,
  );
  expect(tried[0].n).toBe(0);

  console.log(
    `health median ${healthy.healthMs.toFixed(2)} -> ${backlogged.healthMs.toFixed(2)} ms; send median ${healthy.sendMs.toFixed(1)} -> ${backlogged.sendMs.toFixed(1)} ms`,
  );
  // Loose bounds: a stalled service (the old claim) took seconds per request.
  expect(backlogged.healthMs).toBeLessThan(Math.max(10 * healthy.healthMs, 50));
  expect(backlogged.sendMs).toBeLessThan(Math.max(5 * healthy.sendMs, healthy.sendMs + 500));
}, 180_000);

it('a claim uses the indexes: with the backlog backing off, it touches no dead target row', async () => {
  // Attempts still in flight reschedule their row when they end, so push the backlog an hour out
  // until no row is leased or due within the half hour: from then on nothing can change it.
  const dead = { notificationId: { in: ['dead503', 'hang'] } };
  await waitFor(
    async () => {
      await svc.rt.db.prisma.delivery.updateMany({ where: dead, data: { dueAt: new Date(Date.now() + 3_600_000) } });
      await new Promise((r) => setTimeout(r, 100));
      const soon = new Date(Date.now() + 1_800_000);
      return (await svc.rt.db.prisma.delivery.count({ where: { ...dead, OR: [{ leaseUntil: { gt: new Date() } }, { dueAt: { lt: soon } }] } })) === 0;
    },
    'the backlog to be idle',
    30_000,
  );
  const before = await svc.rt.db.prisma.delivery.findMany({ where: dead, orderBy: { id: 'asc' } });
  const { claimed } = await claimDeliveries(svc.rt, 32, 60_000);
  const rows = await svc.rt.db.prisma.delivery.findMany({ where: { id: { in: claimed } } });
  expect(rows.every((r) => r.notificationId === 'ok')).toBe(true);
  expect(await svc.rt.db.prisma.delivery.findMany({ where: dead, orderBy: { id: 'asc' } })).toEqual(before);
});
