import { describe, expect, it } from 'vitest';
import { startLoop } from '../../src/lib/loop.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('startLoop', () => {
  it('waits idleMs between idle ticks, read after each tick when it is a function; a wake runs it at once', async () => {
    let ticks = 0;
    let fast = true;
    const loop = startLoop(
      async () => {
        ticks++;
        return false;
      },
      { idleMs: () => (fast ? 10 : 10_000), onError: () => {} },
    );
    await sleep(300);
    const whileFast = ticks;
    expect(whileFast).toBeGreaterThan(5);
    fast = false;
    await sleep(300);
    // At most the tick already waiting on a short sleep, then the long one.
    expect(ticks - whileFast).toBeLessThanOrEqual(2);
    const before = ticks;
    loop.wake();
    await sleep(50);
    expect(ticks).toBe(before + 1);
    await loop.stop();
  });

  it('runs a busy tick again at once and hands errors to onError without stopping', async () => {
    let ticks = 0;
    const errors: unknown[] = [];
    const loop = startLoop(
      async () => {
        ticks++;
        if (ticks === 2) throw new Error('boom');
        return ticks < 5;
      },
      { idleMs: 10_000, onError: (e) => errors.push(e) },
    );
    await sleep(200);
    // Tick 1 was busy: tick 2 ran at once; it failed, so the loop slept instead of going on.
    expect(ticks).toBe(2);
    expect(errors).toHaveLength(1);
    // Still running: a wake runs tick 3, busy, and so 4 and 5 at once.
    loop.wake();
    await sleep(100);
    expect(ticks).toBe(5);
    await loop.stop();
  });
});
