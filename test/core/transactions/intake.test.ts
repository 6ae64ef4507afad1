// Intake writes the sends that arrive together, of every relayer, in one statement: each relayer's
// nonces must still be allocated exactly once, contiguous, in its arrival order, and one relayer
// changed meanwhile (or without a nonce yet, or with a repeated Idempotency-Key) must not hold
// back or change what the others get.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertAccepted, type Intake, type Intaken, takeBatch } from '../../../src/core/transactions/intake.js';
import type { Relayer, Transaction } from '../../../src/generated/prisma/client.js';
import { isUniqueViolation } from '../../../src/db/unique-violation.js';
import type { TestService } from '../../support/service.js';
import { RECEIVER, SOLANA_RELAYER, STELLAR_RELAYER, startRestService } from '../../support/rest.js';

const RELAYERS = ['evm-relayer', SOLANA_RELAYER, STELLAR_RELAYER];

describe('intake of many relayers at once', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ workers: false });
  });
  afterAll(() => svc?.stop());

  const snapshot = (id: string) => svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id } });
  const setNonce = (id: string, nextNonce: bigint | null) => svc.rt.db.prisma.relayer.update({ where: { id }, data: { nextNonce } });
  let n = 0;
  const intake = (relayer: Relayer, idempotencyKey: string | null = null): Intake => ({
    relayer,
    type: relayer.networkType as Intake['type'],
    accepted: {
      data: { from: relayer.address, to: RECEIVER, value: String(++n), validUntil: new Date(Date.now() + 3_600_000) },
      request: { value: String(n) },
      takesNonce: true,
    },
    idempotencyKey,
    digest: `digest-${n}`,
  });
  /** Sends of each relayer, interleaved (every relayer's first, then every relayer's second, ...), all at once. */
  function interleaved(relayers: Relayer[], each: number) {
    const sent: { relayer: string; outcome: Promise<Intaken> }[] = [];
    for (let k = 0; k < each; k++) for (const r of relayers) sent.push({ relayer: r.id, outcome: insertAccepted(svc.rt, intake(r)) });
    return sent;
  }
  const nonces = (outcomes: Intaken[]) => outcomes.map((o) => (o as Transaction).nonce);
  const range = (from: bigint, count: number) => Array.from({ length: count }, (_, i) => from + BigInt(i));

  it("gives each relayer's sends its nonces exactly once, contiguous, in its arrival order", async () => {
    await Promise.all(RELAYERS.map((id, i) => setNonce(id, BigInt(100 * (i + 1)))));
    const relayers = await Promise.all(RELAYERS.map(snapshot));
    const sent = interleaved(relayers, 20);
    const outcomes = await Promise.all(sent.map((s) => s.outcome));
    for (const [i, id] of RELAYERS.entries()) {
      const mine = outcomes.filter((_, k) => sent[k].relayer === id);
      expect(nonces(mine)).toEqual(range(BigInt(100 * (i + 1)), 20));
      const stored = await svc.rt.db.prisma.transaction.findMany({ where: { id: { in: mine.map((t) => (t as Transaction).id) } } });
      expect(stored.map((t) => t.nonce).sort((a, b) => Number(a! - b!))).toEqual(range(BigInt(100 * (i + 1)), 20));
      expect((await snapshot(id)).nextNonce).toBe(BigInt(100 * (i + 1) + 20));
    }
  });

  it('refuses the sends of a relayer changed since they were checked (stale) or without a nonce yet, and writes the others', async () => {
    await setNonce(SOLANA_RELAYER, null);
    const [evm, solana, stellar] = await Promise.all(RELAYERS.map(snapshot));
    const evmNext = evm.nextNonce!;
    // Changed after its sends were checked.
    await svc.rt.db.prisma.relayer.update({ where: { id: STELLAR_RELAYER }, data: { policies: { changed: true } } });
    const refused = { relayerId: { in: [SOLANA_RELAYER, STELLAR_RELAYER] } };
    const before = await svc.rt.db.prisma.transaction.count({ where: refused });
    const sent = interleaved([evm, solana, stellar], 5);
    const outcomes = await Promise.all(sent.map((s) => s.outcome));
    const of = (id: string) => outcomes.filter((_, k) => sent[k].relayer === id);
    expect(nonces(of('evm-relayer'))).toEqual(range(evmNext, 5));
    expect(of(SOLANA_RELAYER)).toEqual(Array(5).fill('no-nonce'));
    expect(of(STELLAR_RELAYER)).toEqual(Array(5).fill('stale'));
    expect((await snapshot(STELLAR_RELAYER)).nextNonce).toBe(stellar.nextNonce);
    expect(await svc.rt.db.prisma.transaction.count({ where: refused })).toBe(before);
  });

  it('refuses only the send with a repeated Idempotency-Key; the others, of its relayer too, get contiguous nonces', async () => {
    await setNonce(SOLANA_RELAYER, 0n);
    const relayers = await Promise.all(RELAYERS.map(snapshot));
    const first = await insertAccepted(svc.rt, intake(relayers[0], 'once'));
    expect(typeof first).toBe('object');
    const relayersNow = await Promise.all(RELAYERS.map(snapshot));
    const sent = interleaved(relayersNow, 3);
    const again = insertAccepted(svc.rt, intake(relayersNow[0], 'once')).catch((e) => e);
    sent.push(...interleaved(relayersNow, 3));
    const outcomes = await Promise.all(sent.map((s) => s.outcome));
    expect(isUniqueViolation(await again)).toBe(true);
    for (const [i, r] of relayersNow.entries()) {
      const mine = outcomes.filter((_, k) => sent[k].relayer === r.id);
      expect(nonces(mine)).toEqual(range(r.nextNonce!, 6));
      expect((await snapshot(RELAYERS[i])).nextNonce).toBe(r.nextNonce! + 6n);
    }
  });
});

describe('intake batches', () => {
  const relayer = (id: string, paused = false) =>
    ({
      id,
      updatedAt: new Date(0),
      paused,
      systemDisabled: false,
      policies: {},
      customRpcUrls: null,
      notificationId: null,
      signerId: 's',
      address: '0x1',
      network: 'n',
    }) as Relayer;
  const send = (r: Relayer, n: number) => ({ relayer: r, n });
  const ids = (groups: { relayer: Relayer; n: number }[][]) => groups.map((g) => g.map((w) => `${w.relayer.id}${w.n}`));

  it("take every relayer's waiting sends at once, a group per relayer in its arrival order", () => {
    const [a, b, c] = [relayer('a'), relayer('b'), relayer('c')];
    const queue = [send(a, 1), send(b, 1), send(c, 1), send(a, 2), send(b, 2), send({ ...c }, 2)];
    expect(ids(takeBatch(queue))).toEqual([
      ['a1', 'a2'],
      ['b1', 'b2'],
      ['c1', 'c2'],
    ]);
    expect(queue).toEqual([]);
  });

  it("leave a relayer's sends from the first checked against another version of it for the next batch, in order", () => {
    const [a, b] = [relayer('a'), relayer('b')];
    const queue = [send(a, 1), send(b, 1), send(relayer('a', true), 2), send(b, 2), send(a, 3)];
    expect(ids(takeBatch(queue))).toEqual([['a1'], ['b1', 'b2']]);
    expect(ids([queue])).toEqual([['a2', 'a3']]);
    expect(ids(takeBatch(queue))).toEqual([['a2']]);
    expect(ids(takeBatch(queue))).toEqual([['a3']]);
  });

  it('take 500 sends at most, and after the first left over none of its relayer', () => {
    const [a, b] = [relayer('a'), relayer('b')];
    const queue = [...Array.from({ length: 499 }, (_, i) => send(a, i)), send(b, 0), send(a, 499), send(b, 1)];
    const groups = takeBatch(queue);
    expect(groups.map((g) => [g[0].relayer.id, g.length])).toEqual([
      ['a', 499],
      ['b', 1],
    ]);
    expect(ids([queue])).toEqual([['a499', 'b1']]);
  });
});
