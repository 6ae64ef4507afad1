import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => createHash('sha256').update(s).digest();
/** The digest of the last API key compared against (one per runtime, and runtimes rarely differ). */
let keyDigest: { key: string; digest: Buffer } | undefined;
const digestOfKey = (key: string) => (keyDigest?.key === key ? keyDigest : (keyDigest = { key, digest: digest(key) })).digest;

/** The bearer token if it matches the API key (compared in constant time), else null. */
export function authenticate(header: string | null, apiKey: string): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  return timingSafeEqual(digest(match[1]), digestOfKey(apiKey)) ? match[1] : null;
}
