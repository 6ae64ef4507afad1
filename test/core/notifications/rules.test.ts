import { describe, expect, it } from 'vitest';
import { backoffMs, decide, MIN_ATTEMPTS, retryAfterMs, TargetPauses } from '../../../src/core/notifications/delivery.js';
import { signatureHeaders, signBody, signTimestamped, verifyTimestamped } from '../../../src/core/notifications/signature.js';
import { isPrivate } from '../../../src/core/notifications/url.js';

// RFC 4231, test case 2.
const RFC_KEY = 'Jefe';
const RFC_DATA = 'what do ya want for nothing?';
const RFC_MAC = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843';

describe('signatures', () => {
  it('X-Signature is the base64 HMAC-SHA256 of the raw body under the key', () => {
    expect(signBody(RFC_KEY, RFC_DATA)).toBe(Buffer.from(RFC_MAC, 'hex').toString('base64'));
  });

  it('X-Relayer-Signature is t and the hex HMAC-SHA256 of "<t>.<raw body>"', () => {
    // Expected value computed with `openssl dgst -sha256 -hmac Jefe` over "1700000000.what do ya want for nothing?".
    expect(signTimestamped(RFC_KEY, RFC_DATA, 1_700_000_000)).toBe('t=1700000000,v1=1cdd0650c8be1cb0974b1788d458b1e781206cfef59b85faafc582d2e182c57e');
  });

  it('both headers, or none without a key', () => {
    const h = signatureHeaders('k', '{"a":1}', 1_700_000_000_500);
    expect(Object.keys(h).sort()).toEqual(['X-Relayer-Signature', 'X-Signature']);
    expect(h['X-Relayer-Signature']).toMatch(/^t=1700000000,v1=[0-9a-f]{64}$/);
    expect(signatureHeaders(null, '{"a":1}')).toEqual({});
    expect(signatureHeaders('', '{"a":1}')).toEqual({});
  });

  it('a receiver accepts a fresh signature and refuses a tampered body, another key, an old timestamp', () => {
    const now = 1_700_000_000_000;
    const header = signTimestamped('key', '{"x":1}', now / 1000);
    expect(verifyTimestamped('key', '{"x":1}', header, { now })).toBe(true);
    expect(verifyTimestamped('key', '{"x":2}', header, { now })).toBe(false);
    expect(verifyTimestamped('other', '{"x":1}', header, { now })).toBe(false);
    expect(verifyTimestamped('key', '{"x":1}', header, { now: now + 301_000 })).toBe(false);
    expect(verifyTimestamped('key', '{"x":1}', header.replace(/t=\d+/, `t=${now / 1000 + 10}`), { now })).toBe(false);
    expect(verifyTimestamped('key', '{"x":1}', 'garbage', { now })).toBe(false);
  });
});

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

describe('private targets', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fd00::1',
    'fe80::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
  ])('%s is private', (ip) => {
    expect(isPrivate(ip)).toBe(true);
  });
  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('%s is public', (ip) => {
    expect(isPrivate(ip)).toBe(false);
  });
});
