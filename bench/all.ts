// Every speed figure of issues #17 and #56 in one run, side by side with its target. Each bench runs as its
// own process, one after the other (they would load each other otherwise), and prints its own
// table; this script prints the summary at the end.
//
//   npx tsx bench/all.ts [--db pglite,postgres] [--sizes 1000,100000] [--pg-sizes 1000,100000,1000000]
//                        [--evm-blocks 20] [--evm-rounds 3] [--requests 1000] [--memory 100000]
//                        [--page-sizes 100000,1000000] [--pg-page-sizes 100000,1000000]
//                        [--only reads,pages,pages-load,evm,many,gasless,latency,webhooks,plugins,start]
//                        [--load-sizes 100000] [--pg-load-sizes 100000,1000000] [--postgres <server url>]
//
// `npm run bench` runs it with the defaults (PGlite and PostgreSQL at 127.0.0.1:5432).

import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LatencyFigures } from './latency.js';
import type { PageFigure } from './pages.js';
import type { LoadFigure } from './pages-load.js';
import { createBenchDatabase, type ReadFigure } from './reads.js';
import { spread } from './stats.js';
import { startFlags } from './flags.js';

const { values: a } = parseArgs({
  options: {
    db: { type: 'string', default: 'pglite,postgres' },
    sizes: { type: 'string', default: '1000,100000' },
    'pg-sizes': { type: 'string', default: '1000,100000,1000000' },
    'page-sizes': { type: 'string', default: '100000,1000000' },
    'pg-page-sizes': { type: 'string', default: '100000,1000000' },
    'evm-blocks': { type: 'string', default: '20' },
    'evm-rounds': { type: 'string', default: '3' },
    requests: { type: 'string', default: '1000' },
    memory: { type: 'string', default: '100000' },
    iterations: { type: 'string', default: '300' },
    only: { type: 'string', default: 'reads,pages,pages-load,evm,many,gasless,latency,webhooks,plugins,start' },
    'load-sizes': { type: 'string', default: '100000' },
    'pg-load-sizes': { type: 'string', default: '100000,1000000' },
    postgres: { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
  },
});
const dbs = a.db.split(',') as ('pglite' | 'postgres')[];
const only = new Set(a.only.split(','));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Runs a bench script, passing its output through, and returns the JSON lines it printed (none if it failed). */
async function bench(script: string, args: string[], nodeArgs: string[] = []): Promise<Record<string, unknown>[]> {
  try {
    return await run(script, args, nodeArgs);
  } catch (e) {
    console.log(`${script} failed: ${(e as Error).message}`);
    summary.push(`${script} ${args.join(' ')}: failed, no figures`);
    return [{}];
  }
}

function run(script: string, args: string[], nodeArgs: string[] = []): Promise<Record<string, unknown>[]> {
  return new Promise((resolve, reject) => {
    // Each bench runs the service in its process or its child's: with the flags `npm start` gives it.
    const child = spawn(process.execPath, [...startFlags(), ...nodeArgs, '--import', 'tsx', script, ...args, '--json'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c: string) => {
      out += c;
      for (const line of c.split('\n')) if (line && !line.startsWith('{')) process.stdout.write(`${line}\n`);
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${script} exited with ${code}`));
      resolve(
        out
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l)),
      );
    });
  });
}

const load = () =>
  loadavg()
    .map((x) => x.toFixed(1))
    .join(' ');
console.log(`node ${process.version}, ${cpus().length} CPUs, load average at start ${load()}`);
const summary: string[] = [];
const row = (what: string, figure: string, target: string, met: boolean | null) =>
  summary.push(`${what.padEnd(58)} ${figure.padEnd(34)} ${target.padEnd(12)} ${met === null ? '' : met ? 'met' : 'NOT met'}`);

if (only.has('reads')) {
  const figures: ReadFigure[] = [];
  for (const db of dbs) {
    const sizes = db === 'postgres' ? a['pg-sizes'] : a.sizes;
    const [r] = await bench('bench/reads.ts', ['--db', db, '--sizes', sizes, '--iterations', a.iterations, '--postgres', a.postgres]);
    figures.push(...((r.figures as ReadFigure[] | undefined) ?? []));
  }
  for (const f of figures) {
    const worst = Math.min(f.restRatio, f.gqlRatio);
    row(`reads ${f.db} ${f.rows} rows, ${f.read}: SQL floor / REST, GraphQL`, `${f.restRatio.toFixed(2)}, ${f.gqlRatio.toFixed(2)}`, '>= 0.70', worst >= 0.7);
  }
  for (const db of dbs) {
    const of = figures.filter((f) => f.db === db);
    const sizes = [...new Set(of.map((f) => f.rows))].sort((x, y) => x - y);
    for (const big of sizes.slice(1)) {
      for (const read of ['list, first page', 'list, page 90']) {
        const s = of.find((f) => f.rows === sizes[0] && f.read === read);
        const b = of.find((f) => f.rows === big && f.read === read);
        if (!s || !b) continue;
        const rest = b.restMs / s.restMs;
        const gql = b.gqlMs / s.gqlMs;
        row(
          `reads ${db} ${read}: median at ${big} / at ${sizes[0]}, REST, GraphQL`,
          `${rest.toFixed(2)}, ${gql.toFixed(2)}`,
          '<= 1.20',
          Math.max(rest, gql) <= 1.2,
        );
      }
    }
  }
}

if (only.has('pages')) {
  for (const db of dbs) {
    const sizes = db === 'postgres' ? a['pg-page-sizes'] : a['page-sizes'];
    const [r] = await bench('bench/pages.ts', ['--db', db, '--sizes', sizes, '--postgres', a.postgres]);
    const figures = (r.figures as PageFigure[] | undefined) ?? [];
    for (const f of figures.filter((x) => x.read !== 'page 1' && x.restMs !== null)) {
      const first = figures.find((x) => x.rows === f.rows && x.read === 'page 1')!;
      const rest = f.restMs! / first.restMs!;
      const gql = f.gqlMs / first.gqlMs;
      // The target is the last page's; the middle one is shown beside it.
      const last = f.read === `page ${Math.ceil(f.rows / 20)}`;
      row(
        `pages ${db} ${f.rows} rows, ${f.read} / page 1, REST, GraphQL`,
        `${rest.toFixed(2)}, ${gql.toFixed(2)}`,
        last ? '<= 10' : '',
        last ? Math.max(rest, gql) <= 10 : null,
      );
    }
    for (const f of figures.filter((x) => x.read.startsWith('cursor') && x.read !== 'cursor at page 1')) {
      const first = figures.find((x) => x.rows === f.rows && x.read === 'cursor at page 1')!;
      row(`pages ${db} ${f.rows} rows, GraphQL ${f.read} / at page 1`, (f.gqlMs / first.gqlMs).toFixed(2), '', null);
    }
  }
}

if (only.has('pages-load')) {
  for (const db of dbs) {
    const sizes = db === 'postgres' ? a['pg-load-sizes'] : a['load-sizes'];
    const [r] = await bench('bench/pages-load.ts', ['--db', db, '--sizes', sizes, '--pglite-sizes', sizes, '--postgres', a.postgres]);
    const figures = (r.figures as LoadFigure[] | undefined) ?? [];
    for (const f of figures.filter((x) => x.page !== 'page 1')) {
      const first = figures.find((x) => x.rows === f.rows && x.surface === f.surface && x.status === f.status && x.page === 'page 1')!;
      const [lat, thr] = [f.medianMs / first.medianMs, f.perSecond / first.perSecond];
      const most = f.status ? 10 : 3;
      row(
        `pages at 16 at once ${db} ${f.rows}, ${f.surface} ${f.status ?? 'any'} ${f.page.split(' ')[0]} / page 1`,
        `latency ${lat.toFixed(2)}, throughput ${thr.toFixed(2)}`,
        `<= ${most}, >= ${(1 / most).toFixed(2)}`,
        lat <= most && thr >= 1 / most,
      );
    }
  }
}

if (only.has('evm')) {
  for (const db of dbs) {
    const database = db === 'postgres' ? await createBenchDatabase(a.postgres) : undefined;
    try {
      const [r] = await bench('bench/evm.ts', ['--blocks', a['evm-blocks'], '--rounds', a['evm-rounds'], ...(database ? ['--postgres', database.url] : [])]);
      if (!r.rounds) continue;
      const rounds = r.rounds as { chain: number; e2e: number; serviceCpuMs: number; serverCpuMs: number | null; machineCpuMs: number; budgetCpuMs: number }[];
      const ratios = rounds.map((x) => x.e2e / x.chain);
      const server = rounds.every((x) => x.serverCpuMs !== null) ? `, server ${spread(rounds.map((x) => x.serverCpuMs!))}` : '';
      const target = db === 'postgres' ? 0.9 : 0.8;
      row(
        `relaying ${db}: e2e confirmed/s / chain's rate (${r.count} a round)`,
        `${(r.e2eRatio as number).toFixed(2)} (rounds ${spread(ratios)}; CPU ms a tx: service ${spread(rounds.map((x) => x.serviceCpuMs))}${server}, all ${spread(rounds.map((x) => x.machineCpuMs))} against ${spread(rounds.map((x) => x.budgetCpuMs))} the chain's rate leaves)`,
        `>= ${target}`,
        (r.e2eRatio as number) >= target,
      );
    } finally {
      await database?.drop();
    }
  }
}

if (only.has('many')) {
  for (const db of dbs) {
    const database = db === 'postgres' ? await createBenchDatabase(a.postgres) : undefined;
    try {
      const [r] = await bench('bench/many.ts', database ? ['--postgres', database.url] : []);
      if (r.ratio === undefined) continue;
      const problems = r.problems as string[];
      row(
        `${r.relayers} relayers, ${r.chains} chains ${db}: confirmed/s / direct`,
        `${(r.ratio as number).toFixed(2)} (rounds ${spread(r.ratios as number[])})`,
        '>= 0.90',
        (r.ratio as number) >= 0.9,
      );
      row(
        `${r.relayers} relayers ${db}: slowest's last confirmation after the median's`,
        `${(r.lag as number).toFixed(1)} blocks`,
        '<= 2',
        (r.lag as number) <= 2,
      );
      row(
        `${r.relayers} relayers ${db}: all confirmed, nonces contiguous`,
        problems.length ? `${problems.length} problems` : 'yes',
        'yes',
        problems.length === 0,
      );
    } finally {
      await database?.drop();
    }
  }
}

if (only.has('gasless')) {
  for (const db of dbs) {
    const database = db === 'postgres' ? await createBenchDatabase(a.postgres) : undefined;
    try {
      const [r] = await bench('bench/gasless.ts', database ? ['--postgres', database.url] : []);
      if (r.ratio === undefined) continue;
      const n = r.users as number;
      row(`gasless ${n} users ${db}: operations per handleOps`, (r.perBundle as number).toFixed(1), '', null);
      row(`gasless ${n} users ${db}: confirmed ops/s / direct bundles`, (r.ratio as number).toFixed(2), '>= 0.80', (r.ratio as number) >= 0.8);
      row(
        `gasless ${n} users ${db}: eth_sendUserOperation p50, all at once`,
        `${(r.sendP50 as number).toFixed(1)} ms`,
        '<= 20 ms',
        (r.sendP50 as number) <= 20,
      );
      row(`gasless ${db}: eth_sendUserOperation p50, one at a time`, `${(r.aloneP50 as number).toFixed(1)} ms`, '<= 20 ms', (r.aloneP50 as number) <= 20);
    } finally {
      await database?.drop();
    }
  }
}

if (only.has('latency')) {
  const [r] = await bench('bench/latency.ts', ['--db', 'pglite', '--requests', a.requests, '--large', a.memory], ['--expose-gc']);
  const f = r.figures as LatencyFigures | undefined;
  if (f) {
    row('latency pglite, one client: send median', `${f.send.p50.toFixed(2)} ms`, '<= 10 ms', f.send.p50 <= 10);
    row('latency pglite, one client: send p99', `${f.send.p99.toFixed(2)} ms (max ${f.send.max.toFixed(0)})`, '<= 50 ms', f.send.p99 <= 50);
    row('latency pglite, one client: read by id median', `${f.read.p50.toFixed(2)} ms`, '<= 5 ms', f.read.p50 <= 5);
    row(
      'event-loop delay, one client: p50 / p99 / max',
      `${f.loopSequential.p50.toFixed(1)} / ${f.loopSequential.p99.toFixed(1)} / ${f.loopSequential.max.toFixed(0)} ms`,
      '',
      null,
    );
    row(
      'event-loop delay, idle client process (machine noise)',
      `${f.loopClient.p50.toFixed(1)} / ${f.loopClient.p99.toFixed(1)} / ${f.loopClient.max.toFixed(0)} ms`,
      '',
      null,
    );
    row(
      'event-loop delay, flood of sends: p50 / p99 / max',
      `${f.loopFlood.p50.toFixed(1)} / ${f.loopFlood.p99.toFixed(1)} / ${f.loopFlood.max.toFixed(0)} ms`,
      '',
      null,
    );
    if (f.memory) {
      const ratio = f.memory.rssLargeMb / f.memory.rssSmallMb;
      row(
        `memory pglite: RSS after ${f.memory.large} / after ${f.memory.small} relayed`,
        `${ratio.toFixed(2)} (${f.memory.rssSmallMb.toFixed(0)} -> ${f.memory.rssLargeMb.toFixed(0)} MB)`,
        '<= 1.20',
        ratio <= 1.2,
      );
    }
  }
}

// The webhook figures (a receiver that is down must not slow the service) come from bench/webhooks.ts
// where it exists; it prints one JSON line with rows of { what, figure, target, met }.
if (only.has('webhooks')) {
  if (existsSync(new URL('./webhooks.ts', import.meta.url))) {
    for (const r of await bench('bench/webhooks.ts', [])) {
      for (const x of (r.rows as { what: string; figure: string; target: string; met: boolean }[] | undefined) ?? []) row(x.what, x.figure, x.target, x.met);
    }
  } else {
    row('webhook receiver down: health and send latency vs healthy', 'bench/webhooks.ts not present', '<= 1.20', null);
  }
}

if (only.has('plugins')) {
  const [r] = await bench('bench/plugins.ts', ['--calls', '100', '--in-flight', '4']);
  const f = r.figures as Record<'start' | 'single' | 'backToBack' | 'read', { p50: number; p99: number }> | undefined;
  const t = r.targets as { single: { ratio: number; met: boolean }; backToBack: { met: boolean } } | undefined;
  if (f && t) {
    row('plugins: compile and first process ready, median', `${f.start.p50.toFixed(1)} ms`, '', null);
    row(
      'plugins: one call, pool warm, median vs worker threads (10.2 ms)',
      `${t.single.ratio.toFixed(2)} (${f.single.p50.toFixed(1)} ms)`,
      '<= 1.50',
      t.single.met,
    );
    row(
      'plugins: 100 calls back to back, 4 in flight, median / p99',
      `${f.backToBack.p50.toFixed(1)} / ${f.backToBack.p99.toFixed(1)} ms`,
      'median <= 20 ms',
      t.backToBack.met,
    );
    row('plugins: REST read of the plugin, median', `${f.read.p50.toFixed(1)} ms`, '', null);
  }
}

// What a start of the built service costs (bench/start.ts; needs `npm run build` first).
if (only.has('start')) {
  for (const r of await bench('bench/start.ts', [])) {
    if (typeof r.cpuMs === 'number') row('start of dist/main.js to healthy, PGlite: CPU / wall', `${r.cpuMs} / ${Math.round(r.wallMs as number)} ms`, '', null);
  }
}

console.log('');
console.log(`summary (load average at end ${load()})`);
console.log(`${'figure'.padEnd(58)} ${'measured'.padEnd(34)} ${'target'.padEnd(12)}`);
for (const line of summary) console.log(line);
