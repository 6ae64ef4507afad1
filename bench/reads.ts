// The read path against the database's own speed: one client, one request at a time, in-process
// (app.fetch with the Request class the HTTP adapter builds, no sockets), each read beside the same
// read done by hand-written SQL on the same database handle (the PGlite instance or the pg pool
// Prisma uses) and serialised with JSON.stringify: the floor. Reads: a relayer's first page, a deep page (offset 890), a page
// filtered by status, and one transaction by id, through REST and GraphQL (same fields as REST,
// totalItems included). Rounds interleave the targets, and the sizes (each on a database of its own),
// so load from outside and the machine's changes of speed hit them alike. A
// list's total is read, on every path, from the counters the database keeps (transaction_counts);
// the seed's plain INSERT ... SELECT is counted by their triggers like any other write.
//
//   npx tsx bench/reads.ts [--db pglite,postgres] [--sizes 1000,100000] [--iterations 300] [--postgres <server url>] [--json]

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { median, pct } from './stats.js';

export interface ReadFigure {
  db: string;
  rows: number;
  read: string;
  floorMs: number;
  restMs: number;
  gqlMs: number;
  /** floor / surface median: the share of the database's own speed the surface keeps. */
  restRatio: number;
  gqlRatio: number;
  restP99: number;
}

export const API_KEY = 'bench-api-key-0123456789abcdef-0123456789';
export const RELAYER = 'bench-relayer';
const PER_PAGE = 10;
const DEEP_PAGE = 90;

type Read = { read: string; floor: () => Promise<string>; rest: () => Promise<string>; gql: () => Promise<string> };

/**
 * The reads at each size, measured in alternation: every round runs each size's reads in turn, so a
 * machine that speeds up or slows down during the run weighs on every size alike (measured one after
 * the other, two sizes once differed by 1.22 where the same reads later differed by 1.00).
 */
export async function benchReads(opts: { db: 'pglite' | 'postgres'; sizes: number[]; iterations: number; postgresUrl?: string }): Promise<ReadFigure[]> {
  const stores: { rows: number; reads: Read[]; stop: () => Promise<void> }[] = [];
  try {
    for (const rows of opts.sizes) stores.push(await openStore(opts.db, rows, opts.postgresUrl));
    const times = stores.map((s) => s.reads.map(() => ({ floor: [] as number[], rest: [] as number[], gql: [] as number[] })));
    const warmup = Math.min(50, opts.iterations);
    for (let i = 0; i < warmup + opts.iterations; i++) {
      for (const [n, store] of stores.entries()) {
        for (const [k, r] of store.reads.entries()) {
          for (const kind of ['floor', 'rest', 'gql'] as const) {
            const t0 = performance.now();
            await r[kind]();
            if (i >= warmup) times[n][k][kind].push(performance.now() - t0);
          }
        }
      }
    }
    return stores.flatMap((store, n) =>
      store.reads.map((r, k) => {
        const t = times[n][k];
        const floorMs = median(t.floor);
        const restMs = median(t.rest);
        const gqlMs = median(t.gql);
        return {
          db: opts.db,
          rows: store.rows,
          read: r.read,
          floorMs,
          restMs,
          gqlMs,
          restRatio: floorMs / restMs,
          gqlRatio: floorMs / gqlMs,
          restP99: pct(t.rest, 99),
        };
      }),
    );
  } finally {
    for (const store of stores) await store.stop();
  }
}

/**
 * A service without workers (its chain is not there) on a database of its own, seeded with `rows`
 * transactions of RELAYER; `close` stops it and removes the database.
 */
export async function startSeededService(kind: 'pglite' | 'postgres', rows: number, postgresUrl?: string) {
  const { parseEnv } = await import('../src/config/env.js');
  const { createLogger } = await import('../src/lib/log.js');
  const { startService } = await import('../src/service.js');

  const root = fileURLToPath(new URL('..', import.meta.url));
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-bench-reads-'));
  let dropDb: (() => Promise<void>) | undefined;
  let databaseUrl: string | undefined;
  if (kind === 'postgres') {
    const created = await createBenchDatabase(postgresUrl);
    databaseUrl = created.url;
    dropDb = created.drop;
  }
  const config = {
    relayers: [
      { id: RELAYER, name: 'Bench', network: 'localnet', network_type: 'evm', signer_id: 'dev', policies: {} },
      { id: 'other-relayer', name: 'Other', network: 'localnet', network_type: 'evm', signer_id: 'dev', policies: {} },
    ],
    signers: [{ id: 'dev', type: 'local', config: { path: path.join(root, 'config/keys/devnet.json'), passphrase: { type: 'plain', value: 'devnet' } } }],
    notifications: [],
    networks: [{ type: 'evm', network: 'localnet', chain_id: 31337, rpc_urls: ['http://127.0.0.1:1'], features: ['eip1559'], required_confirmations: 1 }],
  };
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
  const env = parseEnv({
    API_KEY,
    CONFIG_PATH: path.join(dir, 'config.json'),
    DATA_DIR: dir,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    DEVNET: 'false',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_REQUESTS_PER_SECOND: '1000000000',
    RATE_LIMIT_BURST_SIZE: '1000000000',
  });
  const cleanUp = async () => {
    await dropDb?.();
    await rm(dir, { recursive: true, force: true });
  };
  const service = await startService(env, { log: createLogger('silent'), workers: false }).catch(async (e) => {
    await cleanUp();
    throw e;
  });
  const close = async () => {
    await service.stop();
    await cleanUp();
  };
  try {
    const db = service.rt.db;
    await seed(db.query.bind(db), rows);
  } catch (e) {
    await close();
    throw e;
  }
  return { service, close };
}

/** A service on a database of its own seeded with `rows` transactions, and the reads to time on it. */
async function openStore(kind: 'pglite' | 'postgres', rows: number, postgresUrl?: string) {
  const { print } = await import('graphql');
  const { RestListTransactionsDocument, RestGetTransactionDocument } = await import('../src/generated/graphql.js');
  // The Request class node's HTTP adapter (@whatwg-node/server, src/main.ts) hands the app.
  const { Request } = await import('@whatwg-node/fetch');

  const { service, close } = await startSeededService(kind, rows, postgresUrl);
  try {
    const db = service.rt.db;
    const [{ id: someId }] = await db.query<{ id: string }>(
      `SELECT id FROM transactions WHERE relayer_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1`,
      [RELAYER, Math.floor(rows / 2)],
    );

    const auth = { authorization: `Bearer ${API_KEY}` };
    const rest = (p: string) => async () => {
      const res = await service.app.fetch(new Request(`http://bench${p}`, { headers: auth }));
      if (res.status !== 200) throw new Error(`${p}: ${res.status} ${await res.text()}`);
      return res.text();
    };
    const gql = (query: string, variables: Record<string, unknown>) => {
      const body = JSON.stringify({ query, variables });
      return async () => {
        const res = await service.app.fetch(
          new Request('http://bench/graphql', { method: 'POST', body, headers: { ...auth, 'content-type': 'application/json' } }),
        );
        const text = await res.text();
        if (res.status !== 200 || text.includes('"errors"')) throw new Error(`graphql: ${res.status} ${text.slice(0, 300)}`);
        return text;
      };
    };
    const listSql = (status: string | null, page: number) => async () => {
      const where = status ? 'relayer_id = $1 AND status = $2::"TransactionStatus"' : 'relayer_id = $1';
      const params = status ? [RELAYER, status] : [RELAYER];
      const rows = await db.query(
        `SELECT * FROM transactions WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${PER_PAGE} OFFSET ${(page - 1) * PER_PAGE}`,
        params,
      );
      const [{ n }] = await db.query<{ n: number }>(`SELECT coalesce(sum(n), 0)::int AS n FROM transaction_counts WHERE ${where}`, params);
      return JSON.stringify({ data: rows, pagination: { current_page: page, per_page: PER_PAGE, total_items: n } }, big);
    };
    const byIdSql = async () => JSON.stringify({ data: (await db.query('SELECT * FROM transactions WHERE id = $1', [someId]))[0] }, big);
    const listQuery = print(RestListTransactionsDocument);
    const reads: Read[] = [
      {
        read: 'list, first page',
        floor: listSql(null, 1),
        rest: rest(`/api/v1/relayers/${RELAYER}/transactions?per_page=${PER_PAGE}`),
        gql: gql(listQuery, { relayerId: RELAYER, perPage: PER_PAGE }),
      },
      {
        read: `list, page ${DEEP_PAGE}`,
        floor: listSql(null, DEEP_PAGE),
        rest: rest(`/api/v1/relayers/${RELAYER}/transactions?page=${DEEP_PAGE}&per_page=${PER_PAGE}`),
        gql: gql(listQuery, { relayerId: RELAYER, page: DEEP_PAGE, perPage: PER_PAGE }),
      },
      {
        read: 'list, status=confirmed',
        floor: listSql('confirmed', 1),
        rest: rest(`/api/v1/relayers/${RELAYER}/transactions?status=confirmed&per_page=${PER_PAGE}`),
        gql: gql(listQuery, { relayerId: RELAYER, perPage: PER_PAGE, status: 'confirmed' }),
      },
      {
        read: 'by id',
        floor: byIdSql,
        rest: rest(`/api/v1/relayers/${RELAYER}/transactions/${someId}`),
        gql: gql(print(RestGetTransactionDocument), { relayerId: RELAYER, id: someId }),
      },
    ];

    // Same rows on every path, or the comparison means nothing.
    for (const r of reads) {
      const f = JSON.parse(await r.floor());
      const s = JSON.parse(await r.rest());
      const ids = (x: { data: unknown }) => (Array.isArray(x.data) ? x.data.map((t: { id: string }) => t.id) : [(x.data as { id: string }).id]).join();
      if (ids(f) !== ids(s) || f.pagination?.total_items !== s.pagination?.total_items) throw new Error(`${r.read}: REST and SQL disagree`);
    }

    return { rows, reads, stop: close };
  } catch (e) {
    await close();
    throw e;
  }
}

const big = (_: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

/** n transactions of the bench relayer (a third confirmed) and n/10 of another, by plain SQL. */
async function seed(query: (sql: string, params?: unknown[]) => Promise<unknown[]>, n: number) {
  const insert = (relayer: string, count: number, from = 0) =>
    query(
      `INSERT INTO transactions (id, relayer_id, network_type, status, created_at, updated_at, sent_at, hash, hashes, "from", "to", value, data,
         nonce, gas_limit, max_fee_per_gas, max_priority_fee_per_gas, speed, valid_until, request, due_at)
       SELECT gen_random_uuid()::text, $1, 'evm', (CASE WHEN i % 3 = 0 THEN 'confirmed' ELSE 'submitted' END)::"TransactionStatus",
         timestamp '2030-01-01' + i * interval '1 second', now(), timestamp '2030-01-01' + i * interval '1 second' + interval '0.5 second',
         '0x' || lpad(to_hex(i), 64, '0'), ARRAY['0x' || lpad(to_hex(i), 64, '0')], '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
         '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', (1000000000000000000 + i)::text, '0x', i, 21000, '30000000000', '1500000000',
         'fast', timestamp '2030-01-01 08:00', '{}'::jsonb, NULL
       FROM generate_series($3::int, $3::int + $2::int - 1) AS i`,
      [relayer, count, from],
    );
  // A checkpoint after each chunk: PGlite has no checkpointer, and past about 530 MB of WAL it
  // waits a minute for one at every further segment (src/db/maintenance.ts).
  for (let done = 0; done < n; done += 100_000) {
    await insert(RELAYER, Math.min(100_000, n - done), done);
    await query('CHECKPOINT');
  }
  await insert('other-relayer', Math.max(1, Math.floor(n / 10)));
  await query('VACUUM ANALYZE transactions');
}

/** A fresh database on the PostgreSQL server (by default the one of this machine); drop() removes it. */
export async function createBenchDatabase(adminUrl = 'postgres://postgres@127.0.0.1:5432/postgres') {
  const pg = (await import('pg')).default;
  const name = `relayer_bench_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export function printReads(figures: ReadFigure[]) {
  console.log('');
  console.log('reads, one client, medians (ms); ratio = SQL floor / surface (target >= 0.70)');
  console.log(
    'db'.padEnd(9),
    'rows'.padStart(9),
    'read'.padEnd(24),
    'SQL'.padStart(7),
    'REST'.padStart(7),
    'GraphQL'.padStart(8),
    'REST ratio'.padStart(11),
    'GQL ratio'.padStart(10),
    'REST p99'.padStart(9),
  );
  for (const f of figures) {
    console.log(
      f.db.padEnd(9),
      String(f.rows).padStart(9),
      f.read.padEnd(24),
      f.floorMs.toFixed(2).padStart(7),
      f.restMs.toFixed(2).padStart(7),
      f.gqlMs.toFixed(2).padStart(8),
      f.restRatio.toFixed(2).padStart(11),
      f.gqlRatio.toFixed(2).padStart(10),
      f.restP99.toFixed(2).padStart(9),
    );
  }
  // Growth: the median at the largest size over the median at the smallest, per read and surface.
  const dbs = [...new Set(figures.map((f) => f.db))];
  for (const db of dbs) {
    const of = figures.filter((f) => f.db === db);
    const sizes = [...new Set(of.map((f) => f.rows))].sort((a, b) => a - b);
    if (sizes.length < 2) continue;
    for (const big of sizes.slice(1)) {
      for (const read of [...new Set(of.map((f) => f.read))]) {
        const a = of.find((f) => f.rows === sizes[0] && f.read === read)!;
        const b = of.find((f) => f.rows === big && f.read === read)!;
        console.log(
          `${db} ${read}: median at ${big} / at ${sizes[0]} rows: REST ${(b.restMs / a.restMs).toFixed(2)}, GraphQL ${(b.gqlMs / a.gqlMs).toFixed(2)}, SQL ${(b.floorMs / a.floorMs).toFixed(2)} (target <= 1.20)`,
        );
      }
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      db: { type: 'string', default: 'pglite,postgres' },
      sizes: { type: 'string', default: '1000,100000' },
      iterations: { type: 'string', default: '300' },
      postgres: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const figures: ReadFigure[] = [];
  for (const db of values.db.split(',') as ('pglite' | 'postgres')[]) {
    figures.push(
      ...(await benchReads({ db, sizes: values.sizes.split(',').map(Number), iterations: Number(values.iterations), postgresUrl: values.postgres })),
    );
  }
  printReads(figures);
  if (values.json) console.log(JSON.stringify({ bench: 'reads', figures }));
}
