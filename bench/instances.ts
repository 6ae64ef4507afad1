// End-to-end relay throughput with one and with two instances, in one run: each round gets a fresh
// anvil chain and a fresh PostgreSQL database, instances share it and Redis, and N sends spread
// over the instances are timed until every transaction is confirmed.
//
//   npx tsx bench/instances.ts [--count 600] [--concurrency 32]

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startAnvil } from '../src/chains/evm/anvil.js';
import { startInstance, type Instance } from '../test/support/instance.js';
import { createTestDatabase } from '../test/support/postgres.js';
import { REDIS_URL } from '../test/support/redis.js';
import { evmConfig } from '../test/support/service.js';

const { values: args } = parseArgs({ options: { count: { type: 'string', default: '600' }, concurrency: { type: 'string', default: '32' } } });
const N = Number(args.count);
const C = Number(args.concurrency);
const RECEIVER = '0x000000000000000000000000000000000000dEaD';

async function round(instanceCount: number): Promise<{ acceptedPerSec: number; confirmedPerSec: number }> {
  const [anvil, database, dir] = await Promise.all([startAnvil({ port: 0 }), createTestDatabase(), mkdtemp(path.join(tmpdir(), 'relayer-bench-'))]);
  const instances: Instance[] = [];
  const db = new pg.Client({ connectionString: database.url });
  try {
    const configPath = path.join(dir, 'config.json');
    await writeFile(configPath, JSON.stringify(evmConfig(anvil.url)));
    const env = {
      CONFIG_PATH: configPath,
      DATABASE_URL: database.url,
      REDIS_URL,
      DATA_DIR: dir,
      RATE_LIMIT_BURST_SIZE: '1000000',
      RATE_LIMIT_REQUESTS_PER_SECOND: '1000000',
    };
    instances.push(...(await Promise.all(Array.from({ length: instanceCount }, () => startInstance(env)))));
    await db.connect();
    // Warm-up: the first send initialises the nonce from the chain.
    await instances[0].request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 1 });

    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: C }, async (_, worker) => {
        for (let i = next++; i < N; i = next++) {
          const res = await instances[(i + worker) % instanceCount].request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 1 });
          if (res.status !== 200) throw new Error(`send answered ${res.status}: ${await res.text()}`);
          await res.arrayBuffer();
        }
      }),
    );
    const acceptedAt = performance.now();
    for (;;) {
      const { rows } = await db.query(`SELECT count(*)::int AS n FROM transactions WHERE status = 'confirmed'`);
      if (rows[0].n >= N + 1) break;
      if (performance.now() - started > 600_000) throw new Error(`only ${rows[0].n} of ${N + 1} confirmed after 10 minutes`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const confirmedAt = performance.now();
    return { acceptedPerSec: N / ((acceptedAt - started) / 1000), confirmedPerSec: N / ((confirmedAt - started) / 1000) };
  } finally {
    await db.end().catch(() => {});
    await Promise.all(instances.map((i) => i.stop()));
    await anvil.stop();
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

const one = await round(1);
const two = await round(2);
const fmt = (n: number) => n.toFixed(1).padStart(8);
console.log(`\nend-to-end relay, ${N} transactions, ${C} concurrent clients, PostgreSQL + Redis, anvil automine`);
console.log(`instances   accepted/s  confirmed/s`);
console.log(`1          ${fmt(one.acceptedPerSec)}    ${fmt(one.confirmedPerSec)}`);
console.log(`2          ${fmt(two.acceptedPerSec)}    ${fmt(two.confirmedPerSec)}`);
console.log(`two/one confirmed ratio: ${(two.confirmedPerSec / one.confirmedPerSec).toFixed(2)}`);
