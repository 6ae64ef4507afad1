// Loopback stand-ins of the price APIs gasless fees use: Jupiter's quote endpoint and Horizon's
// strict-send path finding. Each answers with what the test set (a rate, an error status, or no
// answer at all) and records the queries it was asked.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type PriceApi = {
  url: string;
  /** Query strings of the requests, in order. */
  queries: URLSearchParams[];
  /** What the next requests get: a handler returning [status, body], or 'hang' (never answers). */
  answer: ((path: string, q: URLSearchParams) => [number, unknown]) | 'hang';
  stop(): Promise<void>;
};

async function serve(initial: PriceApi['answer']): Promise<PriceApi> {
  const hanging = new Set<ServerResponse>();
  const api = { queries: [] as URLSearchParams[], answer: initial } as PriceApi;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'http://x');
    api.queries.push(u.searchParams);
    if (api.answer === 'hang') {
      hanging.add(res);
      return;
    }
    const [status, body] = api.answer(u.pathname, u.searchParams);
    res.writeHead(status, { 'content-type': 'application/json' }).end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  api.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  api.stop = () =>
    new Promise((ok) => {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      server.close(() => ok());
    });
  return api;
}

/** Jupiter: `perSol` whole tokens (of `decimals`) per SOL, quoted for the amount asked. */
export function startJupiter(perSol: number, decimals: number): Promise<PriceApi> {
  return serve((path, q) => {
    if (path !== '/swap/v1/quote') return [404, { error: 'not found' }];
    const inAmount = BigInt(q.get('amount') ?? '0');
    const out = (inAmount * BigInt(Math.round(perSol * 1e6)) * 10n ** BigInt(decimals)) / (10n ** 9n * 1_000_000n);
    return [
      200,
      {
        inputMint: q.get('inputMint'),
        outputMint: q.get('outputMint'),
        inAmount: inAmount.toString(),
        outAmount: out.toString(),
        swapMode: 'ExactIn',
        slippageBps: Number(q.get('slippageBps')),
        routePlan: [],
      },
    ];
  });
}

/** Horizon: `perXlm` units of the asset per XLM along the one path it knows. */
export function startHorizon(perXlm: number): Promise<PriceApi> {
  return serve((path, q) => {
    if (path !== '/paths/strict-send') return [404, { title: 'Resource Missing' }];
    const sent = Number(q.get('source_amount'));
    return [200, { _embedded: { records: [{ source_amount: q.get('source_amount'), destination_amount: (sent * perXlm).toFixed(7), path: [] }] } }];
  });
}
