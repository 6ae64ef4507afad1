// REST adapter overhead: requests per second and latency of
//   GET /api/v1/relayers/{id}/transactions (REST),
//   the equivalent GraphQL query (same operation text, POST /graphql),
//   GET /v1/health (the floor: no database, no GraphQL),
// in one run, on the same data, over node:http with keep-alive. The service runs in this process
// (PGlite); the load comes from a child process so the two do not share an event loop.
//
//   npx tsx bench/rest.ts [--seconds 4] [--rounds 3] [--concurrency 16] [--rows 1000]

import { fork } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface Target {
  name: string;
  method: string;
  path: string;
  body?: string;
  headers: Record<string, string>;
}

interface LoadResult {
  count: number;
  errors: number;
  seconds: number;
  latencies: number[];
}

// ---- child: the load generator -------------------------------------------------------------

async function load(port: number, target: Target, seconds: number, concurrency: number): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const latencies: number[] = [];
  let errors = 0;
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, method: target.method, path: target.path, headers: target.headers, agent }, (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(target.body);
    });
  const started = performance.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        const status = await once().catch(() => 0);
        latencies.push(performance.now() - t0);
        if (status !== 200) errors += 1;
      }
    }),
  );
  agent.destroy();
  return { count: latencies.length, errors, seconds: (performance.now() - started) / 1000, latencies };
}

if (process.argv[2] === '--load') {
  process.on('message', async (m: { port: number; target: Target; seconds: number; concurrency: number }) => {
    process.send!(await load(m.port, m.target, m.seconds, m.concurrency));
  });
} else {
  await main();
}

// ---- parent: the service, the data, the report --------------------------------------------

async function main() {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: '4' },
      rounds: { type: 'string', default: '3' },
      concurrency: { type: 'string', default: '16' },
      rows: { type: 'string', default: '1000' },
    },
  });
  const seconds = Number(values.seconds);
  const rounds = Number(values.rounds);
  const concurrency = Number(values.concurrency);
  const rows = Number(values.rows);

  const { print } = await import('graphql');
  const { createServerAdapter } = await import('@whatwg-node/server');
  const { parseEnv } = await import('../src/config/env.js');
  const { createLogger } = await import('../src/lib/log.js');
  const { startService } = await import('../src/service.js');
  const { RestListTransactionsDocument } = await import('../src/generated/graphql.js');

  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-bench-'));
  const apiKey = 'bench-api-key-0123456789abcdef-0123456789';
  const config = {
    relayers: [{ id: 'bench-relayer', name: 'Bench', network: 'localnet', network_type: 'evm', signer_id: 'dev', policies: {} }],
    signers: [{ id: 'dev', type: 'local', config: { path: path.join(root, 'config/keys/devnet.json'), passphrase: { type: 'plain', value: 'devnet' } } }],
    notifications: [],
    networks: [{ type: 'evm', network: 'localnet', chain_id: 31337, rpc_urls: ['http://127.0.0.1:1'], features: ['eip1559'], required_confirmations: 1 }],
  };
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
  const env = parseEnv({
    API_KEY: apiKey,
    CONFIG_PATH: path.join(dir, 'config.json'),
    DATA_DIR: dir,
    DEVNET: 'false',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS_PER_SECOND: '1000000000',
    RATE_LIMIT_BURST_SIZE: '1000000000',
  });
  const service = await startService(env, { log: createLogger('silent'), workers: false });
  const relayer = await service.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: 'bench-relayer' } });
  const base = Date.UTC(2030, 0, 1);
  await service.rt.db.prisma.transaction.createMany({
    data: Array.from({ length: rows }, (_, i) => ({
      relayerId: relayer.id,
      networkType: 'evm' as const,
      status: i % 3 === 0 ? ('confirmed' as const) : ('submitted' as const),
      from: relayer.address,
      to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      value: String(10n ** 18n + BigInt(i)),
      data: '0x',
      nonce: BigInt(i),
      gasLimit: 21000n,
      maxFeePerGas: '30000000000',
      maxPriorityFeePerGas: '1500000000',
      speed: 'fast' as const,
      hash: `0x${i.toString(16).padStart(64, '0')}`,
      hashes: [`0x${i.toString(16).padStart(64, '0')}`],
      request: {},
      createdAt: new Date(base + i * 1000),
      sentAt: new Date(base + i * 1000 + 500),
      validUntil: new Date(base + 8 * 3600_000),
      dueAt: null,
    })),
  });

  const server = createServer(createServerAdapter((request: Request) => service.app.fetch(request)));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const auth = { authorization: `Bearer ${apiKey}` };
  const targets: Target[] = [
    {
      name: 'REST    GET /api/v1/relayers/{id}/transactions',
      method: 'GET',
      path: `/api/v1/relayers/${relayer.id}/transactions?page=1&per_page=10`,
      headers: auth,
    },
    {
      name: 'GraphQL relayerTransactions (same fields)',
      method: 'POST',
      path: '/graphql',
      body: JSON.stringify({ query: print(RestListTransactionsDocument), variables: { relayerId: relayer.id, page: 1, perPage: 10 } }),
      headers: { ...auth, 'content-type': 'application/json' },
    },
    { name: 'GET /v1/health', method: 'GET', path: '/v1/health', headers: {} },
  ];

  // Same data on both surfaces, or the comparison means nothing.
  const fetchJson = async (t: Target) => (await fetch(`http://127.0.0.1:${port}${t.path}`, { method: t.method, body: t.body, headers: t.headers })).json();
  const rest = await fetchJson(targets[0]);
  const gql = await fetchJson(targets[1]);
  if (rest.data.length !== 10 || gql.data.relayerTransactions.items.length !== 10 || rest.pagination.total_items !== rows) {
    throw new Error('REST and GraphQL do not return the expected page');
  }

  const child = fork(fileURLToPath(import.meta.url), ['--load'], { stdio: 'inherit' });
  const run = (target: Target, secs: number) =>
    new Promise<LoadResult>((resolve) => {
      child.once('message', (m) => resolve(m as LoadResult));
      child.send({ port, target, seconds: secs, concurrency });
    });

  console.log(
    `node ${process.version}, ${(await import('node:os')).cpus().length} CPUs, PGlite, ${rows} transaction rows, ${concurrency} connections, ${rounds} rounds x ${seconds}s per endpoint`,
  );
  for (const t of targets) await run(t, 1.5); // warm-up: JIT, caches, connection pool

  const totals = targets.map(() => ({ count: 0, errors: 0, seconds: 0, latencies: [] as number[] }));
  for (let r = 0; r < rounds; r++) {
    for (const [i, t] of targets.entries()) {
      const res = await run(t, seconds);
      totals[i].count += res.count;
      totals[i].errors += res.errors;
      totals[i].seconds += res.seconds;
      for (const l of res.latencies) totals[i].latencies.push(l);
    }
  }
  child.kill();

  const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
  const stats = totals.map((t) => {
    const sorted = t.latencies.sort((a, b) => a - b);
    return { rps: t.count / t.seconds, p50: pct(sorted, 50), p99: pct(sorted, 99), errors: t.errors };
  });
  console.log('');
  console.log('endpoint'.padEnd(50), 'req/s'.padStart(9), 'p50 ms'.padStart(8), 'p99 ms'.padStart(8), 'errors'.padStart(7));
  for (const [i, t] of targets.entries()) {
    const s = stats[i];
    console.log(t.name.padEnd(50), s.rps.toFixed(0).padStart(9), s.p50.toFixed(2).padStart(8), s.p99.toFixed(2).padStart(8), String(s.errors).padStart(7));
  }
  const [r, g, h] = stats;
  console.log('');
  console.log(`REST / GraphQL throughput: ${(r.rps / g.rps).toFixed(3)}  (target >= 0.90)`);
  console.log(`REST / GraphQL p99:        ${(r.p99 / g.p99).toFixed(3)}`);
  console.log(`REST / health throughput:  ${(r.rps / h.rps).toFixed(3)}`);

  server.close();
  server.closeAllConnections();
  await service.stop();
  await rm(dir, { recursive: true, force: true });
}
