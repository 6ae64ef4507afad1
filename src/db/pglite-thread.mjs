// The embedded database on a thread of its own (db/pglite-thread.ts is the other side): PGlite's
// statements run synchronously in WebAssembly, here instead of on the service's event loop. Plain
// JavaScript, so that the thread starts under any loader (tsx, the test runner) without one.
// Values go back as PostgreSQL's text; the service's side parses them as PGlite would have.
import { parentPort, workerData } from 'node:worker_threads';
import { messages, PGlite, types } from '@electric-sql/pglite';

const pg = new PGlite(workerData.dataDir);
await pg.waitReady;
// Every array type with its element type, as PGlite reads them to parse arrays (for the other side).
const { rows: arrays } = await pg.query('SELECT typarray, oid FROM pg_catalog.pg_type WHERE typarray <> 0', [], { rowMode: 'array' });
pg.parsers = {};
const text = (v) => v;
const RAW = { rowMode: 'array', parsers: Object.fromEntries(Object.keys(types.parsers).map((oid) => [oid, text])) };

/** Open transactions, by the id the service's side knows them by. */
const open = new Map();
let nextTx = 1;

const result = (r) => ({ rows: r.rows, fields: r.fields, affectedRows: r.affectedRows ?? 0 });

/** An error as plain data (a thrown error's own fields are lost to structured cloning). */
function plain(e) {
  const fields = {};
  for (const [k, v] of Object.entries(e ?? {})) if (v === null || ['string', 'number', 'boolean'].includes(typeof v)) fields[k] = v;
  return { message: String(e?.message ?? e), name: e?.name, database: e instanceof messages.DatabaseError, fields };
}

async function begin() {
  const id = nextTx++;
  const t = {};
  let inside;
  const entered = new Promise((r) => (inside = r));
  t.done = pg.transaction(async (tx) => {
    t.tx = tx;
    inside();
    await new Promise((r) => (t.finish = r));
    if (t.rollback && !tx.closed) await tx.rollback();
  });
  await Promise.race([entered, t.done]);
  open.set(id, t);
  return id;
}

async function end(id, commit) {
  const t = open.get(id);
  if (!t) return null;
  open.delete(id);
  t.rollback = !commit;
  t.finish();
  await t.done;
  return null;
}

/**
 * Statements in order in transaction `m.tx`, or in a new one; with `m.commit` it commits after
 * them. A failed statement rolls the transaction back. The whole batch is one message each way.
 */
async function batch(m) {
  // A single statement committed at once needs no transaction around it: it is atomic.
  if (m.tx === undefined && m.commit && m.statements.length === 1) {
    const [s] = m.statements;
    return { tx: 0, results: [result(await pg.query(s.sql, s.params, RAW))] };
  }
  const id = m.tx ?? (await begin());
  const results = [];
  try {
    for (const s of m.statements) results.push(result(await open.get(id).tx.query(s.sql, s.params, RAW)));
  } catch (e) {
    await end(id, false);
    throw e;
  }
  if (m.commit) await end(id, true);
  return { tx: id, results };
}

const on = (tx) => (tx === undefined ? pg : open.get(tx).tx);

async function run(m) {
  switch (m.op) {
    case 'query':
      return result(await on(m.tx).query(m.sql, m.params, RAW));
    case 'exec':
      return (await on(m.tx).exec(m.sql, RAW)).map(result);
    case 'batch':
      return batch(m);
    case 'begin':
      return begin();
    case 'end':
      return end(m.tx, m.commit);
    case 'close':
      if (!pg.closed) await pg.close();
      return null;
  }
  throw new Error(`unknown operation ${m.op}`);
}

parentPort.on('message', async (m) => {
  try {
    parentPort.postMessage({ id: m.id, ok: await run(m) });
  } catch (e) {
    parentPort.postMessage({ id: m.id, err: plain(e) });
  }
  if (m.op === 'close') parentPort.close();
});
parentPort.postMessage({ ready: true, arrays });
