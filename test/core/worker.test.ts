// Accepting sends does not outrun the transaction worker: while rows handed to it pile up, new
// sends wait to be written (rows it had to give back for want of room would reach the node after
// later nonces, and the chain would mine nothing until the gap filled).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Transaction } from '../../src/generated/prisma/client.js';
import { startTransactionWorker } from '../../src/core/worker.js';
import { families } from '../support/families.js';
import { startTestService, type TestService } from '../support/service.js';
import { envelope, RECEIVER, startRestService } from '../support/rest.js';

describe('a worker with rows piling up', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ workers: false });
  });
  afterAll(() => svc?.stop());

  // Rows whose lease has run out: the worker drops them from its queue without working on them.
  const stale = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `stale-${i}`, leaseUntil: new Date(0) }) as Transaction);

  it('has room at once while its queue is short, holds sends while it is long, and lets them in as the queue drains', async () => {
    // A wait that does not run out within the test: only the queue draining lets them in.
    const worker = startTransactionWorker(svc.rt, { sendWaitMs: 600_000 });
    try {
      expect(worker.roomForSends()).toBeUndefined();
      worker.handOff(stale(1_500));
      const room = worker.roomForSends();
      expect(room).toBeInstanceOf(Promise);
      await room;
      expect(worker.roomForSends()).toBeUndefined();
    } finally {
      await worker.stop();
    }
  });

  it('lets waiting sends in when it stops', async () => {
    const worker = startTransactionWorker(svc.rt, { sendWaitMs: 600_000 });
    worker.handOff(stale(1_500));
    const room = worker.roomForSends();
    let through = false;
    void room?.then(() => {
      through = true;
    });
    await worker.stop();
    await room;
    expect(through).toBe(true);
  });
});

describe.runIf(families.has('evm'))('sends while the worker has no room', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ anvil: true });
  });
  afterAll(() => svc?.stop());

  it('are written only once it has room, then answered as usual', async () => {
    let open!: () => void;
    const room = new Promise<void>((resolve) => {
      open = resolve;
    });
    // The worker (or none) as it is, but for its room.
    const real = svc.rt.work.to;
    const detach = svc.rt.work.attach({ wake: () => real?.wake(), handOff: (rows) => real?.handOff(rows), roomForSends: () => room });
    try {
      const before = await svc.rt.db.prisma.transaction.count();
      const sent = svc.request('POST', '/api/v1/relayers/evm-relayer/transactions', { value: 1, to: RECEIVER });
      await new Promise((r) => setTimeout(r, 300));
      expect(await svc.rt.db.prisma.transaction.count()).toBe(before);
      open();
      const res = await sent;
      expect(res.status).toBe(200);
      const body = await envelope(res);
      expect(body.data).toMatchObject({ status: expect.any(String), to: RECEIVER, value: '1' });
      expect(await svc.rt.db.prisma.transaction.count()).toBe(before + 1);
    } finally {
      detach();
      if (real) svc.rt.work.attach(real);
    }
  });
});
