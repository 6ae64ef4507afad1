import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
}

type Answer = number | { status: number; headers?: Record<string, string> } | 'hang';

/**
 * A real HTTP webhook receiver on loopback that records every request and answers with `answer`
 * (200 unless told otherwise). down() closes the port; up() listens on the same port again.
 */
export async function startReceiver(opts: { down?: boolean } = {}) {
  const received: Received[] = [];
  let answer: (r: Received, index: number) => Answer = () => 200;
  let server: Server | undefined;
  let port = 0;

  async function up() {
    const s = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const r: Received = { headers: req.headers, raw, body: safeParse(raw) };
        const a = answer(r, received.length);
        received.push(r);
        if (a === 'hang') return;
        const { status, headers } = typeof a === 'number' ? { status: a, headers: {} } : a;
        res.writeHead(status, headers).end(status < 300 ? 'ok' : 'no');
      });
    });
    await new Promise<void>((resolve, reject) => s.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
    port = (s.address() as AddressInfo).port;
    server = s;
  }

  async function down() {
    const s = server;
    server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  await up();
  if (opts.down) await down();

  return {
    received,
    get url() {
      return `http://127.0.0.1:${port}/hook`;
    },
    get port() {
      return port;
    },
    answer(fn: (r: Received, index: number) => Answer) {
      answer = fn;
    },
    up,
    down,
    close: down,
  };
}

function safeParse(raw: string) {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

/** Polls `check` until it returns a truthy value (returned) or the time runs out. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 15_000): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v as Exclude<T, false | null | undefined | 0 | ''>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
