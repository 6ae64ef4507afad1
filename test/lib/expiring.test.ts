import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExpiringMap } from '../../src/lib/expiring.js';

afterEach(() => vi.useRealTimers());

describe('ExpiringMap', () => {
  it('forgets an entry ttl after it was set, or last read with touch', () => {
    vi.useFakeTimers({ now: 0 });
    const plain = new ExpiringMap<string, number>(1000);
    const touched = new ExpiringMap<string, number>(1000, { touch: true });
    plain.set('a', 1);
    touched.set('a', 1);
    vi.setSystemTime(900);
    expect(plain.get('a')).toBe(1);
    expect(touched.get('a')).toBe(1);
    vi.setSystemTime(1500);
    expect(plain.get('a')).toBeUndefined();
    expect(touched.get('a')).toBe(1);
  });

  it('sweeps expired entries as new keys come, so it does not grow without bound', () => {
    vi.useFakeTimers({ now: 0 });
    const m = new ExpiringMap<number, number>(100);
    for (let t = 0; t < 10_000; t += 10) {
      vi.setSystemTime(t);
      m.set(t, t);
    }
    expect(m.size).toBeLessThanOrEqual(21);
  });

  it('load keeps a promise for ttl, and not one that fails', async () => {
    vi.useFakeTimers({ now: 0 });
    const m = new ExpiringMap<string, Promise<number>>(1000);
    let loads = 0;
    const ok = () => Promise.resolve(++loads);
    const down = () => (loads++, Promise.reject(new Error('down')));
    expect(await m.load('a', ok)).toBe(1);
    vi.setSystemTime(900);
    expect(await m.load('a', ok)).toBe(1);
    vi.setSystemTime(1000);
    expect(await m.load('a', ok)).toBe(2);
    await expect(m.load('b', down)).rejects.toThrow('down');
    expect(await m.load('b', ok)).toBe(4);
  });
});
