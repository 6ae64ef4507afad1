import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The bearer token if it matches the API key (compared in constant time), else null. */
export function authenticate(header: string | null, apiKey: string): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  return timingSafeEqual(digest(match[1]), digest(apiKey)) ? match[1] : null;
}
