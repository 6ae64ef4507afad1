// The PostgreSQL server's instructions a transaction written, counted by callgrind: on a machine
// whose speed drifts by 20% in a minute, CPU time cannot tell changes of a few percent apart;
// instruction counts of one layout spread by about 6% across runs, whatever else runs. Starts a
// PostgreSQL server of its own (initdb in a temporary directory, autovacuum off) under
// `valgrind --tool=callgrind`, runs bench/writes.ts against it for each layout at --rows and at
// three times as many transactions, and takes the difference of the two runs' instructions (of
// every server process that ended meanwhile), so migrations and connections count for nothing.
// Needs valgrind, and PostgreSQL's programs (bench/own-server.ts).
//
//   npx tsx bench/instructions.ts [--rows 620] [--layouts migrated,uncached] [--data 0] [--deliveries 0]

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from './chain.js';
import { startOwnServer } from './own-server.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '620' },
    layouts: { type: 'string', default: 'migrated,uncached' },
    data: { type: 'string', default: '0' },
    deliveries: { type: 'string', default: '0' },
  },
});
const ROWS = Number(args.rows);

const server = await startOwnServer({
  name: 'instructions',
  wrapper: (dir) => ['valgrind', '--tool=callgrind', '--trace-children=yes', `--callgrind-out-file=${path.join(dir, 'callgrind.%p')}`],
});
const { dir } = server;
const url = server.url();

/** The instructions of every server process that ended since `seen` was listed, and the new list. */
function counted(seen: Set<string>): { instructions: number; seen: Set<string> } {
  const now = new Set(readdirSync(dir).filter((f) => f.startsWith('callgrind.')));
  let instructions = 0;
  for (const f of now) {
    if (seen.has(f)) continue;
    const summary = /^summary: (\d+)/m.exec(readFileSync(path.join(dir, f), 'utf8'));
    instructions += Number(summary?.[1] ?? 0);
  }
  return { instructions, seen: now };
}

try {
  let seen = counted(new Set()).seen;
  const write = async (layout: string, count: number) => {
    const options = { count: String(count), rows: String(ROWS), pairs: '1', layouts: layout, data: args.data, deliveries: args.deliveries, postgres: url };
    execFileSync('npx', ['tsx', 'bench/writes.ts', ...Object.entries(options).flatMap(([k, v]) => [`--${k}`, v])], { cwd: ROOT, stdio: 'ignore' });
    // A backend writes its counts when it exits, just after its client disconnects.
    await new Promise((r) => setTimeout(r, 2000));
    const c = counted(seen);
    seen = c.seen;
    return c.instructions;
  };
  // A layout named twice is measured twice: its spread shows how far the counts repeat.
  const figures = new Map<string, number[]>();
  for (const layout of args.layouts.split(',')) {
    const small = await write(layout, ROWS);
    const large = await write(layout, 3 * ROWS);
    const each = (large - small) / (2 * ROWS);
    figures.set(layout, [...(figures.get(layout) ?? []), each]);
    console.log(`  ${layout}: ${(each / 1000).toFixed(1)}k instructions a transaction`);
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const [first, ...rest] = figures.keys();
  console.log(
    `server instructions a transaction written (insert and saves${Number(args.data) ? `, ${args.data} bytes of calldata` : ''}${Number(args.deliveries) ? `, ${args.deliveries} deliveries` : ''}, statements of ${ROWS}): ` +
      [...figures].map(([l, v]) => `${l} ${v.map((x) => (x / 1000).toFixed(1)).join(', ')}k`).join('; ') +
      rest.map((l) => `; ${l} / ${first} ${(mean(figures.get(l)!) / mean(figures.get(first)!)).toFixed(2)}`).join(''),
  );
} finally {
  await server.stop();
}
