import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Call = { jsonrpc: '2.0'; id: unknown; method: string; params?: unknown[] };
/** A local answer for a call (its result or error), or undefined to let the node answer. */
export type Intercept = (call: Call) => { result: unknown } | { error: { code: number; message: string } } | undefined;

/**
 * A JSON-RPC proxy in front of `target` (single calls and batches): each call goes to the node
 * unless `intercept` answers it here. `intercept` can be swapped at any time.
 */
export async function startRpcProxy(target: string, intercept: Intercept = () => undefined) {
  const state = { intercept };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      try {
        const parsed = JSON.parse(body) as Call | Call[];
        const calls = Array.isArray(parsed) ? parsed : [parsed];
        const local = calls.map((c) => state.intercept(c));
        const forward = calls.filter((_, i) => local[i] === undefined);
        const remote: { id: unknown }[] = forward.length
          ? await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(forward) }).then(
              (r) => r.json() as Promise<{ id: unknown }[]>,
            )
          : [];
        const answers = calls.map((c, i) => (local[i] ? { jsonrpc: '2.0', id: c.id, ...local[i] } : remote.find((a) => a.id === c.id)));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    state,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
