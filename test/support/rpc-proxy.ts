import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the node answered (status and body), as the proxy passes it on. */
export type Answer = { status: number; text: string };
/**
 * Decides the answer to one POSTed body: `forward()` asks the node; null never answers (the
 * request hangs until the proxy closes).
 */
export type Handler = (body: string, forward: () => Promise<Answer>) => Promise<Answer | null>;

/** An HTTP proxy in front of a JSON-RPC node whose answers `handler` decides. */
export async function startProxy(target: string, handler: Handler) {
  const forward = (body: string) => async (): Promise<Answer> => {
    const r = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    return { status: r.status, text: await r.text() };
  };
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      try {
        const answer = await handler(body, forward(body));
        if (answer) res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.text);
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type Call = { jsonrpc: '2.0'; id: unknown; method: string; params?: unknown[] };
/** A local answer for a call (its result or error), or undefined to let the node answer. */
export type Intercept = (call: Call) => { result: unknown } | { error: { code: number; message: string } } | undefined;

/**
 * A JSON-RPC proxy in front of `target` (single calls and batches): each call goes to the node
 * unless `intercept` answers it here. `state.intercept` can be swapped at any time.
 */
export async function startRpcProxy(target: string, intercept: Intercept = () => undefined) {
  const state = { intercept };
  const proxy = await startProxy(target, async (body) => {
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
    return { status: 200, text: JSON.stringify(Array.isArray(parsed) ? answers : answers[0]) };
  });
  return { ...proxy, state };
}
