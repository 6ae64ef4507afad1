import http from 'node:http';
import https from 'node:https';

// node:http rather than fetch: on the machine of 29 November fetch (undici) cost 0.82-1.74 ms of CPU
// a call against 0.26-0.63 ms (bench/rpc.ts), and a relayer makes a few calls a transaction.
// Idle connections close after 4 s (as fetch's do): a request sent on one the server has just
// closed is lost, and servers rarely close theirs sooner.
const IDLE_MS = 4000;
const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_MS }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_MS }),
};

/** Larger answers are refused, not buffered: no node answers a JSON-RPC call with more. */
export const MAX_ANSWER_BYTES = 64 * 2 ** 20;

/** No whole answer before the deadline. */
export class PostTimeoutError extends Error {
  override name = 'PostTimeoutError';
}

/** An HTTP answer: `ok` for a 2xx status. */
export type Answer = { ok: boolean; status: number; text: string };

/**
 * POSTs a JSON body and reads the whole answer as text, within one deadline for the whole exchange.
 * Redirects are not followed (a 3xx is just a status). Network errors reject as Node reports them.
 */
export function postJson(url: URL, body: string, timeoutMs: number): Promise<Answer> {
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent) return Promise.reject(new Error(`not an http(s) URL: ${url.protocol}`));
  const payload = Buffer.from(body, 'utf8');
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      settle();
    };
    const fail = (e: Error) => finish(() => reject(e));
    const abort = (e: Error) => {
      fail(e);
      req.destroy();
    };
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': String(payload.length) },
    });
    const timer = setTimeout(() => abort(new PostTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', fail);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_ANSWER_BYTES) abort(new Error(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
        else chunks.push(chunk);
      });
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        finish(() => resolve({ ok: status >= 200 && status < 300, status, text: Buffer.concat(chunks).toString('utf8') }));
      });
      res.on('error', fail);
      res.on('close', () => fail(new Error('connection closed before the whole answer')));
    });
    req.end(payload);
  });
}
