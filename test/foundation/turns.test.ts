import { expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { createTurns } from '../../src/db/turns.js';

/** An operation that records when it starts and ends, and holds its turn until `release` is called. */
function held(log: string[], name: string) {
  let release!: () => void;
  const done = new Promise<void>((r) => (release = r));
  const op = async () => {
    log.push(`${name}+`);
    await done;
    log.push(`${name}-`);
    return name;
  };
  return { op, release };
}

const settle = () => new Promise((r) => setTimeout(r, 5));

it('runs one operation at a time, the waiting API operations before the waiting workers ones', async () => {
  const turns = createTurns();
  const log: string[] = [];
  const first = held(log, 'w1');
  const running = turns.run(true, first.op);
  await settle();
  const queued = [turns.run(true, async () => log.push('w2')), turns.run(false, async () => log.push('a1')), turns.run(false, async () => log.push('a2'))];
  await settle();
  expect(log).toEqual(['w1+']);
  first.release();
  expect(await running).toBe('w1');
  await Promise.all(queued);
  expect(log).toEqual(['w1+', 'w1-', 'a1', 'a2', 'w2']);
});

it('never lets more API operations than its bound go before a waiting worker operation', async () => {
  const turns = createTurns(2);
  const log: string[] = [];
  const first = held(log, 'a0');
  const running = turns.run(false, first.op);
  await settle();
  const queued = [turns.run(true, async () => log.push('w')), ...[1, 2, 3, 4].map((i) => turns.run(false, async () => log.push(`a${i}`)))];
  first.release();
  await Promise.all([running, ...queued]);
  expect(log).toEqual(['a0+', 'a0-', 'a1', 'a2', 'w', 'a3', 'a4']);
});

it('gives the turn on when an operation fails', async () => {
  const turns = createTurns();
  await expect(turns.run(false, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  await expect(turns.run(true, async () => 'next')).resolves.toBe('next');
});

it('on the embedded database, a worker transaction waits for the API query queued behind the one in progress', async () => {
  const db = await openDatabase({ inMemory: true });
  try {
    await db.query('CREATE TABLE t (n int)');
    // Both clients connected first (Prisma connects on first use).
    await Promise.all([db.prisma.$queryRawUnsafe('SELECT 1'), db.background.prisma.$queryRawUnsafe('SELECT 1')]);
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let inside!: () => void;
    const started = new Promise<void>((r) => (inside = r));
    const api1 = db.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('INSERT INTO t VALUES (1)');
      inside();
      await gate;
      log.push('api1');
    });
    await started;
    const worker = db.background.prisma.$transaction(async (tx) => {
      await tx.$executeRawUnsafe('INSERT INTO t VALUES (2)');
      log.push('worker');
    });
    await settle();
    const api2 = db.read<{ n: number }>('SELECT count(*)::int AS n FROM t').then(([r]) => log.push(`api2 saw ${r.n}`));
    release();
    await Promise.all([api1, worker, api2]);
    expect(log).toEqual(['api1', 'api2 saw 1', 'worker']);
  } finally {
    await db.close();
  }
});
