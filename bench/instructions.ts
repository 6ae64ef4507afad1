// The PostgreSQL server's instructions a transaction written, counted by callgrind: on a machine
// whose speed drifts by 20% in a minute, CPU time cannot tell changes of a few percent apart;
// instruction counts of one layout spread by about 6% across runs, whatever else runs. Starts a
// PostgreSQL server of its own (initdb in a temporary directory, autovacuum off) under
// `valgrind --tool=callgrind`, runs bench/writes.ts against it for each layout at --rows and at
// three times as many transactions, and takes the difference of the two runs' instructions (of
// every server process that ended meanwhile), so migrations and connections count for nothing.
// Needs valgrind and PostgreSQL's initdb and postgres on the PATH; as root, the server runs as the
// user postgres.
//
//   npx tsx bench/instructions.ts [--rows 620] [--layouts migrated,uncached] [--data 0] [--deliveries 0]

import { execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { freePort } from '../src/chains/evm/anvil.js';
import { ROOT } from './chain.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '620' },
    layouts: { type: 'string', default: 'migrated,uncached' },
    data: { type: 'string', default: '0' },
    deliveries: { type: 'string', default: '0' },
  },
});
const ROWS = Number(args.rows);

const dir = mkdtempSync(path.join(tmpdir(), 'relayer-instructions-'));
const asRoot = process.getuid?.() === 0;
/** A command as the server's user: postgres refuses to run as root. */
const as = (cmd: string, argv: string[]): [string, string[]] => (asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...argv]] : [cmd, argv]);
if (asRoot) chownSync(dir, Number(execFileSync('id', ['-u', 'postgres']).toString()), Number(execFileSync('id', ['-g', 'postgres']).toString()));
execFileSync(...as('initdb', ['-D', path.join(dir, 'data'), '-A', 'trust', '-U', 'postgres']), { stdio: 'ignore' });

const port = await freePort();
const [cmd, argv] = as('valgrind', [
  '--tool=callgrind',
  '--trace-children=yes',
  `--callgrind-out-file=${path.join(dir, 'callgrind.%p')}`,
  'postgres',
  ...['-D', path.join(dir, 'data'), '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'autovacuum=off'],
]);
const server = spawn(cmd, argv, { stdio: 'ignore', detached: true });
const url = `postgres://postgres@127.0.0.1:${port}/postgres`;

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
  for (let i = 0; ; i++) {
    const client = new pg.Client(url);
    const up = await client.connect().then(
      () => true,
      () => false,
    );
    await client.end().catch(() => {});
    if (up) break;
    if (i > 300) throw new Error('the server under callgrind did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
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
  try {
    process.kill(-server.pid!, 'SIGINT');
  } catch {}
  for (let i = 0; i < 100 && server.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
  rmSync(dir, { recursive: true, force: true });
}
