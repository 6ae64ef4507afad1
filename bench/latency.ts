// One client, one request at a time, and memory over many relayed transactions. The service runs in
// this process (with its workers, against anvil mining a block a second); the client is a child
// process speaking HTTP over one keep-alive connection, so the two do not share an event loop.
//   latency  --requests sends, each followed by a read of the transaction it created (GET by id):
//            median, p99 and max of each, and the service's event-loop delay meanwhile
//            (perf_hooks.monitorEventLoopDelay), then the same delay under a flood of sends.
//   memory   resident memory after --small relayed transactions and after --large (all confirmed),
//            each after a garbage collection (run with node --expose-gc for that; bench/all.ts does).
//
//   node --expose-gc --import tsx bench/latency.ts [--db pglite|postgres] [--requests 1000] [--small 1000] [--large 0] [--json]

import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median, pct } from './stats.js';

const API_KEY = 'bench-api-key-0123456789abcdef-0123456789';
const RECEIVER = '0x000000000000000000000000000000000000dEaD';
const auth = { authorization: `Bearer ${API_KEY}` };

type Command = { kind: 'sequential'; port: number; n: number } | { kind: 'flood'; port: number; n: number; concurrency: number; from: number };

// ---- child: the client ------------------------------------------------------------------------

function call(agent: Agent, port: number, method: string, p: string, body?: unknown): Promise<{ status: number; text: string }> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, method, path: p, agent, headers: { ...auth, ...(payload ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function client(c: Command) {
  const agent = new Agent({ keepAlive: true, maxSockets: c.kind === 'flood' ? c.concurrency : 1 });
  const send = (value: number) => call(agent, c.port, 'POST', '/api/v1/relayers/bench/transactions', { to: RECEIVER, value });
  try {
    if (c.kind === 'sequential') {
      // The client's own event loop waits on sockets almost all the time: its delay is what the
      // machine's scheduler adds (other processes on the same cores), the floor for the service's.
      const loop = monitorEventLoopDelay({ resolution: 1 });
      loop.enable();
      const sends: number[] = [];
      const reads: number[] = [];
      for (let i = 0; i < c.n; i++) {
        let t0 = performance.now();
        const sent = await send(i + 1);
        sends.push(performance.now() - t0);
        if (sent.status !== 200) throw new Error(`send: ${sent.status} ${sent.text}`);
        const id = JSON.parse(sent.text).data.id;
        t0 = performance.now();
        const read = await call(agent, c.port, 'GET', `/api/v1/relayers/bench/transactions/${id}`);
        reads.push(performance.now() - t0);
        if (read.status !== 200) throw new Error(`read: ${read.status} ${read.text}`);
      }
      loop.disable();
      return { sends, reads, clientLoop: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 } };
    }
    let next = 0;
    let failed = 0;
    await Promise.all(
      Array.from({ length: c.concurrency }, async () => {
        while (next < c.n) {
          const res = await send(c.from + next++);
          if (res.status !== 200) failed++;
        }
      }),
    );
    return { failed };
  } finally {
    agent.destroy();
  }
}

if (process.argv[2] === '--client') {
  process.on('message', async (c: Command) => process.send!(await client(c)));
}

// ---- parent: the service ----------------------------------------------------------------------

export interface LatencyFigures {
  db: string;
  send: { p50: number; p99: number; max: number };
  read: { p50: number; p99: number; max: number };
  /** Event-loop delay (ms) while one client sends and reads, and under a flood of sends. */
  loopSequential: { p50: number; p99: number; max: number };
  loopFlood: { p50: number; p99: number; max: number };
  /** The same delay in the client process meanwhile, which only waits on sockets: the machine's share. */
  loopClient: { p50: number; p99: number; max: number };
  memory?: { small: number; large: number; rssSmallMb: number; rssLargeMb: number; heapSmallMb: number; heapLargeMb: number };
}

export async function benchLatency(opts: {
  db: 'pglite' | 'postgres';
  requests: number;
  small: number;
  large: number;
  postgresUrl?: string;
}): Promise<LatencyFigures> {
  const { parseEnv } = await import('../src/config/env.js');
  const { createLogger } = await import('../src/lib/log.js');
  const { startService } = await import('../src/service.js');
  const { createServerAdapter } = await import('@whatwg-node/server');
  const { startAnvil } = await import('../src/chains/evm/anvil.js');
  const { createBenchDatabase } = await import('./reads.js');

  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-bench-latency-'));
  const anvil = await startAnvil({ accounts: 2, blockTime: 1 });
  const database = opts.db === 'postgres' ? await createBenchDatabase(opts.postgresUrl) : undefined;
  const config = {
    relayers: [{ id: 'bench', name: 'bench', network: 'localnet', network_type: 'evm', signer_id: 'dev', policies: {} }],
    signers: [{ id: 'dev', type: 'local', config: { path: path.join(root, 'config/keys/devnet.json'), passphrase: { type: 'plain', value: 'devnet' } } }],
    notifications: [],
    networks: [
      {
        type: 'evm',
        network: 'localnet',
        chain_id: 31337,
        required_confirmations: 1,
        rpc_urls: [anvil.url],
        features: ['eip1559'],
        average_blocktime_ms: 1000,
      },
    ],
  };
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
  const env = parseEnv({
    API_KEY,
    CONFIG_PATH: path.join(dir, 'config.json'),
    DATA_DIR: dir,
    ...(database ? { DATABASE_URL: database.url } : {}),
    DEVNET: 'false',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_REQUESTS_PER_SECOND: '1000000',
    RATE_LIMIT_BURST_SIZE: '1000000',
  });
  const service = await startService(env, { log: createLogger('warn') });
  const server = createServer(createServerAdapter((request: Request) => service.app.fetch(request)));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const child = fork(fileURLToPath(import.meta.url), ['--client'], { stdio: 'inherit' });
  const run = <T>(c: Command) =>
    new Promise<T>((resolve) => {
      child.once('message', (m) => resolve(m as T));
      child.send(c);
    });
  let sent = 0;
  const confirmed = () => service.rt.db.prisma.transaction.count({ where: { status: 'confirmed' } });
  const settle = async () => {
    for (let last = -1, since = Date.now(); ; ) {
      const n = await confirmed();
      if (n >= sent) return;
      if (n !== last) [last, since] = [n, Date.now()];
      else if (Date.now() - since > 120_000) throw new Error(`no progress for two minutes: ${n} of ${sent} confirmed`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const flood = async (n: number) => {
    const { failed } = await run<{ failed: number }>({ kind: 'flood', port, n, concurrency: 32, from: sent + 1 });
    if (failed) throw new Error(`${failed} sends refused`);
    sent += n;
  };
  const loopStats = (h: ReturnType<typeof monitorEventLoopDelay>) => ({ p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6, max: h.max / 1e6 });
  try {
    // Warm-up (JIT, the relayer's nonce from the chain), then one client at a time.
    await run({ kind: 'sequential', port, n: 50 });
    sent += 50;
    const loop = monitorEventLoopDelay({ resolution: 1 });
    loop.enable();
    const { sends, reads, clientLoop } = await run<{ sends: number[]; reads: number[]; clientLoop: LatencyFigures['loopClient'] }>({
      kind: 'sequential',
      port,
      n: opts.requests,
    });
    loop.disable();
    sent += opts.requests;
    const loopSequential = loopStats(loop);
    const floodLoop = monitorEventLoopDelay({ resolution: 1 });
    floodLoop.enable();
    await flood(Math.max(2000, opts.small));
    await settle();
    floodLoop.disable();
    const figures: LatencyFigures = {
      db: opts.db,
      send: { p50: median(sends), p99: pct(sends, 99), max: Math.max(...sends) },
      read: { p50: median(reads), p99: pct(reads, 99), max: Math.max(...reads) },
      loopSequential,
      loopFlood: loopStats(floodLoop),
      loopClient: clientLoop,
    };
    // Printed now too: the memory phase below can take many minutes.
    printLatency(figures);
    if (opts.large > 0) {
      const memory = () => {
        (globalThis as { gc?: () => void }).gc?.();
        const m = process.memoryUsage();
        return { rss: m.rss / 2 ** 20, heap: m.heapUsed / 2 ** 20 };
      };
      const small = memory();
      const smallAt = sent;
      while (sent < opts.large) {
        await flood(Math.min(10_000, opts.large - sent));
        await settle();
      }
      const large = memory();
      figures.memory = { small: smallAt, large: sent, rssSmallMb: small.rss, rssLargeMb: large.rss, heapSmallMb: small.heap, heapLargeMb: large.heap };
    }
    return figures;
  } finally {
    child.kill();
    server.close();
    server.closeAllConnections();
    await service.stop();
    await anvil.stop();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

export function printLatency(f: LatencyFigures) {
  const t = (s: { p50: number; p99: number; max: number }) => `median ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, max ${s.max.toFixed(1)} ms`;
  console.log('');
  console.log(`one client, one request at a time (${f.db})`);
  console.log(`  send       ${t(f.send)}   (target: median <= 10, p99 <= 50)`);
  console.log(`  read by id ${t(f.read)}   (target: median <= 5)`);
  console.log(`  event-loop delay, one client:      ${t(f.loopSequential)}`);
  console.log(`  event-loop delay, flood of sends:  ${t(f.loopFlood)}`);
  console.log(`  event-loop delay of the idle client process meanwhile (the machine's share): ${t(f.loopClient)}`);
  if (f.memory) {
    const m = f.memory;
    console.log(
      `  memory: RSS ${m.rssSmallMb.toFixed(0)} MB after ${m.small} relayed, ${m.rssLargeMb.toFixed(0)} MB after ${m.large}: ${(m.rssLargeMb / m.rssSmallMb).toFixed(2)} (target <= 1.20); heap ${m.heapSmallMb.toFixed(0)} -> ${m.heapLargeMb.toFixed(0)} MB`,
    );
  }
}

if (process.argv[2] !== '--client' && import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      db: { type: 'string', default: 'pglite' },
      requests: { type: 'string', default: '1000' },
      small: { type: 'string', default: '1000' },
      large: { type: 'string', default: '0' },
      postgres: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const figures = await benchLatency({
    db: values.db as 'pglite' | 'postgres',
    requests: Number(values.requests),
    small: Number(values.small),
    large: Number(values.large),
    postgresUrl: values.postgres,
  });
  if (figures.memory) printLatency(figures);
  if (values.json) console.log(JSON.stringify({ bench: 'latency', figures }));
}
