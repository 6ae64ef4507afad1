// The HTTP side of the JSON-RPC stand-ins: one POSTed call in, its result or error out.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** An error the stand-in answers with, as a JSON-RPC error object. */
export class RpcFault extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export type JsonRpcServer = {
  url: string;
  port: number;
  /** Every method called, in order. */
  calls: string[];
  close(): Promise<void>;
};

/**
 * Serves `dispatch` (method, raw params) on 127.0.0.1. A thrown RpcFault becomes the error reply;
 * any other thrown error is turned into one by `fault`.
 */
export async function startJsonRpcServer(dispatch: (method: string, params: unknown) => unknown, fault: (err: Error) => RpcFault): Promise<JsonRpcServer> {
  const calls: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let id: unknown = null;
      let reply: object;
      try {
        const msg = JSON.parse(body);
        id = msg.id ?? null;
        calls.push(String(msg.method));
        reply = { jsonrpc: '2.0', id, result: dispatch(String(msg.method), msg.params) };
      } catch (err) {
        const f = err instanceof RpcFault ? err : fault(err as Error);
        reply = { jsonrpc: '2.0', id, error: { code: f.code, message: f.message, ...(f.data ? { data: f.data } : {}) } };
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
