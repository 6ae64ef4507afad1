// The transaction repository: every write of a transaction row goes through here. New rows are
// inserted; after that only the holder of a row's lease changes it (save), and every status change
// queues its webhook delivery and live event in the same database transaction (the outbox).
// Hot paths (intake, the worker's claims) write and read transaction rows in raw SQL: Prisma's
// createManyAndReturn and findMany cost several times the database's own work per row. Statements
// outside a database transaction (the claims, the API's reads) run on the database handle
// (Database.read), which also skips Prisma's conversion of raw rows.
import type { Statement } from '../../db/client.js';
import { columnOf, columnsAs, recordsetJson, recordsetValue } from '../../db/columns.js';
import { CACHED_LOOKUPS } from '../../db/plans.js';
import { claimDue, LEASE_MS, release } from '../../db/lease.js';
import { Prisma, type Relayer, type Transaction } from '../../generated/prisma/client.js';
import type { Held } from './held.js';
import type { Position } from '../page.js';
import type { FamilySpecs } from '../registry.js';
import type { Runtime } from '../runtime.js';
import type { NewTransaction, TransactionChange, TransactionPatch } from './rows.js';
import { slot } from '../state.js';
import { transactionUpdates, writeReporting } from '../notifications/events.js';

/** Every column of a transaction row, under its Prisma field name: raw rows read as Transaction. */
export const TRANSACTION_COLUMNS = columnsAs(Object.values(Prisma.TransactionScalarFieldEnum));

const INSERTED: [field: keyof NewTransaction, type: string, cast?: string][] = [
  ['id', 'text'],
  ['relayerId', 'text'],
  ['networkType', 'text'],
  ['from', 'text'],
  ['to', 'text'],
  ['value', 'text'],
  ['data', 'text'],
  ['nonce', 'bigint'],
  ['gasLimit', 'bigint'],
  ['gasPrice', 'text'],
  ['maxFeePerGas', 'text'],
  ['maxPriorityFeePerGas', 'text'],
  ['speed', 'text', '"Speed"'],
  ['validUntil', 'text', 'timestamp(3)'],
  ['request', 'text', 'json'],
  ['idempotencyKey', 'text'],
  ['requestDigest', 'text'],
  ['status', 'text', '"TransactionStatus"'],
  ['statusReason', 'text'],
  ['chainState', 'text', 'json'],
];

/**
 * The json columns (request, chain_state, signature): written and read whole, they travel in a
 * recordset as their JSON text, which the column only validates (see migration
 * 20261204224823_opaque_json). Nested in the recordset instead, jsonb parsed them into a tree.
 */
const jsonText = (v: unknown) => (v === null || v === undefined ? v : JSON.stringify(v));
const toJson = (v: string) => `${v}::json`;
/** A value as a recordset carries it: a json field's as its text, others as recordsetValue says. */
const recordValue = (v: unknown, json: boolean) => (json ? jsonText(v) : recordsetValue(v));

/**
 * A new row as the insert's recordset carries it: the INSERTED fields and the Held that covers it,
 * set field by field into one object. Spread from the row and scanned again for bigints
 * (recordsetJson), the recordset took 11% of the REST send route's main thread; 8% this way.
 */
function insertedRow(r: NewTransaction, n: number, h: Held | undefined): Record<string, unknown> {
  const row: Record<string, unknown> = { n };
  for (const [f, , cast] of INSERTED) row[f] = recordValue(r[f], cast === 'json');
  if (h) {
    row.hold_from = recordsetValue(h.from);
    row.hold_per = h.per;
    row.hold_first_ms = h.firstMs;
    row.hold_every_ms = h.everyMs;
  }
  return row;
}

/** Columns the database defaults when a new row leaves them out. */
const DEFAULTED: Partial<Record<keyof NewTransaction, string>> = { value: "'0'", status: "'pending'" };

/** What the database fills in on a new row, and the id to match it by; the rest is as given (see writtenRow). */
const FILLED = ['id', 'nonce', 'createdAt', 'updatedAt', 'dueAt', 'leaseOwner', 'leaseUntil'] as const;

/**
 * A new row as the INSERT wrote it: the fields given, the database's defaults, `filled` as it
 * returned them. Written out field by field: a spread of `r` with fields added to it cost about
 * 40 µs and 10 KB a row (each added field gave the clone a map of its own).
 */
function writtenRow(r: NewTransaction, filled: Pick<Transaction, (typeof FILLED)[number]>): Transaction {
  return {
    id: filled.id,
    relayerId: r.relayerId,
    networkType: r.networkType,
    status: r.status ?? 'pending',
    statusReason: r.statusReason ?? null,
    createdAt: filled.createdAt,
    updatedAt: filled.updatedAt,
    sentAt: null,
    confirmedAt: null,
    hash: null,
    hashes: [],
    from: r.from,
    to: r.to,
    value: r.value ?? '0',
    data: r.data,
    nonce: filled.nonce,
    gasLimit: r.gasLimit,
    gasPrice: r.gasPrice,
    maxFeePerGas: r.maxFeePerGas,
    maxPriorityFeePerGas: r.maxPriorityFeePerGas,
    speed: r.speed,
    validUntil: r.validUntil,
    request: r.request as Transaction['request'],
    chainState: (r.chainState ?? null) as Transaction['chainState'],
    signature: null,
    attempts: 0,
    dueAt: filled.dueAt,
    leaseOwner: filled.leaseOwner,
    leaseUntil: filled.leaseUntil,
    idempotencyKey: r.idempotencyKey,
    requestDigest: r.requestDigest,
  };
}

/**
 * The INSERT of new rows: each row's nonce is offset by the `base` of its relayer's row
 * (`relayer_id`) that statement `r` returns; the rows of a relayer it returns none for are not
 * written. A row its relayer's Held (`hold_*`) covers is written free, due when heldDueMs says.
 */
const insertSql = (r: string) => `WITH r AS (${r})
  INSERT INTO transactions (${INSERTED.map(([f]) => `"${columnOf(f)}"`).join(', ')}, updated_at, lease_owner, lease_until, due_at)
  SELECT ${INSERTED.map(([f, , cast]) => {
    const v = f === 'nonce' ? 'x."nonce" + r.base' : DEFAULTED[f] ? `coalesce(x."${f}", ${DEFAULTED[f]})` : `x."${f}"`;
    return cast ? `${v}::${cast}` : v;
  }).join(', ')}, now(),
    CASE WHEN h.held THEN NULL ELSE $2::text END, CASE WHEN h.held THEN NULL ELSE l.until END,
    CASE WHEN h.held THEN now() + (x.hold_first_ms + (x."nonce" + r.base - x.hold_from) / x.hold_per * x.hold_every_ms) * interval '1 millisecond'
      ELSE coalesce(l.until, now()) END
  FROM (SELECT CASE WHEN $2::text IS NULL THEN NULL ELSE now() + ($3 || ' milliseconds')::interval END AS until) l, r,
    jsonb_to_recordset($1::jsonb) AS x(${INSERTED.map(([f, type]) => `"${f}" ${type}`).join(', ')}, n int, hold_from bigint, hold_per bigint, hold_first_ms bigint, hold_every_ms bigint),
    LATERAL (SELECT coalesce(x."nonce" + r.base >= x.hold_from, false) AS held) h, ${CACHED_LOOKUPS}
  WHERE r.relayer_id = x."relayerId"
  ORDER BY n
  RETURNING ${columnsAs(FILLED)}`;
const INSERT_SQL = insertSql(`SELECT DISTINCT "relayerId" AS relayer_id, 0::bigint AS base FROM jsonb_to_recordset($1::jsonb) AS x("relayerId" text)`);

/**
 * Inserts rows in one statement and returns them as written, in the order given, with the webhook
 * delivery of each new row queued in the same database transaction (`relayers`: the relayer of
 * every row). With `leaseOwner` they are written leased to it (for LEASE_MS), to be worked on
 * without claiming them first, and due when the lease ends, as no one could claim them sooner: the
 * worker's poll for due rows then passes over them (it read every row in flight each time, to
 * find each one leased). With `guard` (an UPDATE of the relayers that returns `relayer_id` and
 * `base` of each, its parameters numbered from $4), a relayer's rows are written only if it
 * returns its row, and their nonces are offsets from its `base`: none is written when it returns
 * none. With `held`, the rows a relayer's Held covers are written free instead, due as it says:
 * worked on sooner, they would only be given back.
 */
export async function insertTransactions(
  rt: Pick<Runtime, 'db' | 'notifications'> & { families: FamilySpecs },
  rows: NewTransaction[],
  opts: { relayers: Pick<Relayer, 'id' | 'notificationId'>[]; leaseOwner?: string | null; guard?: Statement; held?: Map<string, Held>; also?: Also },
): Promise<Transaction[]> {
  const insert = {
    sql: opts.guard ? insertSql(opts.guard.sql) : INSERT_SQL,
    params: [
      JSON.stringify(rows.map((r, n) => insertedRow(r, n, opts.held?.get(r.relayerId)))),
      opts.leaseOwner ?? null,
      String(LEASE_MS),
      ...(opts.guard?.params ?? []),
    ],
    prepare: true,
  };
  const notifies = opts.relayers.some((r) => r.notificationId);
  const relayers = new Map(opts.relayers.map((r) => [r.id, r]));
  if (opts.also) return insertWithAlso(rt, rows, insert, relayers, opts.also);
  // Without a notification, the insert alone is the transaction. Its plan depends on no table's
  // size, so it is made once per connection (PLAN_ONCE).
  return writeReporting(
    rt,
    insert,
    !notifies,
    (returned) => {
      const byId = new Map((returned as Pick<Transaction, (typeof FILLED)[number]>[]).map((t) => [t.id, t]));
      const written = rows.flatMap((r) => {
        const filled = byId.get(r.id);
        return filled ? [writtenRow(r, filled)] : [];
      });
      return {
        result: written,
        deliveries: transactionUpdates(
          rt.families,
          written.map((transaction) => ({ relayer: relayers.get(transaction.relayerId)!, transaction })),
        ),
      };
    },
    { planOnce: true },
  );
}

/**
 * A write that goes with new rows, in their database transaction: the statement made of the rows
 * written (none when the guard wrote none) must return `rows` rows, or nothing is written
 * (AlsoRefused). A bundle of UserOperations marks them submitted this way.
 */
export type Also = (written: Transaction[]) => { statement: Statement; rows: number };

export class AlsoRefused extends Error {}

async function insertWithAlso(
  rt: Pick<Runtime, 'db' | 'notifications'> & { families: FamilySpecs },
  rows: NewTransaction[],
  insert: Statement,
  relayers: Map<string, Pick<Relayer, 'id' | 'notificationId'>>,
  also: Also,
): Promise<Transaction[]> {
  let queued = false;
  const written = await rt.db.transaction(async (tx) => {
    const [returned] = await tx.run([insert]);
    const byId = new Map((returned as Pick<Transaction, (typeof FILLED)[number]>[]).map((t) => [t.id, t]));
    const written = rows.flatMap((r) => {
      const filled = byId.get(r.id);
      return filled ? [writtenRow(r, filled)] : [];
    });
    if (written.length === 0) return written;
    const a = also(written);
    const [changed] = await tx.run([a.statement]);
    if (changed.length !== a.rows) throw new AlsoRefused(`the write that goes with the transaction changed ${changed.length} rows, not ${a.rows}`);
    const deliveries = transactionUpdates(
      rt.families,
      written.map((transaction) => ({ relayer: relayers.get(transaction.relayerId)!, transaction })),
    );
    if (deliveries) {
      await tx.run([deliveries]);
      queued = true;
    }
    return written;
  });
  if (queued) rt.notifications.sender.to?.wake();
  return written;
}

/** Claims up to `limit` due rows for `owner`, in due order and, among rows due together, in nonce order. */
export function claimTransactions(rt: Runtime, limit: number): Promise<Transaction[]> {
  return claimDue<Transaction>(rt.db, 'transactions', {
    owner: rt.instanceId,
    limit,
    leaseMs: LEASE_MS,
    where: 'due_at IS NOT NULL',
    orderBy: 'due_at, nonce',
    returning: TRANSACTION_COLUMNS,
  });
}

/**
 * The latest version of each in-flight row this runtime saved, for the mined-nonce claim: it reads
 * back a row's version (updated_at, set by every save) and the columns other statements change,
 * instead of every column (on PGlite, claiming whole rows cost about 95 µs of CPU a row, these
 * columns about 55). A row saved since by anyone else has another updated_at and is read in full.
 * Bounded: the oldest entries go first.
 */
const SAVED_MAX = 10_000;
const SAVED_ROWS = slot('saved rows', () => new Map<string, Transaction>());

function remember(rt: Runtime, row: Transaction) {
  const saved = rt.state(SAVED_ROWS);
  saved.delete(row.id);
  if (row.dueAt === null) return;
  saved.set(row.id, row);
  if (saved.size > SAVED_MAX) saved.delete(saved.keys().next().value!);
}

/** What the claim reads back: the version, and the columns a statement other than a save may change. */
const CLAIMED = ['id', 'updatedAt', 'nonce', 'status', 'dueAt', 'leaseOwner', 'leaseUntil'] as const;
const BY_IDS = `SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))`;

/**
 * The rows of the ranges, each range's read by a seek in the unique (relayer_id, nonce) index, then
 * those no one holds updated by id as one array (looked up in the primary key). Joined to the
 * ranges instead, the statement took 24 ms a call on PGlite under bench/many.ts, about 10 ms this
 * way. Each range is a seek whatever the statistics say: its LIMIT (never reached, a range holds at
 * most hi - lo rows) keeps the planner from joining the ranges to a scan of the table (26 ms at
 * 200,000 rows before statistics were gathered), and the test of rows in flight (due_at set) is left
 * to the UPDATE, or the partial due index would match it and be scanned whole for the nonces.
 */
const claimMinedSql = (unsigned: boolean) => {
  const unheld = `(lease_until IS NULL OR lease_until < now())${unsigned ? ' AND hash IS NULL' : ''}`;
  return `UPDATE transactions SET lease_owner = $2, lease_until = now() + ($3 || ' milliseconds')::interval
     WHERE id = ANY(ARRAY(SELECT c.id FROM jsonb_to_recordset($1::jsonb) AS r(relayer_id text, lo bigint, hi bigint)
       CROSS JOIN LATERAL (SELECT id FROM transactions WHERE relayer_id = r.relayer_id AND nonce >= r.lo AND nonce < r.hi AND ${unheld}
         ORDER BY nonce LIMIT greatest(r.hi - r.lo, 0)) c))
       AND due_at IS NOT NULL AND ${unheld}
     RETURNING ${unsigned ? TRANSACTION_COLUMNS : columnsAs(CLAIMED)}`;
};
/** The claim of rows the chain mined past, and of those never signed (exported for a test of its plan). */
export const CLAIM_MINED = [claimMinedSql(false), claimMinedSql(true)];

/** A relayer's nonces from `from` up to `below`. */
export type NonceRange = { relayerId: string; from: bigint; below: bigint };

/**
 * Claims the in-flight rows of each relayer with a nonce in its range that no one holds (the chain
 * has mined past them), due or not, in one statement. Bounded below, so it reads the nonces the
 * chain just passed whatever the statistics and the dead index entries (a server without
 * autovacuum): unbounded, it read every earlier transaction of the relayer, 0.6-0.85 s at 45,000
 * of them. With `unsigned`, only rows never signed (no hash yet), read back whole: most were
 * written free at intake, never saved by this runtime, and are narrow (nothing signed yet).
 */
export async function claimMinedNonces(rt: Runtime, ranges: NonceRange[], unsigned = false): Promise<Transaction[]> {
  const claimed = await rt.db.read<Pick<Transaction, (typeof CLAIMED)[number]>>(
    CLAIM_MINED[unsigned ? 1 : 0],
    [recordsetJson(ranges.map((r) => ({ relayer_id: r.relayerId, lo: r.from, hi: r.below }))), rt.instanceId, String(LEASE_MS)],
    { prepare: true },
  );
  const saved = rt.state(SAVED_ROWS);
  if (unsigned) {
    for (const c of claimed) saved.delete(c.id);
    return claimed as Transaction[];
  }
  const rows: Transaction[] = [];
  const unknown: string[] = [];
  for (const c of claimed) {
    const row = saved.get(c.id);
    saved.delete(c.id);
    if (row && row.updatedAt.getTime() === c.updatedAt.getTime()) rows.push({ ...row, ...c });
    else unknown.push(c.id);
  }
  // Held by this instance now: read as they stand.
  if (unknown.length > 0) rows.push(...(await rt.db.read<Transaction>(BY_IDS, [JSON.stringify(unknown)], { prepare: true })));
  return rows;
}

/** Gives claimed rows back unchanged, each due again at its time (null: no more work), where the lease they were read under still holds. */
export function releaseTransactions(rt: Runtime, rows: { tx: Pick<Transaction, 'id' | 'leaseUntil'>; dueAt: Date | null }[]) {
  return release(
    rt.db.prisma,
    'transactions',
    rt.instanceId,
    rows.map(({ tx, dueAt }) => ({ id: tx.id, leaseUntil: tx.leaseUntil, dueAt })),
  );
}

/**
 * Moves a leased row to the relayer's next nonce (at least `atLeast`): allocated and written in
 * one database transaction, under the lease the row was read with. Null when the lease was lost
 * or the relayer's nonce is not initialised.
 */
export async function moveToNewNonce(rt: Runtime, tx: Transaction, atLeast: bigint): Promise<bigint | null> {
  return rt.db.prisma
    .$transaction(async (db) => {
      const [r] = await db.$queryRaw<{ nonce: bigint }[]>`
        UPDATE relayers SET next_nonce = GREATEST(next_nonce, ${atLeast}) + 1
        WHERE id = ${tx.relayerId} AND next_nonce IS NOT NULL
        RETURNING next_nonce - 1 AS nonce`;
      if (!r) return null;
      const nonce = BigInt(r.nonce);
      const n = await db.$executeRaw`
        UPDATE transactions SET nonce = ${nonce}
        WHERE id = ${tx.id} AND lease_owner = ${rt.instanceId} AND lease_until = ${tx.leaseUntil?.toISOString() ?? null}::timestamp(3)`;
      if (n === 0) throw new LeaseLost();
      return nonce;
    })
    .catch((e) => {
      if (e instanceof LeaseLost) return null;
      throw e;
    });
}

class LeaseLost extends Error {}

/** Final rows of the relayer at `nonce` give it up (a row that ended without using its number frees it for another). */
export async function freeNonceOfFinal(rt: Runtime, relayerId: string, nonce: bigint): Promise<void> {
  await rt.db.prisma.$executeRaw`UPDATE transactions SET nonce = NULL
    WHERE relayer_id = ${relayerId} AND nonce = ${nonce} AND status IN ('confirmed', 'failed', 'expired', 'canceled')`;
}

export function publishTransaction(rt: Runtime, tx: Transaction) {
  rt.notifications.events.publish('transaction:relayer', tx.relayerId, tx);
  rt.notifications.events.publish('transaction:id', tx.id, tx);
}

/**
 * How each field a step may change travels in saveTransactions' recordset (its type there) and
 * how it is written to its column.
 */
const PATCHABLE: Record<keyof TransactionPatch, [type: string, write?: (v: string) => string]> = {
  status: ['text', (v) => `${v}::"TransactionStatus"`],
  statusReason: ['text'],
  sentAt: ['text', (v) => `${v}::timestamp(3)`],
  confirmedAt: ['text', (v) => `${v}::timestamp(3)`],
  hash: ['text'],
  hashes: ['jsonb', (v) => `ARRAY(SELECT jsonb_array_elements_text(${v}))`],
  nonce: ['text', (v) => `${v}::bigint`],
  gasLimit: ['text', (v) => `${v}::bigint`],
  gasPrice: ['text'],
  maxFeePerGas: ['text'],
  maxPriorityFeePerGas: ['text'],
  chainState: ['text', toJson],
  signature: ['text', toJson],
  attempts: ['int'],
  dueAt: ['text', (v) => `${v}::timestamp(3)`],
  to: ['text'],
  value: ['text'],
  data: ['text'],
  speed: ['text', (v) => `${v}::"Speed"`],
  validUntil: ['text', (v) => `${v}::timestamp(3)`],
  request: ['text', toJson],
};

/** The UPDATEs of saveTransactions made so far, by their set of changed fields (a handful of sets occur). */
const SAVE_SQL = slot('save statements', () => new Map<string, string>());
function saveStatement(rt: Runtime, fields: (keyof TransactionPatch)[]): string {
  const saveSql = rt.state(SAVE_SQL);
  const key = fields.join(',');
  let sql = saveSql.get(key);
  if (!sql) {
    const types = fields.map((f) => `"${f}" ${PATCHABLE[f][0]}`);
    const sets = fields.map((f) => `"${columnOf(f)}" = ${(PATCHABLE[f][1] ?? ((v) => v))(`v."${f}"`)}`);
    sql = `UPDATE transactions t SET ${[...sets, `updated_at = v.updated_at::timestamp(3)`].join(', ')},
        lease_owner = CASE WHEN v.release THEN NULL ELSE t.lease_owner END,
        lease_until = CASE WHEN v.release THEN NULL ELSE t.lease_until END
      FROM jsonb_to_recordset($1::jsonb) AS v(id text, lease_until_was text, release boolean, updated_at text${types.map((t) => `, ${t}`).join('')})
      WHERE t.id = v.id AND t.lease_owner = $2 AND t.lease_until = v.lease_until_was::timestamp(3)
      RETURNING t.id, (SELECT notification_id FROM relayers r WHERE r.id = t.relayer_id) AS "notificationId"`;
    saveSql.set(key, sql);
  }
  return sql;
}

/** Rows written by one UPDATE of saveTransactions at most. */
const MAX_SAVED = 2_000;

interface SaveQueue {
  running: boolean;
  waiting: { owner: string; changes: TransactionChange[]; resolve(saved: Map<string, Transaction>): void; reject(e: unknown): void }[];
}

/** Saves of transaction rows waiting to be written together. */
const SAVES = slot('saves', (): SaveQueue => ({ running: false, waiting: [] }));

/**
 * Saves a batch of leased rows in one database transaction and a single UPDATE
 * of the columns the batch changes: each row is written only if `owner` still holds the lease it
 * was read under (a worker that lost its lease changes nothing). Status changes queue their
 * webhook events and are published. Only a lease holder changes a row's
 * status, so the status it had is the one read with the lease. Returns the rows as written, by id;
 * a row missing from it was not written.
 *
 * Group commit: saves asked for while one is being written are written together next, in one
 * statement (with 100 relayers, a step's rows are 100 groups, each saved on its own: the
 * statements, not the rows, were the database's work). Each caller's rows are written before its
 * promise settles, as before; a lone save is written at once.
 */
export function saveTransactions(rt: Runtime, owner: string, changes: TransactionChange[]): Promise<Map<string, Transaction>> {
  if (changes.length === 0) return Promise.resolve(new Map());
  const q = rt.state(SAVES);
  return new Promise((resolve, reject) => {
    q.waiting.push({ owner, changes, resolve, reject });
    if (!q.running) void drainSaves(rt, q);
  });
}

async function drainSaves(rt: Runtime, q: SaveQueue) {
  q.running = true;
  while (q.waiting.length > 0) {
    // The same owner, each row once, and not too many rows.
    const ids = new Set<string>();
    let n = 0;
    let rows = 0;
    for (const w of q.waiting) {
      if (w.owner !== q.waiting[0].owner || (n > 0 && rows + w.changes.length > MAX_SAVED) || w.changes.some((c) => ids.has(c.before.id))) break;
      for (const c of w.changes) ids.add(c.before.id);
      rows += w.changes.length;
      n++;
    }
    const batch = q.waiting.splice(0, n);
    try {
      const saved = await saveNow(rt, batch[0].owner, batch.length === 1 ? batch[0].changes : batch.flatMap((w) => w.changes));
      for (const w of batch) w.resolve(saved);
    } catch (e) {
      if (batch.length === 1) batch[0].reject(e);
      // One failing save does not fail the others: each is written on its own.
      else for (const w of batch) await saveNow(rt, w.owner, w.changes).then(w.resolve, w.reject);
    }
  }
  q.running = false;
}

async function saveNow(rt: Runtime, owner: string, changes: TransactionChange[]): Promise<Map<string, Transaction>> {
  const saved = new Map<string, Transaction>();
  const now = new Date();
  const rows = changes.map((c) => {
    const after: Transaction = {
      ...c.before,
      ...c.patch,
      updatedAt: now,
      leaseOwner: c.release ? null : c.before.leaseOwner,
      leaseUntil: c.release ? null : c.before.leaseUntil,
    };
    return { change: c, after };
  });
  const fields = (Object.keys(PATCHABLE) as (keyof TransactionPatch)[]).filter((f) => changes.some((c) => c.patch[f] !== undefined));
  // Each row's values set one by one (see insertedRow).
  const values = rows.map(({ change, after }) => {
    const row: Record<string, unknown> = { id: after.id, lease_until_was: change.before.leaseUntil, release: change.release, updated_at: now };
    for (const f of fields) row[f] = recordValue(after[f], PATCHABLE[f][1] === toJson);
    return row;
  });
  const save = { sql: saveStatement(rt, fields), params: [JSON.stringify(values), owner], prepare: true };
  // Without a change of status there is nothing to report, and without a notification no one to
  // report it to: the UPDATE alone, committed with it.
  const silent = rows.every(({ change, after }) => change.before.status === after.status);
  const events = await writeReporting(rt, save, silent || { unlessSet: 'notificationId' }, (returned) => {
    // Each written row comes back with its relayer's notification, for the deliveries.
    const notificationOf = new Map((returned as { id: string; notificationId: string | null }[]).map((w) => [w.id, w.notificationId]));
    const reported: Transaction[] = [];
    for (const { change, after } of rows) {
      if (!notificationOf.has(after.id)) continue;
      saved.set(after.id, after);
      const old = change.before.status;
      if (old === after.status) continue;
      for (const status of (change.via ?? []).filter((s) => s !== old)) {
        reported.push({ ...after, status, ...(status === 'confirmed' ? {} : { confirmedAt: null }) });
      }
      reported.push(after);
    }
    const deliveries = transactionUpdates(
      rt.families,
      reported.map((transaction) => ({ relayer: { id: transaction.relayerId, notificationId: notificationOf.get(transaction.id)! }, transaction })),
    );
    return { result: reported, deliveries };
  });
  for (const row of saved.values()) remember(rt, row);
  for (const tx of events) publishTransaction(rt, tx);
  rt.metrics.statusChanged(events);
  return saved;
}

// ---- reads of the API: hand-written SQL on the database handle, rows parsed as Prisma's (Prisma's
// findUnique cost about half the database's own work again on a one-row read, $queryRawUnsafe a
// sixth) -------------------------------------------------------------------------------------------

const BY_ID = `SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE id = $1`;

/** One transaction by id, or null. */
export async function readTransaction(rt: Runtime, id: string): Promise<Transaction | null> {
  const [row] = await rt.db.read<Transaction>(BY_ID, [id], { prepare: true });
  return row ?? null;
}

const listWhere = (status: Transaction['status'] | null | undefined) => (status ? 'relayer_id = $1 AND status = $2::"TransactionStatus"' : 'relayer_id = $1');

/** The list's order, newest first, and the same order reversed. */
export const NEWEST = 'created_at DESC, id DESC';
const OLDEST = 'created_at, id';

/**
 * A page of a relayer's transactions (optionally of one status), newest first. A deep page is found
 * in the list's index alone (relayer_id[, status], created_at, id holds every column the order and
 * the filter read: an index-only scan) and counted from the nearer end of the list, whose length
 * the counters give (transaction_counts, read in the same statement so both see the same rows);
 * only the page's own rows are then read whole. Page 5,000 of 100,000 thus costs what page 1 does,
 * and the middle page of a list skips half of its index entries, not its rows. Pages of a relayer's
 * whole list are found from marks along it instead where this runtime has them (pages.ts).
 */
export function readPageFromEnds(
  rt: Runtime,
  relayerId: string,
  status: Transaction['status'] | null | undefined,
  skip: number,
  take: number,
): Promise<Transaction[]> {
  if (skip === 0) return readAfter(rt, relayerId, status, null, take);
  const params = status ? [relayerId, status] : [relayerId];
  const where = listWhere(status);
  // The skip as bigint: a page the API takes (page and per_page are int32) may lie past 2^31 rows,
  // and 2 * skip overflows int from 2^30.
  const [s, t] = [`$${params.length + 1}::bigint`, `$${params.length + 2}::int`];
  // Each branch runs only when its one-time condition holds: the other is never scanned.
  const n = '(SELECT n FROM total)';
  return rt.db.read<Transaction>(
    `WITH total AS MATERIALIZED (SELECT coalesce(sum(n), 0)::int AS n FROM transaction_counts WHERE ${where}),
     ids AS (
       (SELECT id FROM transactions WHERE ${where} AND 2 * ${s} + ${t} <= ${n} ORDER BY ${NEWEST} OFFSET ${s} LIMIT ${t})
       UNION ALL
       (SELECT id FROM transactions WHERE ${where} AND 2 * ${s} + ${t} > ${n} ORDER BY ${OLDEST}
         OFFSET greatest(${n} - ${s} - ${t}, 0) LIMIT greatest(least(${t}, ${n} - ${s}), 0)))
     SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE id IN (SELECT id FROM ids) ORDER BY ${NEWEST}`,
    [...params, skip, take],
    { prepare: true },
  );
}

/**
 * Up to `take` of a relayer's transactions (optionally of one status) that come after `after` in the
 * list's order, newest first: a seek in the list's index, as fast at any depth. Rows added since
 * `after` was read are newer and never shift what follows it.
 */
export function readAfter(
  rt: Runtime,
  relayerId: string,
  status: Transaction['status'] | null | undefined,
  after: Position | null,
  take: number,
): Promise<Transaction[]> {
  const params: unknown[] = status ? [relayerId, status] : [relayerId];
  let where = listWhere(status);
  if (after) {
    where += ` AND (created_at, id) < ($${params.length + 1}::timestamp(3), $${params.length + 2}::text)`;
    params.push(after.createdAt.toISOString().slice(0, -1), after.id);
  }
  return rt.db.read<Transaction>(
    `SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE ${where} ORDER BY ${NEWEST} LIMIT $${params.length + 1}`,
    [...params, take],
    {
      prepare: true,
    },
  );
}

/**
 * How many transactions the relayer has (optionally of one status), from the counters the database
 * keeps per relayer and status (table transaction_counts): as cheap at a million rows as at ten.
 */
export async function countTransactions(rt: Runtime, relayerId: string, status: Transaction['status'] | null | undefined): Promise<number> {
  const [{ n }] = await rt.db.read<{ n: number }>(
    `SELECT coalesce(sum(n), 0)::int AS n FROM transaction_counts WHERE ${listWhere(status)}`,
    status ? [relayerId, status] : [relayerId],
    { prepare: true },
  );
  return n;
}
