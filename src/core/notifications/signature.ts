import { createHmac, timingSafeEqual } from 'node:crypto';

/** The reference system's header: base64 HMAC-SHA256 of the raw body, keyed with the signing key's UTF-8 bytes. */
export const SIGNATURE_HEADER = 'X-Signature';
/** Ours, for replay protection: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`. */
export const TIMESTAMPED_SIGNATURE_HEADER = 'X-Relayer-Signature';

const hmac = (key: string, data: string) => createHmac('sha256', Buffer.from(key, 'utf8')).update(data, 'utf8');

export function signBody(key: string, body: string): string {
  return hmac(key, body).digest('base64');
}

export function signTimestamped(key: string, body: string, unixSeconds: number): string {
  return `t=${unixSeconds},v1=${hmac(key, `${unixSeconds}.${body}`).digest('hex')}`;
}

/** Both signature headers of one attempt; none without a key. */
export function signatureHeaders(key: string | null, body: string, now = Date.now()): Record<string, string> {
  if (!key) return {};
  return {
    [SIGNATURE_HEADER]: signBody(key, body),
    [TIMESTAMPED_SIGNATURE_HEADER]: signTimestamped(key, body, Math.floor(now / 1000)),
  };
}

/**
 * What a receiver does with X-Relayer-Signature (see docs/webhooks.md): recompute the HMAC over
 * "<t>.<raw body>", compare in constant time, and refuse a timestamp outside the tolerance.
 */
export function verifyTimestamped(key: string, body: string, header: string, opts: { toleranceSeconds?: number; now?: number } = {}): boolean {
  const parts = new Map(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = parts.get('t');
  const v1 = parts.get('v1');
  if (!t || !/^\d{1,12}$/.test(t) || !v1 || !/^[0-9a-f]{64}$/.test(v1)) return false;
  const now = Math.floor((opts.now ?? Date.now()) / 1000);
  if (Math.abs(now - Number(t)) > (opts.toleranceSeconds ?? 300)) return false;
  return timingSafeEqual(Buffer.from(v1, 'hex'), hmac(key, `${t}.${body}`).digest());
}
