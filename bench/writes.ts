// The database's cost of writing relayed transactions, on its own: each transaction is inserted and
// then saved three times (sent, submitted and due again, confirmed and final), in statements of
// --rows rows shaped as the intake's and the step's (a JSON recordset joined to the table), with a
// signed EVM transfer's request, chain state and signature. Each layout runs on a new database,
// migrated as the service migrates it, in turn within each round:
//   migrated   as migrated: request, chain_state and signature are json, and travel in the
//              recordset as their JSON text; the insert lets its foreign-key lookups be cached
//   uncached   as migrated, but each row's foreign-key lookup planned again (as before CACHED_LOOKUPS)
//   compressed as migrated, but rows past about 2 KB compressed, as before migration 20261205011000_rows_inline
//   signed-insert  as migrated, but each transaction inserted signed (status sent, its chain state,
//              signature and hash) and not saved as sent: what signing before the insert would save
//   no-ack     as migrated, but no save as submitted: what recording the node's acceptance without
//              a row version of its own would save
//   jsonb      those three jsonb, nested in the recordset, as before migration 20261204224823_opaque_json
//   in-flight  as migrated, plus the partial index of rows in flight on (relayer_id, nonce), as
//              before migration 20261204200000_drop_in_flight_index
//   full       that, and the idempotency key's and the due index over every row, the due index on
//              due_at alone, as before migration 20261127000000_partial_indexes
// With --data N, each transaction calls a contract with N bytes of calldata (68: an ERC-20 transfer).
// With --deliveries N, each transaction also queues N webhook deliveries (three foreign keys a row),
// in statements shaped as the service's after its saves.
// Prints the CPU a transaction of each (PGlite: the process, both threads; PostgreSQL: the server's
// processes and this one's), and each one's ratio to migrated per round.
//
//   npx tsx bench/writes.ts [--count 10000] [--rows 100] [--pairs 3] [--layouts migrated,uncached,compressed,signed-insert,no-ack,jsonb,in-flight,full]
//                           [--data 0] [--deliveries 0] [--postgres <server url>: on PostgreSQL, a new database each run]
// bench/instructions.ts runs it against a PostgreSQL server of its own under callgrind, for the
// server's instructions instead.

import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/client.js';
import { CACHED_LOOKUPS } from '../src/db/plans.js';
import { postgresCpuMs } from './chain.js';
import { createBenchDatabase } from './reads.js';
import { median, spread } from './stats.js';

const { values: args } = parseArgs({
  options: {
    count: { type: 'string', default: '10000' },
    rows: { type: 'string', default: '100' },
    pairs: { type: 'string', default: '3' },
    layouts: { type: 'string', default: 'migrated,uncached,compressed,signed-insert,no-ack,jsonb,in-flight,full' },
    data: { type: 'string', default: '0' },
    deliveries: { type: 'string', default: '0' },
    postgres: { type: 'string' },
  },
});
const N = Number(args.count);
const ROWS = Number(args.rows);
const DELIVERIES = Number(args.deliveries);

const IN_FLIGHT = `CREATE INDEX "transactions_in_flight_idx" ON "transactions" ("relayer_id", "nonce") WHERE "due_at" IS NOT NULL`;
const LAYOUTS = {
  migrated: [],
  uncached: [],
  'signed-insert': [],
  'no-ack': [],
  compressed: ['ALTER TABLE transactions RESET (toast_tuple_target)'],
  jsonb: ['ALTER TABLE transactions ALTER COLUMN request TYPE jsonb, ALTER COLUMN chain_state TYPE jsonb, ALTER COLUMN signature TYPE jsonb'],
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
const layouts = args.layouts.split(',') as Layout[];
for (const l of layouts) if (!(l in LAYOUTS)) throw new Error(`unknown layout ${l}`);

/** Hex of n random bytes: hashes, keys and calldata compress as little as real ones. */
const hex = (n: number) => randomBytes(n).toString('hex');
const DATA = Number(args.data) ? `0x${hex(Number(args.data))}` : null;
const REQUEST = {
  to: '0x000000000000000000000000000000000000dEaD',
  data: DATA,
  speed: 'fast',
  value: '15',
  gasLimit: '23100',
  validUntil: new Date().toISOString(),
};
/** A transaction_update delivery's body is the transaction's record, about 900 bytes. */
const DELIVERY_BODY = JSON.stringify({ payload_type: 'transaction', record: 'x'.repeat(850) });
const SIGNATURE = { r: `0x${hex(32)}`, s: `0x${hex(32)}`, v: 0, sig: `0x${hex(64)}1b` };
/** A chain state of the size the EVM family writes: the signed bytes, one broadcast and, once mined, the receipt. */
const chainState = (n: number, hash: string, mined: boolean) => ({
  goal: 'payload',
  phase: mined ? 'done' : 'broadcast',
  raw: `0x02f8${hex(110 + Number(args.data))}`,
  version: 0,
  broadcasts: [
    {
      kind: 'payload',
      hash,
      nonce: String(n),
      version: 0,
      gasLimit: '23100',
      fees: { maxFeePerGas: '1750000001', maxPriorityFeePerGas: '1' },
      signedAt: new Date().toISOString(),
    },
  ],
  acceptedAt: new Date().toISOString(),
  payloadOut: true,
  ...(mined ? { mined: { hash, blockNumber: '6', blockHash: `0x${hex(32)}`, success: true }, public: { block_number: 6, gas_used: '21000' } } : {}),
});

/** The statements of a layout: jsonb takes the three values nested in the recordset, json their text. */
function statements(layout: Layout) {
  const [type, cast] = layout === 'jsonb' ? ['jsonb', ''] : ['text', '::json'];
  const lookups = layout === 'uncached' ? '' : `, ${CACHED_LOOKUPS}`;
  const signedInsert = layout === 'signed-insert';
  const save = (status: string, due: string, signed: boolean) => `UPDATE transactions t SET status = '${status}'::"TransactionStatus",
      chain_state = v.chain_state${cast}, ${signed ? `signature = v.signature${cast}, hashes = ARRAY[v.hash], ` : ''}hash = v.hash, due_at = ${due}, updated_at = now()
    FROM jsonb_to_recordset($1::jsonb) AS v(id text, chain_state ${type}, signature ${type}, hash text)
    WHERE t.id = v.id AND t.lease_owner = 'bench'`;
  return {
    encode: (v: unknown) => (layout === 'jsonb' ? v : JSON.stringify(v)),
    insert: `INSERT INTO transactions (id, relayer_id, network_type, "from", "to", value, data, nonce, gas_limit, speed, request, updated_at, lease_owner, lease_until${
      signedInsert ? ', status, chain_state, signature, hash, hashes, due_at' : ''
    })
      SELECT x.id, 'bench', 'evm', '0x${hex(20)}', '0x${hex(20)}', '15', x.data, x.n, 21000, 'fast', x.request${cast}, now(), 'bench', now() + interval '30 seconds'${
        signedInsert ? `, 'sent', x.chain_state${cast}, x.signature${cast}, x.hash, ARRAY[x.hash], now()` : ''
      }
      FROM jsonb_to_recordset($1::jsonb) AS x(id text, n bigint, data text, request ${type}${signedInsert ? `, chain_state ${type}, signature ${type}, hash text` : ''})${lookups}`,
    saves: [save('sent', 'now()', true), save('submitted', "now() + interval '5 seconds'", false), save('confirmed', 'NULL', false)],
    deliveries: `INSERT INTO deliveries (id, notification_id, relayer_id, transaction_id, event, body)
      SELECT x.id, 'hook', 'bench', x.tx, 'transaction_update', x.body
      FROM jsonb_to_recordset($1::jsonb) AS x(id text, tx text, body text)${lookups}`,
  };
}

/** CPU µs a transaction for N transactions written in one layout, on a new database. */
async function run(layout: Layout): Promise<number> {
  const created = args.postgres ? await createBenchDatabase(args.postgres) : undefined;
  const db = await openDatabase(created ? { databaseUrl: created.url } : { inMemory: true });
  try {
    for (const sql of LAYOUTS[layout]) await db.query(sql);
    await db.query(`INSERT INTO relayers (id, name, network, network_type, address, signer_id, next_nonce, updated_at)
      VALUES ('bench', 'bench', 'localnet', 'evm', '0xabc', 'dev', 0, now())`);
    await db.query(`INSERT INTO notifications (id, type, url, updated_at) VALUES ('hook', 'webhook', 'http://127.0.0.1:9/', now())`);
    const s = statements(layout);
    // Everything but encoding the values as the service does is done before the clock starts.
    const batches = [];
    for (let nonce = 0; nonce < N; nonce += ROWS) {
      const rows = Array.from({ length: ROWS }, (_, i) => ({ id: crypto.randomUUID(), n: nonce + i }));
      const hashes = rows.map(() => `0x${hex(32)}`);
      const signed = rows.map((r, i) => ({ id: r.id, hash: hashes[i], chain_state: chainState(r.n, hashes[i], false), signature: SIGNATURE }));
      const mined = rows.map((r, i) => ({ id: r.id, hash: hashes[i], chain_state: chainState(r.n, hashes[i], true) }));
      batches.push({ rows, signed, mined });
    }
    const cpu = () => {
      const own = process.cpuUsage();
      return own.user + own.system + (postgresCpuMs(created?.url) ?? 0) * 1000;
    };
    const started = cpu();
    for (const { rows, signed, mined } of batches) {
      const [sent, submitted, confirmed] = s.saves;
      const encoded = signed.map((r) => ({ ...r, chain_state: s.encode(r.chain_state), signature: s.encode(r.signature) }));
      const inserted = rows.map((r, i) => ({ ...r, data: DATA, request: s.encode(REQUEST), ...(layout === 'signed-insert' ? encoded[i] : {}) }));
      await db.query(s.insert, [JSON.stringify(inserted)]);
      if (layout !== 'signed-insert') await db.query(sent, [JSON.stringify(encoded)]);
      if (layout !== 'no-ack') await db.query(submitted, [JSON.stringify(encoded)]);
      await db.query(confirmed, [JSON.stringify(mined.map((r) => ({ ...r, chain_state: s.encode(r.chain_state) })))]);
      for (let d = 0; d < DELIVERIES; d++) {
        await db.query(s.deliveries, [JSON.stringify(rows.map((r) => ({ id: crypto.randomUUID(), tx: r.id, body: DELIVERY_BODY })))]);
      }
    }
    return (cpu() - started) / N;
  } finally {
    await db.close();
    await created?.drop();
  }
}

const figures = Object.fromEntries(layouts.map((l) => [l, [] as number[]])) as Record<Layout, number[]>;
for (let p = 0; p < Number(args.pairs); p++) {
  // Each round starts with another layout, so a machine that speeds up or slows down weighs on all alike.
  for (let i = 0; i < layouts.length; i++) {
    const layout = layouts[(p + i) % layouts.length];
    figures[layout].push(await run(layout));
  }
  console.log(`  round ${p + 1}: ${layouts.map((l) => `${l} ${figures[l][p].toFixed(0)} µs`).join(', ')} a transaction`);
}
const ratio = (l: Layout) => figures[l].map((x, i) => x / figures[layouts[0]][i]);
console.log(
  `transaction writes (insert and saves${DATA ? `, ${args.data} bytes of calldata` : ''}${DELIVERIES ? `, ${DELIVERIES} deliveries` : ''}, ${N} transactions in statements of ${ROWS}, ${args.postgres ? 'PostgreSQL: server and client' : 'PGlite'}), CPU a transaction: ` +
    `${layouts.map((l) => `${l} ${median(figures[l]).toFixed(0)} µs`).join(', ')}; ` +
    layouts
      .slice(1)
      .map((l) => `${l} / ${layouts[0]} ${median(ratio(l)).toFixed(2)} (rounds ${spread(ratio(l))})`)
      .join(', '),
);
