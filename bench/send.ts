// What the API surfaces add to a send, in CPU: the service runs in this process without its workers
// (nothing is signed or sent; the transactions stay pending), on PGlite or on a new PostgreSQL
// database, with anvil for the relayer's chain. Each round sends --count transfers, --concurrency
// at a time, in turn:
//   rest     through the app's Fetch handler (POST /api/v1/relayers/{id}/transactions: auth, rate
//            limit, the REST layer, the GraphQL operation, the response), without node:http;
//   service  the service's sendTransaction called directly (the same intake and insert).
// Prints the process's CPU a send of each (PGlite: both threads; PostgreSQL: not the server's) and
// their difference, what REST and GraphQL cost a send.
//
//   npx tsx bench/send.ts [--count 6000] [--concurrency 64] [--rounds 3] [--db pglite|postgres]

import { parseArgs } from 'node:util';
import { sendTransaction } from '../src/core/transactions/service.js';
import { startTestService } from '../test/support/service.js';
import { median, spread } from './stats.js';

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '6000' },
    concurrency: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '3' },
    db: { type: 'string', default: 'pglite' },
  },
});
const N = Number(args.count);
const RELAYER = 'evm-relayer';
const BODY = { to: '0x000000000000000000000000000000000000dEaD', value: 1, speed: 'fast' };

const svc = await startTestService({
  db: args.db === 'postgres' ? 'postgres' : 'pglite',
  anvil: true,
  workers: false,
  env: { RATE_LIMIT_REQUESTS_PER_SECOND: '1000000', RATE_LIMIT_BURST_SIZE: '1000000' },
});

/** CPU µs a send of `one`, N sends, --concurrency at a time. */
async function cpuPerSend(one: () => Promise<unknown>): Promise<number> {
  let left = N;
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: Number(args.concurrency) }, async () => {
      while (left-- > 0) await one();
    }),
  );
  const used = process.cpuUsage(before);
  return (used.user + used.system) / N;
}

const paths = {
  rest: async () => {
    const res = await svc.request('POST', `/api/v1/relayers/${RELAYER}/transactions`, BODY);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`send refused: ${res.status} ${text}`);
  },
  service: () => sendTransaction(svc.rt, RELAYER, { ...BODY }),
};

try {
  // One unmeasured round of each warms both up.
  for (const one of Object.values(paths)) await cpuPerSend(one);
  const figures = { rest: [] as number[], service: [] as number[] };
  for (let r = 0; r < Number(args.rounds); r++) {
    for (const [name, one] of Object.entries(paths)) figures[name as keyof typeof paths].push(await cpuPerSend(one));
    console.log(`  round ${r + 1}: rest ${figures.rest[r].toFixed(0)} µs, service ${figures.service[r].toFixed(0)} µs a send`);
  }
  const added = figures.rest.map((x, i) => x - figures.service[i]);
  console.log(
    `sends of ${N} transfers, ${args.concurrency} at a time, ${args.db}, CPU a send (median of ${args.rounds} rounds): ` +
      `rest ${median(figures.rest).toFixed(0)} µs (${spread(figures.rest, 0)}), service ${median(figures.service).toFixed(0)} µs (${spread(figures.service, 0)}); ` +
      `REST and GraphQL add ${median(added).toFixed(0)} µs`,
  );
} finally {
  await svc.stop();
}
