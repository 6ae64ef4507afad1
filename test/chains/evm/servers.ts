import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type TestServer = { url: string; hits: () => number; close(): Promise<void> };

/** Local HTTP server that counts requests; `handler` decides the answer. */
export async function testServer(handler: (body: string, res: ServerResponse, req: IncomingMessage) => void | Promise<void>): Promise<TestServer> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => void handler(body, res, req));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits: () => hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Counting pass-through proxy to a JSON-RPC node. */
export function countingProxy(target: string): Promise<TestServer> {
  return testServer(async (body, res) => {
    const upstream = await fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    res.writeHead(upstream.status, { 'content-type': 'application/json' });
    res.end(await upstream.text());
  });
}

/** Server that answers every request with a fixed JSON-RPC error. */
export function rpcErrorServer(code: number, message: string): Promise<TestServer> {
  return testServer((body, res) => {
    const id = JSON.parse(body).id;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }));
  });
}
