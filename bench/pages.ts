// Deep pages of a relayer's transactions against its first page: one client, one request at a time,
// in-process (app.fetch, as bench/reads.ts), 20 a page. Reads: page 1, the middle page and the last
// page (page 5,000 of 100,000 rows, 50,000 of 1,000,000), through REST and GraphQL (page/perPage),
// and, where the schema has them, GraphQL cursor pages (first/after) taken at the same depths.
// Rounds interleave the reads, so the machine's changes of speed weigh on them alike.
//
//   npx tsx bench/pages.ts [--db pglite,postgres] [--sizes 100000,1000000] [--pglite-sizes 100000]
//                          [--iterations 50] [--postgres <server url>] [--json]

import { parseArgs } from 'node:util';
import { API_KEY, RELAYER, startSeededService } from './reads.js';
import { median } from './stats.js';

const PER_PAGE = 20;

export interface PageFigure {
  db: string;
  rows: number;
  read: string;
  restMs: number | null;
  gqlMs: number;
}

type Read = { read: string; rest?: () => Promise<unknown>; gql: () => Promise<unknown> };

export async function benchPages(opts: { db: 'pglite' | 'postgres'; rows: number; iterations: number; postgresUrl?: string }): Promise<PageFigure[]> {
  const { Request } = await import('@whatwg-node/fetch');
  const { service, close } = await startSeededService(opts.db, opts.rows, opts.postgresUrl);
  try {
    const auth = { authorization: `Bearer ${API_KEY}` };
    const rest = (p: string) => async () => {
      const res = await service.app.fetch(new Request(`http://bench${p}`, { headers: auth }));
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${p}: ${res.status} ${text.slice(0, 300)}`);
      return JSON.parse(text);
    };
    const gql = (query: string, variables: Record<string, unknown>) => async () => {
      const body = JSON.stringify({ query, variables });
      const res = await service.app.fetch(
        new Request('http://bench/graphql', { method: 'POST', body, headers: { ...auth, 'content-type': 'application/json' } }),
      );
      const text = await res.text();
      if (res.status !== 200 || text.includes('"errors"')) throw new Error(`graphql: ${res.status} ${text.slice(0, 300)}`);
      return JSON.parse(text).data.relayerTransactions;
    };
    const fields =
      'id relayerId networkType status statusReason createdAt sentAt confirmedAt validUntil hash from to value data nonce gasLimit gasPrice maxFeePerGas maxPriorityFeePerGas speed signature networkData';
    const byPage = `query($relayerId: ID!, $page: Int, $perPage: Int) { relayerTransactions(relayerId: $relayerId, page: $page, perPage: $perPage) { items { ${fields} } pagination { currentPage perPage totalItems } } }`;
    const byCursor = `query($relayerId: ID!, $first: Int, $after: String) { relayerTransactions(relayerId: $relayerId, first: $first, after: $after) { items { ${fields} } pageInfo { hasNextPage endCursor } } }`;

    const last = Math.ceil(opts.rows / PER_PAGE);
    const middle = Math.ceil(last / 2);
    const reads: Read[] = [];
    for (const page of [1, middle, last]) {
      reads.push({
        read: `page ${page}`,
        rest: rest(`/api/v1/relayers/${RELAYER}/transactions?page=${page}&per_page=${PER_PAGE}`),
        gql: gql(byPage, { relayerId: RELAYER, page, perPage: PER_PAGE }),
      });
    }
    // Cursor pages at the same depths: the cursor is the end of the page before (from a page read).
    const cursorAt = async (page: number): Promise<string | null> => {
      if (page === 1) return null;
      const q = `query($relayerId: ID!, $page: Int, $perPage: Int) { relayerTransactions(relayerId: $relayerId, page: $page, perPage: $perPage) { pageInfo { endCursor } } }`;
      return ((await gql(q, { relayerId: RELAYER, page: page - 1, perPage: PER_PAGE })()) as { pageInfo: { endCursor: string } }).pageInfo.endCursor;
    };
    const hasCursors = await cursorAt(2).then(
      () => true,
      () => false,
    );
    if (hasCursors) {
      for (const page of [1, middle, last]) {
        const after = await cursorAt(page);
        reads.push({ read: `cursor at page ${page}`, gql: gql(byCursor, { relayerId: RELAYER, first: PER_PAGE, after }) });
      }
    }

    // Each deep read answers the rows of its page: checked once against REST.
    for (const r of reads.filter((x) => x.rest)) {
      const a = (await r.rest!()) as { data: { id: string }[] };
      const b = (await r.gql()) as { items: { id: string }[] };
      if (a.data.map((t) => t.id).join() !== b.items.map((t) => t.id).join() || a.data.length === 0) throw new Error(`${r.read}: REST and GraphQL disagree`);
    }

    const times = reads.map(() => ({ rest: [] as number[], gql: [] as number[] }));
    const warmup = Math.min(5, opts.iterations);
    for (let i = 0; i < warmup + opts.iterations; i++) {
      for (const [k, r] of reads.entries()) {
        for (const kind of ['rest', 'gql'] as const) {
          const f = r[kind];
          if (!f) continue;
          const t0 = performance.now();
          await f();
          if (i >= warmup) times[k][kind].push(performance.now() - t0);
        }
      }
    }
    return reads.map((r, k) => ({
      db: opts.db,
      rows: opts.rows,
      read: r.read,
      restMs: r.rest ? median(times[k].rest) : null,
      gqlMs: median(times[k].gql),
    }));
  } finally {
    await close();
  }
}

export function printPages(figures: PageFigure[]) {
  console.log('');
  console.log(`deep pages, ${PER_PAGE} a page, one client, medians (ms); ratio = median / page 1's median (target <= 10)`);
  console.log(
    'db'.padEnd(9),
    'rows'.padStart(9),
    'read'.padEnd(22),
    'REST'.padStart(8),
    'GraphQL'.padStart(8),
    'REST ratio'.padStart(11),
    'GQL ratio'.padStart(10),
  );
  for (const f of figures) {
    const first = figures.find((x) => x.db === f.db && x.rows === f.rows && x.read === 'page 1')!;
    console.log(
      f.db.padEnd(9),
      String(f.rows).padStart(9),
      f.read.padEnd(22),
      (f.restMs === null ? '' : f.restMs.toFixed(2)).padStart(8),
      f.gqlMs.toFixed(2).padStart(8),
      (f.restMs === null ? '' : (f.restMs / first.restMs!).toFixed(2)).padStart(11),
      (f.gqlMs / first.gqlMs).toFixed(2).padStart(10),
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      db: { type: 'string', default: 'pglite,postgres' },
      sizes: { type: 'string', default: '100000,1000000' },
      'pglite-sizes': { type: 'string' },
      iterations: { type: 'string', default: '50' },
      postgres: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const figures: PageFigure[] = [];
  for (const db of values.db.split(',') as ('pglite' | 'postgres')[]) {
    const sizes = (db === 'pglite' && values['pglite-sizes'] ? values['pglite-sizes'] : values.sizes).split(',').map(Number);
    for (const rows of sizes) {
      const done = await benchPages({ db, rows, iterations: Number(values.iterations), postgresUrl: values.postgres });
      // Each size's table as soon as it is measured: a large one takes long to seed.
      printPages(done);
      figures.push(...done);
    }
  }
  if (values.json) console.log(JSON.stringify({ bench: 'pages', figures }));
}
