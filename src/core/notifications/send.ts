import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { BLOCKED_TARGET, guardedLookup, isPrivate } from './url.js';

export type PostResult =
  | { ok: true; status: number; retryAfter: string | null }
  /** No HTTP answer: network error, timeout, or a target refused before connecting (`blocked`). */
  | { ok: false; error: string; blocked: boolean };

export interface Poster {
  post(url: string, body: string, headers: Record<string, string>): Promise<PostResult>;
  close(): void;
}

/**
 * POSTs webhook bodies: one deadline for the whole exchange, redirects never followed (a 3xx is just
 * a status), and with `blockPrivate` every address the target resolves to checked at connection time.
 */
export function createPoster(opts: { timeoutMs: number; blockPrivate: boolean }): Poster {
  const agents = { 'http:': new http.Agent({ keepAlive: true, maxSockets: 32 }), 'https:': new https.Agent({ keepAlive: true, maxSockets: 32 }) };

  function post(target: string, body: string, headers: Record<string, string>): Promise<PostResult> {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return Promise.resolve({ ok: false, error: 'invalid URL', blocked: true });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return Promise.resolve({ ok: false, error: 'not an http(s) URL', blocked: true });
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (opts.blockPrivate && isIP(host) && isPrivate(host)) {
      return Promise.resolve({ ok: false, error: `${host}: private, loopback and link-local targets are not allowed`, blocked: true });
    }
    const payload = Buffer.from(body, 'utf8');
    return new Promise((resolve) => {
      let settled = false;
      const settle = (r: PostResult) => {
        if (!settled) {
          settled = true;
          resolve(r);
        }
      };
      const req = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        agent: agents[url.protocol as 'http:' | 'https:'],
        headers: { 'content-type': 'application/json', 'content-length': String(payload.length), 'user-agent': 'relayer-webhooks/1', ...headers },
        ...(opts.blockPrivate ? { lookup: guardedLookup } : {}),
      });
      const timer = setTimeout(() => req.destroy(new Error(`no response within ${opts.timeoutMs} ms`)), opts.timeoutMs);
      req.on('response', (res) => {
        const retryAfter = res.headers['retry-after'];
        settle({ ok: true, status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : null });
        // The body is not needed; drain it (under the same deadline) so the connection can be reused.
        res.resume();
        res.on('close', () => clearTimeout(timer));
        res.on('error', () => {});
      });
      req.on('error', (e: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        settle({ ok: false, error: describe(e), blocked: e.code === BLOCKED_TARGET });
      });
      req.end(payload);
    });
  }

  return {
    post,
    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

function describe(e: NodeJS.ErrnoException): string {
  const text = e.code && !e.message.includes(e.code) ? `${e.code}: ${e.message}` : e.message;
  return text.slice(0, 300);
}
