// The core step's sequencing, with a family of the test's own over a real (PGlite) database:
// decide -> write what will be sent -> send -> record -> save, with the crash points in between.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStep } from '../../src/core/step-runner.js';
import type { Decision, Steps } from '../../src/core/transactions/pipeline.js';
import { insertTransactions } from '../../src/core/transactions/store.js';
import { startTestService, type TestService } from '../support/service.js';

type E = { stage: 'read' | 'sign' | 'send'; point?: string; name: string; waits?: true };
type R = { signed?: boolean; name: string; status: string };

describe('the core step', () => {
  let svc: TestService;
  const log: string[] = [];
  beforeAll(async () => {
    svc = await startTestService({ workers: false });
    svc.rt.crash = (point) => log.push(`crash ${point}`);
  });
  afterAll(() => svc?.stop());

  const relayerOf = () => svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'evm-relayer' } });
  const row = (id: string) => svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id } });
  async function leasedRow() {
    const [tx] = await insertTransactions(
      svc.rt,
      [
        {
          id: randomUUID(),
          relayerId: 'evm-relayer',
          networkType: 'evm',
          from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
          to: null,
          data: null,
          nonce: null,
          gasLimit: null,
          gasPrice: null,
          maxFeePerGas: null,
          maxPriorityFeePerGas: null,
          speed: null,
          validUntil: new Date(Date.now() + 60_000),
          idempotencyKey: null,
          requestDigest: null,
          request: {},
        },
      ],
      { relayers: [{ id: 'evm-relayer', notificationId: null }], leaseOwner: svc.rt.instanceId },
    );
    return tx;
  }

  /** Signs, then sends; each effect notes the row's status in the database when it is performed. */
  const family: Steps<null, string, E, R, Decision<E>> = {
    context: () => null,
    async observe(_c, rows) {
      log.push(`observe ${rows.length}`);
      return 'seen';
    },
    decide: (rows, seen) => {
      log.push(`decide ${seen}`);
      return rows.map((tx) => ({ tx, patch: {}, effects: [{ stage: 'sign', point: 'send', name: 'sign' }], nextInMs: null }));
    },
    async perform(_c, todo) {
      const out: R[] = [];
      for (const { effect, d } of todo) {
        const { status } = await row(d.tx.id);
        log.push(`${effect.name} (row ${status})`);
        out.push({ signed: effect.stage === 'sign', name: effect.name, status });
      }
      return out;
    },
    record(d, [o]) {
      log.push(`record ${o.name}`);
      if (o.name === 'sign') return { ...d, patch: { status: 'sent', hash: '0xsigned' }, effects: [{ stage: 'send', point: 'send', name: 'send' }] };
      return { ...d, patch: { status: 'submitted' }, effects: [], nextInMs: 60_000 };
    },
  };

  it('writes what will be sent before sending it, records the answer and saves with the next due time, giving the lease back', async () => {
    log.length = 0;
    const tx = await leasedRow();
    await runStep(svc.rt, 'fake', family, await relayerOf(), [tx]);
    expect(log).toEqual([
      'observe 1',
      'decide seen',
      'sign (row pending)',
      'crash fake.send.signed',
      'record sign',
      'crash fake.send.saved',
      'send (row sent)',
      'crash fake.send.broadcast',
      'record send',
    ]);
    const after = await row(tx.id);
    expect(after).toMatchObject({ status: 'submitted', hash: '0xsigned', leaseOwner: null, leaseUntil: null });
    expect(after.sentAt).toBeInstanceOf(Date);
    expect(after.dueAt!.getTime()).toBeGreaterThan(Date.now() + 50_000);
  });

  it('sends nothing once the lease was lost: what would be sent could not be written', async () => {
    log.length = 0;
    const tx = await leasedRow();
    await svc.rt.db.prisma.$executeRaw`UPDATE transactions SET lease_owner = 'other-instance', lease_until = now() + interval '30 seconds' WHERE id = ${tx.id}`;
    await runStep(svc.rt, 'fake', family, await relayerOf(), [tx]);
    expect(log).toEqual(['observe 1', 'decide seen', 'sign (row pending)', 'crash fake.send.signed', 'record sign']);
    expect(await row(tx.id)).toMatchObject({ status: 'pending', hash: null, leaseOwner: 'other-instance' });
  });

  it('only gives back a row nothing changed, due again at its time', async () => {
    log.length = 0;
    const tx = await leasedRow();
    const idle: Steps<null, string, E, R, Decision<E>> = { ...family, decide: (rows) => rows.map((t) => ({ tx: t, patch: {}, effects: [], nextInMs: 5_000 })) };
    await runStep(svc.rt, 'fake', idle, await relayerOf(), [tx]);
    const after = await row(tx.id);
    // Written in the step's one save (a new row version), with nothing of it but the lease and due time.
    expect(after).toMatchObject({ status: 'pending', leaseOwner: null, leaseUntil: null, hash: null, nonce: tx.nonce, chainState: tx.chainState });
    expect(after.dueAt!.getTime()).toBeGreaterThan(Date.now());
    expect(log).toEqual(['observe 1']);
  });

  it('runs steps of one relayer side by side, but sends in the order they began', async () => {
    log.length = 0;
    const [first, second] = [await leasedRow(), await leasedRow()];
    // The first step is slow to observe: the second gets ahead of it until it has to send.
    const slow: Steps<null, string, E, R, Decision<E>> = {
      ...family,
      async observe(c, rows) {
        if (rows[0].id === first.id) await new Promise((r) => setTimeout(r, 300));
        return family.observe(c, rows);
      },
      async perform(c, todo) {
        for (const { effect, d } of todo) log.push(`${effect.name} ${d.tx.id === first.id ? 'first' : 'second'}`);
        return family.perform(c, todo);
      },
    };
    const relayer = await relayerOf();
    await Promise.all([runStep(svc.rt, 'fake', slow, relayer, [first]), runStep(svc.rt, 'fake', slow, relayer, [second])]);
    const steps = log.filter((l) => /^(sign|send) (first|second)$/.test(l));
    // The second signs (and writes) before the first has observed, and sends only after the first has ended.
    expect(steps).toEqual(['sign second', 'sign first', 'send first', 'send second']);
    for (const tx of [first, second]) expect(await row(tx.id)).toMatchObject({ status: 'submitted', leaseOwner: null });
  });

  it('gives back the rows it is done with before it waits on the chain, and reports them saved first', async () => {
    const [busy, held] = [await leasedRow(), await leasedRow()];
    let heldWhileWaiting: { leaseOwner: string | null; dueAt: Date | null } | null = null;
    const settled: string[][] = [];
    const steps: Steps<null, string, E, R, Decision<E>> = {
      ...family,
      // The second row waits for something else (a send window): nothing to do in this step.
      decide: (rows, seen) => family.decide(rows, seen, new Date()).map((d) => (d.tx.id === held.id ? { ...d, effects: [], nextInMs: 5_000 } : d)),
      async perform(c, todo) {
        if (todo[0].effect.name !== 'wait') return family.perform(c, todo);
        heldWhileWaiting = await row(held.id);
        return [{ name: 'wait', status: 'mined' }];
      },
      record(d, [o]) {
        if (o.name === 'wait') return { ...d, patch: { status: 'confirmed' }, via: ['submitted'], effects: [], nextInMs: null };
        const next = family.record(d, [o], new Date());
        return o.name === 'send' ? { ...next, effects: [{ stage: 'read', name: 'wait', waits: true }] } : next;
      },
      settled: (_c, ds) => void settled.push(ds.map((d) => d.tx.id)),
    };
    const before = Date.now();
    await runStep(svc.rt, 'fake', steps, await relayerOf(), [busy, held]);
    expect(heldWhileWaiting).toMatchObject({ leaseOwner: null });
    expect(heldWhileWaiting!.dueAt!.getTime()).toBeGreaterThanOrEqual(before + 5_000);
    expect(settled).toEqual([[held.id], [busy.id]]);
    expect(await row(busy.id)).toMatchObject({ status: 'confirmed', leaseOwner: null, dueAt: null });
  });

  it('ends a step’s turn once it has sent and only waits on the chain: the next step sends meanwhile, and the first writes once at its end', async () => {
    log.length = 0;
    const [first, second] = [await leasedRow(), await leasedRow()];
    let chainMoved!: () => void;
    let waitedAs = '';
    const moved = new Promise<void>((r) => (chainMoved = r));
    const waits: Steps<null, string, E, R, Decision<E>> = {
      ...family,
      async perform(c, todo) {
        const out: R[] = [];
        for (const { effect, d } of todo) {
          const which = d.tx.id === first.id ? 'first' : 'second';
          if (effect.name === 'wait') {
            log.push(`wait ${which}`);
            waitedAs = (await row(d.tx.id)).status;
            await moved;
            out.push({ name: 'wait', status: 'mined' });
          } else {
            log.push(`${effect.name} ${which}`);
            if (effect.name === 'send' && which === 'second') chainMoved();
            out.push(...(await family.perform(c, [{ effect, d }])));
          }
        }
        return out;
      },
      record(d, [o]) {
        if (o.name === 'wait') return { ...d, patch: { ...d.patch, status: 'confirmed' }, via: ['submitted'], effects: [], nextInMs: null };
        const next = family.record(d, [o], new Date());
        return d.tx.id === first.id && o.name === 'send' ? { ...next, effects: [{ stage: 'read', name: 'wait', waits: true }] } : next;
      },
    };
    const relayer = await relayerOf();
    const sent: string[] = [];
    const one = runStep(svc.rt, 'fake', waits, relayer, [first], undefined, () => sent.push('first'));
    const two = runStep(svc.rt, 'fake', waits, relayer, [second], undefined, () => sent.push('second'));
    await Promise.all([one, two]);
    // The first waits, its row as the write before sending left it; the second sends meanwhile.
    expect(log.filter((l) => /^(send|wait) (first|second)/.test(l))).toEqual(['send first', 'wait first', 'send second']);
    expect(waitedAs).toBe('sent');
    expect(sent).toEqual(['first', 'second']);
    expect(await row(first.id)).toMatchObject({ status: 'confirmed', leaseOwner: null, dueAt: null });
    expect(await row(second.id)).toMatchObject({ status: 'submitted', leaseOwner: null });
  });
});
