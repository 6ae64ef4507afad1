// What the counters' UPDATE trigger on transactions costs the service's kinds of statement, on
// PGlite (or PostgreSQL with --postgres), for each way of keeping the counts: single-row UPDATEs
// that change the status (a save), single-row UPDATEs that change no status (a lease, a save
// without a status), the same as one statement of --batch rows (group commit), and INSERTs. Each
// variant replaces the UPDATE trigger on a migrated database; rounds alternate the variants and
// the median of each is printed, in microseconds a row.
//   none    no UPDATE trigger (the floor)
//   n       the counts of rows only (statement trigger, as before the gone counter)
//   join    n and gone/removed from a join of old_rows and new_rows (statement trigger)
//   grouped n and gone/removed from old_rows and new_rows grouped by row (statement trigger, no join)
//   place   the same grouped by row's place (id, created_at, relayer_id) only, rows that moved then expanded
//   ...cols the same statement trigger, fired only by UPDATEs that set status, relayer_id, id or created_at
//   when    n and gone/removed from a row trigger that fires only WHEN a row leaves its place
//
//   npx tsx bench/count-triggers.ts [--rows 2000] [--batch 50] [--rounds 5] [--postgres url]

import { parseArgs } from 'node:util';
import { openDatabase } from '../src/db/client.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000' },
    batch: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '5' },
    postgres: { type: 'string' },
    variants: { type: 'string', default: 'none,n,join,when' },
  },
});
const ROWS = Number(args.rows);
const BATCH = Number(args.batch);

const db = await openDatabase(args.postgres ? { databaseUrl: args.postgres } : { inMemory: true });

const UPSERT = `ON CONFLICT (relayer_id, status) DO UPDATE SET n = c.n + excluded.n, gone = c.gone + excluded.gone, removed = c.removed + excluded.removed`;
const FN: Record<string, string> = {
  n: `INSERT INTO transaction_counts AS c (relayer_id, status, n)
  SELECT relayer_id, status, sum(d) FROM (SELECT relayer_id, status, 1 AS d FROM new_rows UNION ALL SELECT relayer_id, status, -1 AS d FROM old_rows) moved
  GROUP BY relayer_id, status HAVING sum(d) <> 0 ORDER BY relayer_id, status
  ON CONFLICT (relayer_id, status) DO UPDATE SET n = c.n + excluded.n`,
  join: `INSERT INTO transaction_counts AS c (relayer_id, status, n, gone, removed)
  SELECT relayer_id, status, sum(d), sum(g), sum(r) FROM (
    SELECT relayer_id, status, 1 AS d, 0 AS g, 0 AS r FROM new_rows
    UNION ALL
    SELECT o.relayer_id, o.status, -1, (w.id IS NULL OR w.relayer_id <> o.relayer_id OR w.status <> o.status)::int, (w.id IS NULL OR w.relayer_id <> o.relayer_id)::int
    FROM old_rows o LEFT JOIN new_rows w ON w.id = o.id AND w.created_at = o.created_at
  ) moved GROUP BY relayer_id, status HAVING sum(d) <> 0 OR sum(g) <> 0 ORDER BY relayer_id, status ${UPSERT}`,
  grouped: `INSERT INTO transaction_counts AS c (relayer_id, status, n, gone, removed)
  SELECT relayer_id, status, sum(nw - ol), sum(greatest(ol - nw, 0)), sum(CASE WHEN ol > 0 AND here = 0 THEN 1 ELSE 0 END)
  FROM (SELECT relayer_id, status, ol, nw, sum(nw) OVER (PARTITION BY id, created_at, relayer_id) AS here
    FROM (SELECT id, created_at, relayer_id, status, sum(o) AS ol, sum(1 - o) AS nw
      FROM (SELECT id, created_at, relayer_id, status, 0 AS o FROM new_rows UNION ALL SELECT id, created_at, relayer_id, status, 1 FROM old_rows) u
      GROUP BY id, created_at, relayer_id, status) g) w
  GROUP BY relayer_id, status HAVING sum(nw - ol) <> 0 OR sum(greatest(ol - nw, 0)) <> 0 ORDER BY relayer_id, status ${UPSERT}`,
  place: `INSERT INTO transaction_counts AS c (relayer_id, status, n, gone, removed)
  SELECT k.relayer_id, k.status, sum(k.d), sum(k.g), sum(k.r) FROM (
    SELECT relayer_id, min(status) FILTER (WHERE o) AS os, min(status) FILTER (WHERE NOT o) AS ns
    FROM (SELECT id, created_at, relayer_id, status, false AS o FROM new_rows UNION ALL SELECT id, created_at, relayer_id, status, true FROM old_rows) u
    GROUP BY id, created_at, relayer_id) p,
    LATERAL (VALUES (p.relayer_id, p.os, -1, 1, (p.ns IS NULL)::int), (p.relayer_id, p.ns, 1, 0, 0)) k(relayer_id, status, d, g, r)
  WHERE p.os IS DISTINCT FROM p.ns AND k.status IS NOT NULL
  GROUP BY k.relayer_id, k.status ORDER BY k.relayer_id, k.status ${UPSERT}`,
  when: `INSERT INTO transaction_counts AS c (relayer_id, status, n, gone, removed)
  SELECT k, s, sum(d), sum(g), sum(r) FROM (VALUES (OLD.relayer_id, OLD.status, -1, 1, (OLD.relayer_id <> NEW.relayer_id OR OLD.id <> NEW.id OR OLD.created_at <> NEW.created_at)::int),
    (NEW.relayer_id, NEW.status, 1, 0, 0)) v(k, s, d, g, r) GROUP BY k, s ORDER BY k, s ${UPSERT}`,
};

async function install(variant: string) {
  await db.query('DROP TRIGGER IF EXISTS transaction_counts_update ON transactions');
  if (variant === 'none') return;
  // A name ending in "cols": the statement trigger fires only for UPDATEs that set a column of a row's place.
  const cols = variant.endsWith('cols');
  const fn = variant.replace(/cols$/, '');
  await db.query(`CREATE OR REPLACE FUNCTION bench_counts_${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${FN[fn]}; RETURN NULL; END $$`);
  await db.query(
    variant === 'when'
      ? `CREATE TRIGGER transaction_counts_update AFTER UPDATE ON transactions FOR EACH ROW
         WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.relayer_id IS DISTINCT FROM NEW.relayer_id OR OLD.id IS DISTINCT FROM NEW.id OR OLD.created_at IS DISTINCT FROM NEW.created_at)
         EXECUTE FUNCTION bench_counts_when()`
      : `CREATE TRIGGER transaction_counts_update AFTER UPDATE ${cols ? 'OF status, relayer_id, id, created_at ' : ''}ON transactions
         REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION bench_counts_${fn}()`,
  );
}

await db.query(`INSERT INTO relayers (id, name, network, network_type, address, signer_id, updated_at)
  SELECT 'bench-' || i, 'bench', 'anvil', 'evm', '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'bench', now() FROM generate_series(0, 3) i ON CONFLICT DO NOTHING`);

let seq = 0;
const insertSql = (n: number) => `INSERT INTO transactions (id, relayer_id, network_type, status, created_at, updated_at, "from", "to", value, data, request)
  SELECT 'b' || $1::int || '-' || i, 'bench-' || (i % 4), 'evm', 'pending', now(), now(), '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', '1', '0x', '{}'::jsonb
  FROM generate_series(0, ${n - 1}) i`;

const STATUSES = ['pending', 'sent', 'submitted', 'mined', 'confirmed'];
const time = async (n: number, fn: (i: number) => Promise<unknown>) => {
  const t = performance.now();
  for (let i = 0; i < n; i++) await fn(i);
  return ((performance.now() - t) * 1000) / n;
};

async function round(variant: string) {
  await install(variant);
  const tag = ++seq;
  const ids = Array.from({ length: ROWS }, (_, i) => `b${tag}-${i}`);
  const out: Record<string, number> = {};
  // INSERTs: one row each.
  out.insert1 = await time(ROWS / 4, (i) =>
    db.query(
      `INSERT INTO transactions (id, relayer_id, network_type, status, created_at, updated_at, "from", "to", value, data, request)
    VALUES ($1, 'bench-0', 'evm', 'pending', now(), now(), '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', '1', '0x', '{}'::jsonb)`,
      [`x${tag}-${i}`],
    ),
  );
  out.insertBatch = (await time(1, () => db.query(insertSql(ROWS), [tag]))) / ROWS;
  // Single-row status changes, walking each row through the statuses.
  let step = 0;
  out.status1 = await time(ROWS, (i) =>
    db.query(`UPDATE transactions SET status = $2::"TransactionStatus", updated_at = now() WHERE id = $1`, [ids[i], STATUSES[1 + (step++ % 4)]]),
  );
  out.other1 = await time(ROWS, (i) => db.query(`UPDATE transactions SET lease_owner = 'w', lease_until = now() WHERE id = $1`, [ids[i]]));
  const batches = Array.from({ length: ROWS / BATCH }, (_, b) => ids.slice(b * BATCH, (b + 1) * BATCH));
  out.statusBatch =
    (await time(batches.length, (b) =>
      db.query(
        `UPDATE transactions t SET status = v.s::"TransactionStatus", updated_at = now() FROM jsonb_to_recordset($1::jsonb) v(id text, s text) WHERE t.id = v.id`,
        [JSON.stringify(batches[b].map((id, i) => ({ id, s: STATUSES[(b + i) % 5] })))],
      ),
    )) / BATCH;
  out.otherBatch =
    (await time(batches.length, (b) =>
      db.query(`UPDATE transactions t SET lease_owner = NULL, lease_until = NULL FROM jsonb_to_recordset($1::jsonb) v(id text) WHERE t.id = v.id`, [
        JSON.stringify(batches[b].map((id) => ({ id }))),
      ]),
    )) / BATCH;
  await db.query(`DELETE FROM transactions WHERE relayer_id LIKE 'bench-%'`);
  return out;
}

const variants = args.variants.split(',');
const results: Record<string, Record<string, number[]>> = Object.fromEntries(variants.map((v) => [v, {}]));
await round('n'); // warm-up
for (let r = 0; r < Number(args.rounds); r++) {
  for (const v of r % 2 ? [...variants].reverse() : variants) {
    for (const [k, us] of Object.entries(await round(v))) (results[v][k] ??= []).push(us);
  }
}
const median = (xs: number[]) => Math.min(...xs);
const kinds = Object.keys(results[variants[0]]);
console.log(`${db.kind}, µs a row (best of ${args.rounds} rounds), batch ${BATCH}`);
console.log(['variant', ...kinds].map((s) => s.padStart(12)).join(''));
for (const v of variants) console.log([v, ...kinds.map((k) => median(results[v][k]).toFixed(1))].map((s) => s.padStart(12)).join(''));
await db.close();
