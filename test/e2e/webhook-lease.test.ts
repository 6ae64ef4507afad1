import { afterAll, beforeAll, expect, it } from 'vitest';
import { claimDue } from '../../src/db/lease.js';
import { recordOutcome } from '../../src/core/notifications/delivery.js';
import { startTestService, type TestService } from '../support/service.js';
import { acceptTransaction, hookConfig } from '../support/notifications.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startTestService({ config: hookConfig('http://127.0.0.1:9/hook'), workers: false });
});
afterAll(() => svc?.stop());

it('a delivery attempt writes its outcome only under the lease it was claimed with', async () => {
  const rt = svc.rt;
  await acceptTransaction(rt);
  const [id] = await claimDue(rt.db, 'deliveries', { owner: rt.instanceId, limit: 1, leaseMs: 1_000, where: 'true' });
  const claimed = await rt.db.prisma.delivery.findUniqueOrThrow({ where: { id } });
  // The attempt outlives its lease and the delivery is claimed again (here by the same instance).
  await rt.db.prisma.$executeRaw`UPDATE deliveries SET lease_until = lease_until + interval '1 minute' WHERE id = ${id}`;
  const outcome = { status: 'delivered' as const, error: null, statusCode: 200 };
  expect(await recordOutcome(rt, claimed, 1, outcome)).toBe(false);
  expect(await rt.db.prisma.delivery.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'pending', attempts: 0, leaseOwner: rt.instanceId });
  const current = await rt.db.prisma.delivery.findUniqueOrThrow({ where: { id } });
  expect(await recordOutcome(rt, current, 1, outcome)).toBe(true);
  expect(await rt.db.prisma.delivery.findUniqueOrThrow({ where: { id } })).toMatchObject({
    status: 'delivered',
    attempts: 1,
    leaseOwner: null,
    leaseUntil: null,
  });
});
