import type { Prisma, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../../runtime.js';
import { emitTransactionUpdate, emitTransactionUpdates } from '../notifications/events.js';

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
  const result = await rt.prisma.$transaction(async (db) => {
    const before = await db.transaction.findUnique({ where: { id }, select: { status: true, relayer: { select: { id: true, notificationId: true } } } });
    if (!before) return null;
    if (opts.expectStatus && !opts.expectStatus.includes(before.status)) return null;
    const after = await db.transaction.update({ where: { id }, data });
    const changed = after.status !== before.status;
    if (changed) await emitTransactionUpdate(db, before.relayer, after);
    return { after, changed, notified: changed && !!before.relayer.notificationId };
  });
  if (result?.changed) publishTransaction(rt, result.after);
  if (result?.notified) rt.wakeDeliveries();
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

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

/**
 * updateTransaction for a batch of leased rows, in one database transaction and a single UPDATE:
 * each row is written only if `owner` still holds the lease it was read under (a worker that lost
 * its lease changes nothing). Status changes queue their webhook events and are published, as
 * updateTransaction does. Returns the rows as written, by id; a row missing from it was not written.
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
  const values = rows.map(({ change, after }) => ({
    id: after.id,
    lease_until_was: iso(change.before.leaseUntil),
    release: change.release,
    status: after.status,
    status_reason: after.statusReason,
    sent_at: iso(after.sentAt),
    confirmed_at: iso(after.confirmedAt),
    hash: after.hash,
    hashes: after.hashes,
    nonce: after.nonce?.toString() ?? null,
    gas_limit: after.gasLimit?.toString() ?? null,
    gas_price: after.gasPrice,
    max_fee_per_gas: after.maxFeePerGas,
    max_priority_fee_per_gas: after.maxPriorityFeePerGas,
    chain_state: after.chainState,
    signature: after.signature,
    attempts: after.attempts,
    due_at: iso(after.dueAt),
    to: after.to,
    value: after.value,
    data: after.data,
    speed: after.speed,
    valid_until: iso(after.validUntil),
    request: after.request,
    updated_at: iso(now),
  }));
  let notified = false;
  const events = await rt.prisma.$transaction(async (db) => {
    const written = await db.$queryRawUnsafe<{ id: string; old_status: Transaction['status'] }[]>(
      `WITH v AS (
         SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(
           id text, lease_until_was text, release boolean, status text, status_reason text, sent_at text, confirmed_at text,
           hash text, hashes jsonb, nonce text, gas_limit text, gas_price text, max_fee_per_gas text, max_priority_fee_per_gas text,
           chain_state jsonb, signature jsonb, attempts int, due_at text, "to" text, value text, data text, speed text,
           valid_until text, request jsonb, updated_at text)
       ), old AS (
         SELECT t.id, t.status FROM transactions t JOIN v ON v.id = t.id
         WHERE t.lease_owner = $2 AND t.lease_until = v.lease_until_was::timestamp(3)
         FOR UPDATE OF t
       )
       UPDATE transactions t SET
         status = v.status::"TransactionStatus", status_reason = v.status_reason,
         sent_at = v.sent_at::timestamp(3), confirmed_at = v.confirmed_at::timestamp(3),
         hash = v.hash, hashes = ARRAY(SELECT jsonb_array_elements_text(v.hashes)),
         nonce = v.nonce::bigint, gas_limit = v.gas_limit::bigint, gas_price = v.gas_price,
         max_fee_per_gas = v.max_fee_per_gas, max_priority_fee_per_gas = v.max_priority_fee_per_gas,
         chain_state = v.chain_state, signature = v.signature, attempts = v.attempts, due_at = v.due_at::timestamp(3),
         "to" = v."to", value = v.value, data = v.data, speed = v.speed::"Speed", valid_until = v.valid_until::timestamp(3),
         request = v.request, updated_at = v.updated_at::timestamp(3),
         lease_owner = CASE WHEN v.release THEN NULL ELSE t.lease_owner END,
         lease_until = CASE WHEN v.release THEN NULL ELSE t.lease_until END
       FROM v JOIN old ON old.id = v.id
       WHERE t.id = v.id
       RETURNING t.id, old.status AS old_status`,
      JSON.stringify(values, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)),
      owner,
    );
    const oldStatus = new Map(written.map((w) => [w.id, w.old_status]));
    const reported: Transaction[] = [];
    for (const { change, after } of rows) {
      const old = oldStatus.get(after.id);
      if (old === undefined) continue;
      saved.set(after.id, after);
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
      notified = relayers.some((r) => r.notificationId);
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
  if (notified) rt.wakeDeliveries();
  return saved;
}
