// The embedded database on a thread of its own (db/pglite-thread.ts is the other side): PGlite's
// statements run synchronously in WebAssembly, here instead of on the service's event loop. Plain
// JavaScript, so that the thread starts under any loader (tsx, the test runner) without one.
// Values go back as PostgreSQL's text; the service's side parses them as PGlite would have.
import { parentPort, workerData } from 'node:worker_threads';
import { messages, PGlite, protocol, types } from '@electric-sql/pglite';

// PostgreSQL's 128 MB of shared buffers would be zeroed at every open (a third of a second of CPU in
// WebAssembly) and kept resident; 32 MB holds the working set of a relayer's tables and indexes, and
// pages beyond it are read back from the operating system's file cache.
const pg = new PGlite(workerData.dataDir, { startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=32MB'] });
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

// ---- One statement as one exchange of the wire protocol -------------------------------------
// PGlite's query() sends parse, describe, bind, describe, execute and sync as six calls into its
// WebAssembly, each answer parsed into message objects: on the hot path about a fifth of this
// thread's time. Here the five messages the statement needs go in one buffer and the answer is
// read straight into text rows. Parameters travel as text, untyped (as node-postgres sends them),
// so only plain values take this path; any other goes through query().

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();
const plainValue = (v) => v === null || v === undefined || ['string', 'number', 'bigint', 'boolean'].includes(typeof v);
const plainParams = (params) => (params ?? []).every(plainValue);

function frame(type, body) {
  const out = new Uint8Array(5 + body.length);
  out[0] = type.charCodeAt(0);
  new DataView(out.buffer).setInt32(1, 4 + body.length);
  out.set(body, 5);
  return out;
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const cstring = (text) => concat([utf8.encode(text), new Uint8Array(1)]);
const int16 = (n) => new Uint8Array([(n >> 8) & 0xff, n & 0xff]);
const int32 = (n) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setInt32(0, n);
  return b;
};
const asText = (v) => (typeof v === 'boolean' ? (v ? 't' : 'f') : String(v));

/**
 * Bind, describe, execute and sync of one statement, all values as text, in the unnamed portal.
 * `name` is the prepared statement's (empty: unnamed); `parse` parses the SQL into it first.
 */
function extendedQuery(sql, params, name, parse) {
  const values = params.map((v) => (v === null || v === undefined ? null : utf8.encode(asText(v))));
  const bind = [new Uint8Array(1), cstring(name), int16(0), int16(values.length)]; // text parameters
  for (const v of values) bind.push(v === null ? int32(-1) : concat([int32(v.length), v]));
  bind.push(int16(0)); // text results
  return concat([
    ...(parse ? [frame('P', concat([cstring(name), cstring(sql), int16(0)]))] : []),
    frame('B', concat(bind)),
    frame('D', new Uint8Array([0x50, 0])),
    frame('E', new Uint8Array(5)),
    frame('S', new Uint8Array(0)),
  ]);
}

// Named statements, by SQL: parsed once. At most `maxPrepared` of them (db/client.ts sets the bound
// and how they are planned); past it, SQL runs unnamed.
const MAX_PREPARED = workerData.maxPrepared ?? 0;
const prepared = new Map();

// The fields of an ErrorResponse, under the names PGlite's (and node-postgres') errors give them.
const ERROR_FIELDS = {
  S: 'severity',
  C: 'code',
  D: 'detail',
  H: 'hint',
  P: 'position',
  p: 'internalPosition',
  q: 'internalQuery',
  W: 'where',
  s: 'schema',
  t: 'table',
  c: 'column',
  d: 'dataType',
  n: 'constraint',
  F: 'file',
  L: 'line',
  R: 'routine',
};

const affected = (tag) => {
  const w = tag.split(' ');
  if (w[0] === 'INSERT') return Number(w[2]);
  return ['UPDATE', 'DELETE', 'COPY', 'MERGE'].includes(w[0]) ? Number(w[1]) : 0;
};

/** The answer to extendedQuery: its rows as text, or the statement's error thrown as plain data. */
function readAnswer(buf, sql) {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const text = (from, to) => fromUtf8.decode(buf.subarray(from, to));
  const fields = [];
  const rows = [];
  let affectedRows = 0;
  let error;
  for (let at = 0; at < buf.length; ) {
    const type = buf[at];
    const end = at + 1 + view.getInt32(at + 1);
    let i = at + 5;
    if (type === 0x54) {
      // RowDescription: per column its name, then table, column number, type, size, modifier, format
      const n = view.getInt16(i);
      i += 2;
      for (let k = 0; k < n; k++) {
        const z = buf.indexOf(0, i);
        fields.push({ name: text(i, z), dataTypeID: view.getInt32(z + 7) });
        i = z + 19;
      }
    } else if (type === 0x44) {
      const n = view.getInt16(i);
      const row = new Array(n);
      i += 2;
      for (let k = 0; k < n; k++) {
        const len = view.getInt32(i);
        i += 4;
        if (len < 0) row[k] = null;
        else {
          row[k] = text(i, i + len);
          i += len;
        }
      }
      rows.push(row);
    } else if (type === 0x43) {
      affectedRows += affected(text(i, end - 1));
    } else if (type === 0x45) {
      const f = {};
      let message = '';
      while (buf[i] !== 0) {
        const code = String.fromCharCode(buf[i]);
        const z = buf.indexOf(0, i + 1);
        const value = text(i + 1, z);
        if (code === 'M') message = value;
        else if (ERROR_FIELDS[code]) f[ERROR_FIELDS[code]] = value;
        i = z + 1;
      }
      error = { message, name: 'error', database: true, fields: { ...f, length: end - at, query: sql } };
    }
    at = end;
  }
  if (error) throw Object.assign(new Error(error.message), { plain: error });
  return { rows, fields, affectedRows };
}

/** Whether the answer holds a ParseComplete: the statement was parsed. */
function parsed(answer) {
  const view = new DataView(answer.buffer, answer.byteOffset, answer.byteLength);
  for (let at = 0; at < answer.length; at += 1 + view.getInt32(at + 1)) if (answer[at] === 0x31) return true;
  return false;
}

// PGlite also parses each answer into message objects as it comes out of the WebAssembly, for its
// own query(), which reads them (and clears them) afterwards: on the raw path they went unread,
// and piled up until its next query(). That parse was about half of a read by id on this thread.
// It is skipped while the raw path runs; its answers have no notifications (nothing here LISTENs).
const parseAnswer = protocol.Parser.prototype.parse;
let rawExchange = false;
protocol.Parser.prototype.parse = function (buffer, callback) {
  if (!rawExchange) return parseAnswer.call(this, buffer, callback);
};

/** Runs one exchange of the wire protocol and returns the answer's bytes, unparsed by PGlite. */
function exchange(bytes) {
  rawExchange = true;
  try {
    return pg.execProtocolRawSync(bytes);
  } finally {
    rawExchange = false;
  }
}

/** One statement over the wire, in open transaction `tx` or on its own (committed at once); named with `prepare`. */
async function wireQuery(tx, sql, params, prepare) {
  const run = () => {
    let name = prepare ? prepared.get(sql) : undefined;
    const parse = name === undefined;
    if (parse && prepare && prepared.size < MAX_PREPARED) name = `relayer_stmt_${prepared.size}`;
    const answer = exchange(extendedQuery(sql, params, name ?? '', parse));
    // A named statement that failed to parse does not exist; one that parsed does, whatever followed.
    if (parse && name && parsed(answer)) prepared.set(sql, name);
    return readAnswer(answer, sql);
  };
  if (tx !== undefined) {
    if (!open.has(tx)) throw new Error('the database transaction has ended');
    return pg.runExclusive(async () => run());
  }
  // As query() does: after any open transaction, and written through to the files when done.
  return pg._runExclusiveTransaction(() =>
    pg.runExclusive(async () => {
      try {
        return run();
      } finally {
        await pg.syncToFs();
      }
    }),
  );
}

/** A statement with the fastest path its parameters allow. */
const statement = (tx, sql, params, prepare) => (plainParams(params) ? wireQuery(tx, sql, params ?? [], prepare) : on(tx).query(sql, params, RAW).then(result));

/** An error as plain data (a thrown error's own fields are lost to structured cloning). */
function plain(e) {
  if (e?.plain) return e.plain;
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
 * Whether a batch commits after its statements (db/client.ts's Commit): `commit` true, or an object
 * naming a column that every row the last statement returned has, null (rows here are arrays).
 */
function commits(commit, last) {
  if (typeof commit !== 'object' || commit === null) return !!commit;
  const at = last.fields.findIndex((f) => f.name === commit.unlessSet);
  return last.rows.every((r) => at >= 0 && r[at] === null);
}

/**
 * Statements in order in transaction `m.tx`, or in a new one; with `m.commit` it commits after
 * them. A failed statement rolls the transaction back. The whole batch is one message each way.
 */
async function batch(m) {
  // A single statement committed at once needs no transaction around it: it is atomic.
  if (m.tx === undefined && m.commit === true && m.statements.length === 1) {
    const [s] = m.statements;
    return { tx: 0, results: [await statement(undefined, s.sql, s.params, s.prepare)], committed: true };
  }
  const id = m.tx ?? (await begin());
  const results = [];
  try {
    for (const s of m.statements) results.push(await statement(id, s.sql, s.params, s.prepare));
  } catch (e) {
    await end(id, false);
    throw e;
  }
  const committed = commits(m.commit, results.at(-1));
  if (committed) await end(id, true);
  return { tx: id, results, committed };
}

const on = (tx) => (tx === undefined ? pg : open.get(tx).tx);

async function run(m) {
  switch (m.op) {
    case 'query':
      return statement(m.tx, m.sql, m.params, m.prepare);
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
