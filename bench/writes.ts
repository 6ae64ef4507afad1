// The database's cost of writing relayed transactions, on its own: each transaction is inserted and
// then saved three times (sent, submitted and due again, confirmed and final), in statements of 100
// rows shaped as the intake's and the step's (a JSON recordset joined to the table). Run on PGlite
// (in memory, migrated as the service migrates it) in three index layouts, in turn within each round:
//   migrated   the indexes as migrated
//   in-flight  plus the partial index of rows in flight on (relayer_id, nonce), as before migration
//              20261204200000_drop_in_flight_index
//   full       that, and the idempotency key's and the due index over every row, the due index on
//              due_at alone, as before migration 20261127000000_partial_indexes
// Prints the process's CPU time (both threads) a transaction for each, and each one's ratio to
// migrated per round.
//
//   npx tsx bench/writes.ts [--count 10000] [--pairs 3]

import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/client.js';
import { median, spread } from './stats.js';

const { values: args } = parseArgs({ options: { count: { type: 'string', default: '10000' }, pairs: { type: 'string', default: '3' } } });
const N = Number(args.count);
const ROWS = 100;

const IN_FLIGHT = `CREATE INDEX "transactions_in_flight_idx" ON "transactions" ("relayer_id", "nonce") WHERE "due_at" IS NOT NULL`;
const LAYOUTS = {
  migrated: [],
  'in-flight': [IN_FLIGHT],
  full: [
    IN_FLIGHT,
    'DROP INDEX "transactions_relayer_id_idempotency_key_key"',
    'CREATE UNIQUE INDEX "transactions_relayer_id_idempotency_key_key" ON "transactions" ("relayer_id", "idempotency_key")',
    'DROP INDEX "transactions_due_at_nonce_idx"',
    'CREATE INDEX "transactions_due_at_idx" ON "transactions" ("due_at")',
  ],
};
type Layout = keyof typeof LAYOUTS;

const REQUEST = JSON.stringify({ to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', value: '1000000000000000', data: '0x', speed: 'fast', gas_limit: 21000 });
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;
/** A chain state of the size the EVM family writes: the signed bytes and one broadcast. */
const chainState = (n: number) => ({
  goal: 'payload',
  phase: 'broadcast',
  raw: `0x02f8${'ab'.repeat(110)}`,
  broadcasts: [{ kind: 'payload', hash: hashOf(n), maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000000' }],
  acceptedAt: new Date().toISOString(),
});

const INSERT = `INSERT INTO transactions (id, relayer_id, network_type, "from", "to", value, nonce, gas_limit, speed, request, updated_at, lease_owner, lease_until)
  SELECT x.id, 'bench', 'evm', '0xabc', '0xdef', '1000', x.n, 21000, 'fast', $2::jsonb, now(), 'bench', now() + interval '30 seconds'
  FROM jsonb_to_recordset($1::jsonb) AS x(id text, n bigint)`;
const save = (status: string, due: string) => `UPDATE transactions t SET status = '${status}'::"TransactionStatus", chain_state = v.chain_state,
    hash = v.hash, due_at = ${due}, updated_at = now()
  FROM jsonb_to_recordset($1::jsonb) AS v(id text, chain_state jsonb, hash text)
  WHERE t.id = v.id AND t.lease_owner = 'bench'`;
const SAVES = [save('sent', 'now()'), save('submitted', "now() + interval '5 seconds'"), save('confirmed', 'NULL')];

/** CPU µs a transaction for N transactions written in one layout, on a new database. */
async function run(layout: Layout): Promise<number> {
  const db = await openDatabase({ inMemory: true });
  try {
    for (const sql of LAYOUTS[layout]) await db.query(sql);
    await db.query(`INSERT INTO relayers (id, name, network, network_type, address, signer_id, next_nonce, updated_at)
      VALUES ('bench', 'bench', 'localnet', 'evm', '0xabc', 'dev', 0, now())`);
    // The statements' parameters are built before the clock starts: only the database's work is timed.
    const batches = [];
    for (let nonce = 0; nonce < N; nonce += ROWS) {
      const rows = Array.from({ length: ROWS }, (_, i) => ({ id: crypto.randomUUID(), n: nonce + i }));
      const saved = rows.map((r) => ({ id: r.id, chain_state: chainState(r.n), hash: hashOf(r.n) }));
      batches.push({ rows: JSON.stringify(rows), saved: JSON.stringify(saved) });
    }
    const started = process.cpuUsage();
    for (const { rows, saved } of batches) {
      await db.query(INSERT, [rows, REQUEST]);
      for (const sql of SAVES) await db.query(sql, [saved]);
    }
    const used = process.cpuUsage(started);
    return (used.user + used.system) / N;
  } finally {
    await db.close();
  }
}

const layouts = Object.keys(LAYOUTS) as Layout[];
const figures = Object.fromEntries(layouts.map((l) => [l, [] as number[]])) as Record<Layout, number[]>;
for (let p = 0; p < Number(args.pairs); p++) {
  // Each round starts with another layout, so a machine that speeds up or slows down weighs on all alike.
  for (let i = 0; i < layouts.length; i++) {
    const layout = layouts[(p + i) % layouts.length];
    figures[layout].push(await run(layout));
  }
  console.log(`  round ${p + 1}: ${layouts.map((l) => `${l} ${figures[l][p].toFixed(0)} µs`).join(', ')} a transaction`);
}
const ratio = (l: Layout) => figures[l].map((x, i) => x / figures.migrated[i]);
console.log(
  `transaction writes (insert and three saves, ${N} transactions, PGlite), CPU a transaction: ${layouts.map((l) => `${l} ${median(figures[l]).toFixed(0)} µs`).join(', ')}; ` +
    layouts
      .slice(1)
      .map((l) => `${l} / migrated ${median(ratio(l)).toFixed(2)} (rounds ${spread(ratio(l))})`)
      .join(', '),
);
