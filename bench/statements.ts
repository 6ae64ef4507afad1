// Where the PostgreSQL server's time goes when it relays, statement by statement: starts a server
// of its own (initdb in a temporary directory, autovacuum off, pg_stat_statements loaded), runs one
// round of bench/evm.ts against a new database on it, and prints each statement's share of the
// server's time (execution and planning, as pg_stat_statements times them) a relayed transfer,
// with its calls and rows. Times include waits on locks, so they add up to more than the server's
// CPU; their shares still show which statements cost what. With --track all, the statements that
// triggers and functions run are listed too (their time is then also inside their caller's).
// Needs PostgreSQL's programs and its pg_stat_statements module (bench/own-server.ts).
//
//   npx tsx bench/statements.ts [--blocks 10] [--top 12] [--track top|all]

import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ROOT } from './chain.js';
import { startOwnServer } from './own-server.js';

const { values: args } = parseArgs({
  options: {
    blocks: { type: 'string', default: '10' },
    top: { type: 'string', default: '12' },
    track: { type: 'string', default: 'top' },
  },
});
if (!['top', 'all'].includes(args.track)) throw new Error('--track is top or all');

const server = await startOwnServer({
  name: 'statements',
  settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': args.track, 'pg_stat_statements.track_planning': 'on' },
});

interface Statement {
  calls: string;
  rows: string;
  exec_ms: number;
  plan_ms: number;
  query: string;
}

try {
  const admin = new pg.Client(server.url());
  await admin.connect();
  await admin.query('CREATE DATABASE relaying');
  await admin.end();
  const db = new pg.Client(server.url('relaying'));
  await db.connect();
  await db.query('CREATE EXTENSION pg_stat_statements');
  await db.query('SELECT pg_stat_statements_reset()');

  const out = execFileSync('npx', ['tsx', 'bench/evm.ts', '--blocks', args.blocks, '--rounds', '1', '--postgres', server.url('relaying')], {
    cwd: ROOT,
  }).toString();
  for (const line of out.split('\n').filter((l) => /^\s+round \d/.test(l))) console.log(line);

  const [{ n }] = (await db.query<{ n: string }>("SELECT n_tup_ins AS n FROM pg_stat_user_tables WHERE relname = 'transactions'")).rows;
  const transfers = Number(n);
  const statements = (
    await db.query<Statement>(
      `SELECT calls::text, rows::text, total_exec_time AS exec_ms, total_plan_time AS plan_ms, regexp_replace(query, '\\s+', ' ', 'g') AS query
         FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'relaying')
         ORDER BY total_exec_time + total_plan_time DESC`,
    )
  ).rows;
  await db.end();

  const perTransfer = (ms: number) => (ms * 1000) / transfers;
  const total = statements.reduce((a, s) => a + s.exec_ms + s.plan_ms, 0);
  const planned = statements.reduce((a, s) => a + s.plan_ms, 0);
  console.log(
    `server statement time a relayed transfer (${transfers} transfers): ${perTransfer(total).toFixed(1)} µs, of which planning ${perTransfer(planned).toFixed(1)} µs`,
  );
  console.log('   µs  share   exec   plan     calls      rows  statement');
  for (const s of statements.slice(0, Number(args.top))) {
    const us = perTransfer(s.exec_ms + s.plan_ms);
    console.log(
      `${us.toFixed(1).padStart(5)} ${((100 * (s.exec_ms + s.plan_ms)) / total).toFixed(1).padStart(5)}% ${perTransfer(s.exec_ms).toFixed(1).padStart(6)} ${perTransfer(s.plan_ms).toFixed(1).padStart(6)} ${s.calls.padStart(9)} ${s.rows.padStart(9)}  ${s.query.slice(0, 110)}`,
    );
  }
} finally {
  await server.stop();
}
