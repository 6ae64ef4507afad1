// Deep pages under load (issue 78): 16 requests in flight at once (in-process, app.fetch, as
// bench/reads.ts), each read served as fast as it can be for a few seconds, one read after the
// other in one run: page 1, the middle page and the last page of a relayer's list (20 a page),
// through REST and GraphQL, whole and filtered by status (confirmed: a third of the rows). Median
// latency and throughput (each read measured `seconds` in all, in `rounds` slices taken in turn
// with the others), and each one's ratio to page 1's of the same surface and filter
// (targets: median at most 3 times page 1's and throughput at least a third of it; with a status
// filter at most 10 times).
//
//   npx tsx bench/pages-load.ts [--db pglite,postgres] [--sizes 100000] [--pglite-sizes 100000]
//                               [--connections 16] [--seconds 4] [--rounds 4] [--postgres <server url>] [--json]

import { parseArgs } from 'node:util';
import { API_KEY, RELAYER, startSeededService } from './reads.js';
import { median } from './stats.js';

const PER_PAGE = 20;

export interface LoadFigure {
  db: string;
  rows: number;
  surface: 'REST' | 'GraphQL';
  status: string | null;
  page: string;
  medianMs: number;
  perSecond: number;
}

export async function benchPagesLoad(opts: {
  db: 'pglite' | 'postgres';
  rows: number;
  connections: number;
  seconds: number;
  rounds: number;
  postgresUrl?: string;
}): Promise<LoadFigure[]> {
  const { Request } = await import('@whatwg-node/fetch');
  const { service, close } = await startSeededService(opts.db, opts.rows, opts.postgresUrl);
  try {
    const auth = { authorization: `Bearer ${API_KEY}` };
    const query =
      'query($r: ID!, $page: Int, $perPage: Int, $status: TransactionStatus) { relayerTransactions(relayerId: $r, page: $page, perPage: $perPage, status: $status) { items { id relayerId status createdAt hash nonce to value } pagination { currentPage perPage totalItems } } }';
    const read = (surface: 'REST' | 'GraphQL', status: string | null, page: number) => async (): Promise<string[]> => {
      if (surface === 'REST') {
        const res = await service.app.fetch(
          new Request(`http://bench/api/v1/relayers/${RELAYER}/transactions?page=${page}&per_page=${PER_PAGE}${status ? `&status=${status}` : ''}`, {
            headers: auth,
          }),
        );
        const text = await res.text();
        if (res.status !== 200) throw new Error(`REST page ${page}: ${res.status} ${text.slice(0, 300)}`);
        return (JSON.parse(text).data as { id: string }[]).map((t) => t.id);
      }
      const body = JSON.stringify({ query, variables: { r: RELAYER, page, perPage: PER_PAGE, status } });
      const res = await service.app.fetch(
        new Request('http://bench/graphql', { method: 'POST', body, headers: { ...auth, 'content-type': 'application/json' } }),
      );
      const text = await res.text();
      if (res.status !== 200 || text.includes('"errors"')) throw new Error(`GraphQL page ${page}: ${res.status} ${text.slice(0, 300)}`);
      return (JSON.parse(text).data.relayerTransactions.items as { id: string }[]).map((t) => t.id);
    };

    type Read = { surface: 'REST' | 'GraphQL'; status: string | null; page: string; f: () => Promise<string[]>; times: number[] };
    const reads: Read[] = [];
    for (const status of [null, 'confirmed']) {
      const [{ n }] = await service.rt.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM transactions WHERE relayer_id = $1${status ? ` AND status = '${status}'` : ''}`,
        [RELAYER],
      );
      const last = Math.ceil(n / PER_PAGE);
      const pages = [
        ['page 1', 1],
        [`middle (${Math.ceil(last / 2)})`, Math.ceil(last / 2)],
        [`last (${last})`, last],
      ] as const;
      for (const [name, page] of pages) {
        // The rows of the page are those of the plain offset, on both surfaces.
        const expected = (
          await service.rt.db.query<{ id: string }>(
            `SELECT id FROM transactions WHERE relayer_id = $1${status ? ` AND status = '${status}'` : ''} ORDER BY created_at DESC, id DESC OFFSET ${(page - 1) * PER_PAGE} LIMIT ${PER_PAGE}`,
            [RELAYER],
          )
        ).map((r) => r.id);
        for (const surface of ['REST', 'GraphQL'] as const) {
          const f = read(surface, status, page);
          if ((await f()).join() !== expected.join()) throw new Error(`${surface} ${name}: not the rows of the offset`);
          reads.push({ surface, status, page: name, f, times: [] });
        }
      }
    }
    // Rounds of a slice each, so the shared machine's changes of speed weigh on every read alike.
    const slice = opts.seconds / opts.rounds;
    for (let round = 0; round < opts.rounds; round++) {
      for (const r of reads) r.times.push(...(await load(r.f, opts.connections, slice)));
    }
    const figures = reads.map((r) => ({
      db: opts.db,
      rows: opts.rows,
      surface: r.surface,
      status: r.status,
      page: r.page,
      medianMs: median(r.times),
      perSecond: r.times.length / opts.seconds,
    }));
    return figures;
  } finally {
    await close();
  }
}

/** `connections` loops calling `f` back to back for `seconds` (after a quarter of that to warm up): each call's time. */
async function load(f: () => Promise<unknown>, connections: number, seconds: number) {
  const times: number[] = [];
  const warm = performance.now() + (seconds * 1000) / 4;
  const end = warm + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      for (;;) {
        const t0 = performance.now();
        if (t0 >= end) return;
        await f();
        const t1 = performance.now();
        if (t0 >= warm && t1 <= end) times.push(t1 - t0);
      }
    }),
  );
  return times;
}

export function printPagesLoad(figures: LoadFigure[], connections: number) {
  console.log('');
  console.log(
    `pages under load, ${connections} in flight, ${PER_PAGE} a page: median (ms), throughput (/s), and their ratios to page 1's (targets: latency <= 3, throughput >= 0.33; filtered <= 10)`,
  );
  console.log(
    'db'.padEnd(9),
    'rows'.padStart(8),
    'surface'.padEnd(8),
    'status'.padEnd(10),
    'page'.padEnd(16),
    'median'.padStart(8),
    '/s'.padStart(8),
    'lat. ratio'.padStart(11),
    'thr. ratio'.padStart(11),
  );
  for (const f of figures) {
    const first = figures.find((x) => x.db === f.db && x.rows === f.rows && x.surface === f.surface && x.status === f.status && x.page === 'page 1')!;
    console.log(
      f.db.padEnd(9),
      String(f.rows).padStart(8),
      f.surface.padEnd(8),
      (f.status ?? 'any').padEnd(10),
      f.page.padEnd(16),
      f.medianMs.toFixed(2).padStart(8),
      f.perSecond.toFixed(0).padStart(8),
      (f.medianMs / first.medianMs).toFixed(2).padStart(11),
      (f.perSecond / first.perSecond).toFixed(2).padStart(11),
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: {
      db: { type: 'string', default: 'pglite,postgres' },
      sizes: { type: 'string', default: '100000,1000000' },
      'pglite-sizes': { type: 'string', default: '100000' },
      connections: { type: 'string', default: '16' },
      seconds: { type: 'string', default: '4' },
      rounds: { type: 'string', default: '4' },
      postgres: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const figures: LoadFigure[] = [];
  const connections = Number(values.connections);
  for (const db of values.db.split(',') as ('pglite' | 'postgres')[]) {
    const sizes = (db === 'pglite' ? values['pglite-sizes'] : values.sizes).split(',').map(Number);
    for (const rows of sizes) {
      const done = await benchPagesLoad({
        db,
        rows,
        connections,
        seconds: Number(values.seconds),
        rounds: Number(values.rounds),
        postgresUrl: values.postgres,
      });
      printPagesLoad(done, connections);
      figures.push(...done);
    }
  }
  if (values.json) console.log(JSON.stringify({ bench: 'pages-load', figures }));
}
