import { describe, expect, it } from 'vitest';
import { signatureHeaders, signBody, signTimestamped, verifyTimestamped } from '../../../src/core/notifications/signature.js';

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
