import { createHash, hash, timingSafeEqual } from 'node:crypto';
import { adminCaller, type Caller, findCaller } from '../core/access/keys.js';
import type { Runtime } from '../core/runtime.js';

const digest = (s: string) => hash('sha256', s, 'buffer');

/**
 * Who a bearer token is: the administrator (API_KEY, compared in constant time; its digest is taken
 * once) or a stored key (looked up by digest), else null.
 */
export function authenticator(rt: Runtime, apiKey: string): (header: string | null) => Caller | null | Promise<Caller | null> {
  const key = digest(apiKey);
  // The administrator's rate-limit bucket is named by a digest of its key, as before keys existed.
  const admin = adminCaller(createHash('sha256').update(apiKey).digest('base64url').slice(0, 22));
  return (header) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    if (!match) return null;
    if (timingSafeEqual(digest(match[1]), key)) return admin;
    return findCaller(rt, match[1]);
  };
}
