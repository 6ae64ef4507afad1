import { hash, timingSafeEqual } from 'node:crypto';

const digest = (s: string) => hash('sha256', s, 'buffer');

/** Checks bearer tokens against the API key (compared in constant time); the key's digest is taken once. */
export function authenticator(apiKey: string): (header: string | null) => string | null {
  const key = digest(apiKey);
  return (header) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match) return null;
    return timingSafeEqual(digest(match[1]), key) ? match[1] : null;
  };
}
