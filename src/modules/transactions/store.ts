import { columnOf, recordsetJson } from '../../db/columns.js';
import type { Prisma, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../../runtime.js';
import { emitTransactionUpdate, emitTransactionUpdates, writeWithEvents } from '../notifications/events.js';

/**
 * The one way a transaction changes after it is accepted: the row, the webhook delivery of a
 * status change and the live event are written together, so no change goes unreported.
 * `expectStatus` makes the change conditional (another worker may have moved it on).
 */
export async function updateTransaction(
  rt: Runtime,
  id: string,
  data: Prisma.TransactionUpdateInput,
  opts: { expectStatus?: Transaction['status'][] } = {},
): Promise<Transaction | null> {
  const result = await writeWithEvents(rt, async (db) => {
    const before = await db.transaction.findUnique({ where: { id }, select: { status: true, relayer: { select: { id: true, notificationId: true } } } });
    if (!before) return null;
    if (opts.expectStatus && !opts.expectStatus.includes(before.status)) return null;
    const after = await db.transaction.update({ where: { id }, data });
    const changed = after.status !== before.status;
    if (changed) await emitTransactionUpdate(db, before.relayer, after);
    return { after, changed };
  });
  if (result?.changed) publishTransaction(rt, result.after);
  return result?.after ?? null;
}

export function publishTransaction(rt: Runtime, tx: Transaction) {
  rt.pubsub.publish('transaction:relayer', tx.relayerId, tx);
  rt.pubsub.publish('transaction:id', tx.id, tx);
}

/** The columns a pipeline step may change (identity, ownership and idempotency never change). */
export type TransactionPatch = Partial<
  Pick<
    Transaction,
    | 'status' | 'statusReason' | 'sentAt' | 'confirmedAt' | 'hash' | 'hashes' | 'nonce' | 'gasLimit' | 'gasPrice' | 'maxFeePerGas'
    | 'maxPriorityFeePerGas' | 'chainState' | 'signature' | 'attempts' | 'dueAt' | 'to' | 'value' | 'data' | 'speed' | 'validUntil' | 'request'
  >
>;

export interface TransactionChange {
  /** The row as read while holding its lease. */
  before: Transaction;
  patch: TransactionPatch;
  /** Statuses passed through on the way to patch.status, each reported as its own event, in order. */
  via?: Transaction['status'][];
  /** Give the lease back (the row is due again at its dueAt); false keeps holding it. */
  release: boolean;
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
  chainState: ['jsonb'],
  signature: ['jsonb'],
  attempts: ['int'],
  dueAt: ['text', (v) => `${v}::timestamp(3)`],
  to: ['text'],
  value: ['text'],
  data: ['text'],
  speed: ['text', (v) => `${v}::"Speed"`],
  validUntil: ['text', (v) => `${v}::timestamp(3)`],
  request: ['jsonb'],
};

/** The UPDATE of saveTransactions for one set of changed fields (a handful of sets occur). */
const saveSql = new Map<string, string>();
function saveStatement(fields: (keyof TransactionPatch)[]): string {
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
      RETURNING t.id`;
    saveSql.set(key, sql);
  }
  return sql;
}

/**
 * updateTransaction for a batch of leased rows, in one database transaction and a single UPDATE
 * of the columns the batch changes: each row is written only if `owner` still holds the lease it
 * was read under (a worker that lost its lease changes nothing). Status changes queue their
 * webhook events and are published, as updateTransaction does. Only a lease holder changes a row's
 * status, so the status it had is the one read with the lease. Returns the rows as written, by id;
 * a row missing from it was not written.
 */
export async function saveTransactions(rt: Runtime, owner: string, changes: TransactionChange[]): Promise<Map<string, Transaction>> {
  const saved = new Map<string, Transaction>();
  if (changes.length === 0) return saved;
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
  const values = rows.map(({ change, after }) => ({
    id: after.id,
    lease_until_was: change.before.leaseUntil,
    release: change.release,
    updated_at: now,
    ...Object.fromEntries(fields.map((f) => [f, after[f]])),
  }));
  const events = await writeWithEvents(rt, async (db) => {
    const written = await db.$queryRawUnsafe<{ id: string }[]>(saveStatement(fields), recordsetJson(values), owner);
    const writtenIds = new Set(written.map((w) => w.id));
    const reported: Transaction[] = [];
    for (const { change, after } of rows) {
      if (!writtenIds.has(after.id)) continue;
      saved.set(after.id, after);
      const old = change.before.status;
      if (old === after.status) continue;
      for (const status of (change.via ?? []).filter((s) => s !== old)) {
        reported.push({ ...after, status, ...(status === 'confirmed' ? {} : { confirmedAt: null }) });
      }
      reported.push(after);
    }
    if (reported.length > 0) {
      const relayerIds = [...new Set(reported.map((t) => t.relayerId))];
      const relayers = await db.relayer.findMany({ where: { id: { in: relayerIds } }, select: { id: true, notificationId: true } });
      const byId = new Map(relayers.map((r) => [r.id, r]));
      await emitTransactionUpdates(
        db,
        reported.flatMap((transaction) => {
          const relayer = byId.get(transaction.relayerId);
          return relayer ? [{ relayer, transaction }] : [];
        }),
      );
    }
    return reported;
  });
  for (const tx of events) publishTransaction(rt, tx);
  return saved;
}
