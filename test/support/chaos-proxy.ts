// A JSON-RPC proxy between the service and a node that misbehaves on purpose: per request it may
// drop the connection, delay the answer, forward the request twice, forward it and lose the answer,
// hang, or answer garbage. Used by the soak (bench/soak.ts) and the fault tests (test/faults/).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A seeded PRNG (mulberry32): the same seed gives the same faults in the same order of requests. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Fault =
  /** Forwarded, answered as the node answered. */
  | 'pass'
  /** Never forwarded: the connection is reset. */
  | 'drop'
  /** Forwarded; the answer comes late. */
  | 'delay'
  /** Forwarded twice (the node sees the request twice); the first answer is returned. */
  | 'duplicate'
  /** Forwarded and answered by the node, but the connection is reset before the answer is returned. */
  | 'lose'
  /** Accepted and never answered (the connection stays open until the proxy closes). */
  | 'hang'
  /** Not forwarded; answered with something that is not a valid JSON-RPC answer. */
  | 'garbage';

/** Probabilities of each fault per request (the rest pass); `lose` applies twice as often to broadcasts. */
export type FaultMix = Partial<Record<Exclude<Fault, 'pass'>, number>>;

export type ChaosMode =
  | { kind: 'clean' }
  | { kind: 'chaos'; mix: FaultMix; maxDelayMs?: number }
  | { kind: 'hang' }
  /** Every answer garbage; `wrongResults`: only well-formed answers whose results have the wrong shape. */
  | { kind: 'garbage'; wrongResults?: boolean }
  | { kind: 'down' };

export interface ChaosProxy {
  url: string;
  /** Requests seen per fault applied (a JSON-RPC batch counts once). */
  counts: Record<Fault, number>;
  /** Broadcasts (eth_sendRawTransaction calls, batched or not) per fault applied. */
  broadcasts: Record<Fault, number>;
  setMode(mode: ChaosMode): void;
  /** Ends every hanging request and stops listening. */
  close(): Promise<void>;
}

const noCounts = (): Record<Fault, number> => ({ pass: 0, drop: 0, delay: 0, duplicate: 0, lose: 0, hang: 0, garbage: 0 });

const WRONG_RESULT = 7;

/** Answers that look like a node's but are not a usable JSON-RPC answer to the request. */
function garbageFor(body: string, pick: number): { status: number; type: string; text: string } {
  let id: unknown = 1;
  let ids: unknown[] = [1];
  let batch = false;
  try {
    const msg = JSON.parse(body);
    batch = Array.isArray(msg);
    id = batch ? msg[0]?.id : msg.id;
    ids = batch ? msg.map((m: { id?: unknown }) => m.id) : [msg.id];
  } catch {
    // answer garbage to garbage
  }
  // The right ids, with results of the wrong shape for any method.
  const wrongShape = ids.map((i) => ({ jsonrpc: '2.0', id: i, result: { unexpected: ['shape'] } }));
  const kinds = [
    { status: 200, type: 'text/html', text: '<html><body><h1>502 Bad Gateway</h1></body></html>' },
    { status: 200, type: 'application/json', text: '{"jsonrpc":"2.0","id":' },
    { status: 200, type: 'application/json', text: JSON.stringify({ hello: 'world' }) },
    { status: 200, type: 'application/json', text: JSON.stringify(batch ? { jsonrpc: '2.0', id, result: '0x1' } : [{ jsonrpc: '2.0', id, result: '0x1' }]) },
    {
      status: 200,
      type: 'application/json',
      text: JSON.stringify(batch ? [{ jsonrpc: '2.0', id: 'wrong', result: '0x1' }] : { jsonrpc: '2.0', id: 'wrong', result: '0x1' }),
    },
    { status: 200, type: 'application/json', text: JSON.stringify({ jsonrpc: '2.0', id, error: 'not an object' }) },
    { status: 200, type: 'application/json', text: JSON.stringify(batch ? [] : { jsonrpc: '2.0', id }) },
    { status: 200, type: 'application/json', text: JSON.stringify(batch ? wrongShape : wrongShape[0]) },
  ];
  return kinds[pick % kinds.length];
}

/**
 * Starts a proxy to `target` on 127.0.0.1. Clean until told otherwise. Faults are drawn from
 * `random` (seed it to replay a run).
 */
export async function startChaosProxy(target: string, random: () => number = Math.random): Promise<ChaosProxy> {
  let mode: ChaosMode = { kind: 'clean' };
  const counts = noCounts();
  const broadcasts = noCounts();
  const hanging = new Set<http.ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  let closed = false;
  let garbageTurn = 0;

  const forward = async (body: string) => {
    const res = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(30_000) });
    return { status: res.status, text: await res.text() };
  };
  const later = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });

  function choose(isBroadcast: boolean): Fault {
    switch (mode.kind) {
      case 'clean':
        return 'pass';
      case 'hang':
        return 'hang';
      case 'garbage':
        return 'garbage';
      case 'down':
        return 'drop';
    }
    let r = random();
    const mix = mode.mix;
    for (const fault of ['drop', 'delay', 'duplicate', 'lose', 'hang', 'garbage'] as const) {
      const p = (mix[fault] ?? 0) * (fault === 'lose' && isBroadcast ? 2 : 1);
      if (r < p) return fault;
      r -= p;
    }
    return 'pass';
  }

  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const isBroadcast = body.includes('eth_sendRawTransaction');
      const fault = choose(isBroadcast);
      counts[fault]++;
      if (isBroadcast) broadcasts[fault] += Math.max(1, body.split('eth_sendRawTransaction').length - 1);
      const reset = () => req.socket.destroy();
      try {
        switch (fault) {
          case 'drop':
            return reset();
          case 'hang':
            hanging.add(res);
            res.once('close', () => hanging.delete(res));
            return;
          case 'garbage': {
            const g = garbageFor(body, mode.kind === 'garbage' && mode.wrongResults ? WRONG_RESULT : garbageTurn++);
            res.writeHead(g.status, { 'content-type': g.type }).end(g.text);
            return;
          }
          case 'lose':
            await forward(body);
            return reset();
          case 'duplicate': {
            const [first] = await Promise.all([forward(body), forward(body).catch(() => undefined)]);
            res.writeHead(first.status, { 'content-type': 'application/json' }).end(first.text);
            return;
          }
          case 'delay': {
            const max = mode.kind === 'chaos' ? (mode.maxDelayMs ?? 1500) : 0;
            const wait = Math.floor(random() * max);
            // Half the time the request reaches the node late, half the time its answer comes back late.
            const before = random() < 0.5;
            if (before) await later(wait);
            const answer = await forward(body);
            if (!before) await later(wait);
            if (closed) return reset();
            res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.text);
            return;
          }
          default: {
            const answer = await forward(body);
            res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.text);
          }
        }
      } catch {
        // The node is not there (or the proxy is closing): the caller sees a reset connection.
        reset();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    broadcasts,
    setMode(next) {
      mode = next;
      if (next.kind !== 'hang') {
        // Requests held by a previous hang are released as resets, as a stuck node finally dropping them.
        for (const res of hanging) res.socket?.destroy();
        hanging.clear();
      }
    },
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      for (const res of hanging) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
