// POST /graphql on the service's direct path (src/api/graphql/post.ts) against yoga alone (the same
// app built with yogaOnly), on one runtime and one database: a relayer read by id with nested fields
// (its latest transactions and their total). Both apps listen on ports of their own; the client is
// a child process speaking HTTP over keep-alive connections, one request at a time and then with
// --concurrency requests in flight. Rounds alternate the apps (ABBA), so load from outside the bench
// weighs on both alike. Two figures: the client's time per request (median over every request) and
// the service process's CPU time per request (its threads, the embedded database's included; median
// over rounds), the steadier of the two on a shared machine.
//
//   npx tsx bench/graphql-post.ts [--db pglite|postgres] [--rounds 100] [--batch 40] [--concurrency 8] [--json]

import { fork } from 'node:child_process';
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { API_KEY, RELAYER, startSeededService } from './reads.js';
import { median, pct } from './stats.js';

const QUERY = `query Relayer($id: ID!) {
  relayer(id: $id) {
    id name network networkType paused address signerId policies systemDisabled createdAt
    transactions(perPage: 5) { items { id status hash nonce value to gasLimit maxFeePerGas createdAt } pagination { totalItems } }
  }
}`;
const BODY = JSON.stringify({ query: QUERY, variables: { id: RELAYER }, operationName: 'Relayer' });

type Batch = { port: number; batch: number; concurrency: number };

// ---- child: the client ------------------------------------------------------------------------

function post(agent: Agent, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/graphql',
        agent,
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', accept: 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () =>
          res.statusCode === 200 && !text.includes('"errors"') ? resolve(text) : reject(new Error(`${res.statusCode} ${text.slice(0, 300)}`)),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(BODY);
  });
}

const agents = new Map<string, Agent>();
const agentFor = (port: number, concurrency: number) => {
  const key = `${port}:${concurrency}`;
  let agent = agents.get(key);
  if (!agent) agents.set(key, (agent = new Agent({ keepAlive: true, maxSockets: concurrency })));
  return agent;
};

/** `batch` requests, `concurrency` in flight: the time of each (ms). */
async function batch(b: Batch): Promise<number[]> {
  const agent = agentFor(b.port, b.concurrency);
  const times: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: b.concurrency }, async () => {
      while (next++ < b.batch) {
        const t0 = performance.now();
        await post(agent, b.port);
        times.push(performance.now() - t0);
      }
    }),
  );
  return times;
}

if (process.argv[2] === '--client') {
  process.on('message', async (b: Batch) => process.send!(await batch(b)));
}

// ---- parent: the service ----------------------------------------------------------------------

/** Per request, on the direct path and through yoga alone, and the share of yoga's the direct path saves. */
type Pair = { direct: number; yoga: number; saving: number };

export interface PostFigure {
  concurrency: number;
  /** Median time of one request as the client sees it (ms). */
  wallMs: Pair;
  /** CPU time of the service's process (its threads included) per request (ms), median over rounds. */
  cpuMs: Pair;
  /** The CPU saving per round: its spread says how stable the figure is. */
  cpuSavingPerRound: number[];
}

const pair = (direct: number, yoga: number): Pair => ({ direct, yoga, saving: 1 - direct / yoga });

export async function benchGraphqlPost(opts: { db: 'pglite' | 'postgres'; rounds: number; batch: number; concurrency: number; postgresUrl?: string }) {
  const { createApp } = await import('../src/app.js');
  const { createServerAdapter } = await import('@whatwg-node/server');
  const { Request } = await import('@whatwg-node/fetch');

  const { service, close } = await startSeededService(opts.db, 1000, opts.postgresUrl);
  const apps = [service.app, createApp(service.rt, API_KEY, { yogaOnly: true })];
  const servers = apps.map((app) => createServer(createServerAdapter((request: Request) => app.fetch(request))));
  const child = fork(fileURLToPath(import.meta.url), ['--client'], { stdio: 'inherit' });
  try {
    const ports: number[] = [];
    for (const server of servers) {
      server.keepAliveTimeout = 65_000;
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      ports.push((server.address() as AddressInfo).port);
    }
    const run = (b: Batch) =>
      new Promise<number[]>((resolve) => {
        child.once('message', (m) => resolve(m as number[]));
        child.send(b);
      });
    /** One batch on app `v`: the client's times, and the service's CPU time per request (ms). */
    const measure = async (v: number, concurrency: number) => {
      const cpu0 = process.cpuUsage();
      const times = await run({ port: ports[v], batch: opts.batch, concurrency });
      const cpu = process.cpuUsage(cpu0);
      return { times, cpuMs: (cpu.user + cpu.system) / 1000 / opts.batch };
    };
    // Same answer both ways, or the comparison means nothing.
    const answers = await Promise.all(
      apps.map(async (app) => {
        const res = await app.fetch(
          new Request('http://bench/graphql', {
            method: 'POST',
            body: BODY,
            headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
          }),
        );
        return res.text();
      }),
    );
    if (answers[0] !== answers[1] || !answers[0].includes('"totalItems":1000')) throw new Error(`the apps answer differently: ${answers.join('\n')}`);
    const before = { ...service.app.graphqlAnswered };

    const figures: PostFigure[] = [];
    for (const concurrency of [1, opts.concurrency]) {
      for (const v of [0, 1]) await measure(v, concurrency); // warm-up: JIT, caches, connections
      const times: number[][] = [[], []];
      const cpu: number[][] = [[], []];
      const cpuSavingPerRound: number[] = [];
      for (let i = 0; i < opts.rounds; i++) {
        const round: number[] = [];
        for (const v of i % 2 ? [1, 0] : [0, 1]) {
          const m = await measure(v, concurrency);
          times[v].push(...m.times);
          cpu[v].push(m.cpuMs);
          round[v] = m.cpuMs;
        }
        cpuSavingPerRound.push(1 - round[0] / round[1]);
      }
      figures.push({
        concurrency,
        wallMs: pair(median(times[0]), median(times[1])),
        cpuMs: pair(median(cpu[0]), median(cpu[1])),
        cpuSavingPerRound,
      });
    }
    if (service.app.graphqlAnswered.yoga > before.yoga) throw new Error('the service app sent requests of the bench to yoga');
    return figures;
  } finally {
    child.kill();
    for (const server of servers) {
      server.close();
      server.closeAllConnections();
    }
    await close();
  }
}

export function printGraphqlPost(db: string, figures: PostFigure[]) {
  const pc = (x: number) => `${(100 * x).toFixed(1)}%`;
  const cols = (p: Pair) => [p.direct.toFixed(3).padStart(9), p.yoga.toFixed(3).padStart(9), pc(p.saving).padStart(8)];
  console.log('');
  console.log(`POST /graphql, a relayer by id with its latest transactions (${db}), ms per request: post.ts, yoga alone, saving`);
  console.log('in flight', '  client median (wall)       ', '  service CPU (median of rounds)', '  CPU saving per round (middle half)');
  for (const f of figures) {
    const quartiles = `${pc(pct(f.cpuSavingPerRound, 25))} to ${pc(pct(f.cpuSavingPerRound, 75))}`;
    console.log(String(f.concurrency).padStart(9), ...cols(f.wallMs), ' ', ...cols(f.cpuMs), `   ${quartiles}`);
  }
}

if (process.argv[2] !== '--client' && import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      db: { type: 'string', default: 'pglite' },
      rounds: { type: 'string', default: '100' },
      batch: { type: 'string', default: '40' },
      concurrency: { type: 'string', default: '8' },
      postgres: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const db = values.db as 'pglite' | 'postgres';
  const figures = await benchGraphqlPost({
    db,
    rounds: Number(values.rounds),
    batch: Number(values.batch),
    concurrency: Number(values.concurrency),
    postgresUrl: values.postgres,
  });
  printGraphqlPost(db, figures);
  if (values.json) console.log(JSON.stringify({ bench: 'graphql-post', db, figures }));
}
