import { describe, expect, it } from 'vitest';
import { backoffMs, decide, MIN_ATTEMPTS, retryAfterMs, TargetPauses } from '../../../src/core/notifications/delivery.js';

describe('retry rules', () => {
  const s = { retryBaseMs: 1000, retryMaxDelayMs: 600_000, retryWindowMs: 86_400_000 };
  const ok = (status: number, retryAfter: string | null = null) => ({ ok: true as const, status, retryAfter });
  const down = { ok: false as const, error: 'ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:9', blocked: false };

  it('2xx is delivered; 4xx other than 429 and 3xx are final', () => {
    expect(decide(ok(204), 1, 0, s)).toMatchObject({ status: 'delivered', statusCode: 204, error: null });
    expect(decide(ok(400), 1, 0, s)).toMatchObject({ status: 'failed', statusCode: 400, error: 'HTTP 400' });
    expect(decide(ok(410), 1, 0, s)).toMatchObject({ status: 'failed' });
    expect(decide(ok(302), 1, 0, s)).toMatchObject({ status: 'failed', error: 'HTTP 302 (redirects are not followed)' });
  });

  it('429, 5xx, timeouts and network errors are retried', () => {
    for (const r of [ok(429), ok(500), ok(503), down, { ok: false as const, error: 'no response within 10000 ms', blocked: false }]) {
      const o = decide(r, 1, 0, s);
      expect(o.status).toBe('pending');
      expect(o.retryInMs).toBeGreaterThanOrEqual(0);
      expect(o.retryInMs).toBeLessThan(1000);
    }
  });

  it('a refused target is final', () => {
    expect(decide({ ok: false, error: 'private', blocked: true }, 1, 0, s)).toMatchObject({ status: 'failed', error: 'private' });
  });

  it('gives up once older than the window, after at least MIN_ATTEMPTS tries', () => {
    expect(decide(down, MIN_ATTEMPTS - 1, s.retryWindowMs + 1, s).status).toBe('pending');
    expect(decide(down, MIN_ATTEMPTS, s.retryWindowMs - 1, s).status).toBe('pending');
    const o = decide(ok(503), MIN_ATTEMPTS, s.retryWindowMs, s);
    expect(o).toMatchObject({ status: 'failed', statusCode: 503 });
    expect(o.error).toBe(`HTTP 503 (gave up after ${MIN_ATTEMPTS} attempts)`);
  });

  it('waits at least what Retry-After asks, within the cap', () => {
    expect(decide(ok(429, '30'), 1, 0, s).retryInMs).toBe(30_000);
    expect(decide(ok(503, '99999'), 1, 0, s).retryInMs).toBe(600_000);
    expect(retryAfterMs(new Date(1_000_000 + 5_000).toUTCString(), 1_000_000)).toBe(5_000);
    expect(retryAfterMs('soon', 0)).toBeNull();
  });

  it('full jitter below an exponential ceiling, capped', () => {
    expect(backoffMs(1, s, () => 0.999)).toBe(999);
    expect(backoffMs(4, s, () => 0.999)).toBe(7992);
    expect(backoffMs(4, s, () => 0)).toBe(0);
    expect(backoffMs(30, s, () => 0.999)).toBe(599_400);
    expect(backoffMs(10_000, s, () => 0.5)).toBe(300_000);
  });
});

describe('per-target rest', () => {
  const retry = { status: 'pending' as const, retryInMs: 5 };
  it('rests a failing target, longer after each rest that ends in failure, counting one failure per rest', () => {
    const p = new TargetPauses({ retryBaseMs: 1_000, retryMaxDelayMs: 3_000 });
    p.record('a', retry, 0);
    p.record('a', retry, 10); // another attempt in flight failing in the same rest
    expect(p.resting(999)).toEqual(['a']);
    expect(p.resting(1_000)).toEqual([]);
    p.record('a', retry, 1_000);
    expect(p.resting(2_999)).toEqual(['a']);
    expect(p.resting(3_000)).toEqual([]);
    p.record('a', retry, 3_000);
    p.record('a', retry, 6_000);
    expect(p.resting(8_999)).toEqual(['a']); // capped at 3 s
    expect(p.resting(9_000)).toEqual([]);
  });
  it('an answer that is not retried (delivered or final) ends the rest; other targets are untouched', () => {
    const p = new TargetPauses({ retryBaseMs: 1_000, retryMaxDelayMs: 60_000 });
    p.record('a', retry, 0);
    p.record('b', { status: 'delivered' }, 0);
    expect(p.resting(1)).toEqual(['a']);
    p.record('a', { status: 'failed' }, 2);
    expect(p.resting(3)).toEqual([]);
  });
});
