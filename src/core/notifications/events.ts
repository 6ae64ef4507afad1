import { randomUUID } from 'node:crypto';
import type { Prisma, Relayer, Transaction, UserOperation } from '../../generated/prisma/client.js';
import type { Commit, Statement, TransactionOptions } from '../../db/client.js';
import { CACHED_LOOKUPS } from '../../db/plans.js';
import type { Runtime } from '../runtime.js';
import type { FamilySpecs } from '../registry.js';
import { transactionRecord } from '../transactions/record.js';
import { writeJson } from '../../lib/json.js';

/** A database transaction whose changes may queue webhook deliveries, and whether they did. */
export interface Outbox {
  db: Prisma.TransactionClient;
  queued: boolean;
}

/**
 * One database transaction whose changes may queue webhook deliveries (the emit functions below):
 * once it has committed, the sender is woken for them.
 */
export async function writeWithEvents<T>(rt: Runtime, fn: (out: Outbox) => Promise<T>): Promise<T> {
  let out: Outbox | undefined;
  const result = await rt.db.prisma.$transaction((db) => fn((out = { db, queued: false })));
  if (out?.queued) rt.notifications.sender.to?.wake();
  return result;
}

/**
 * writeWithEvents for hand-written SQL on the database handle: `write`, then in the same database
 * transaction the deliveries `report` makes of its rows; the sender is woken once it has committed.
 * `commit` says when `write` commits in its own round trip: true when nothing it writes can be
 * reported, or when none of its rows names a notification (`unlessSet`, the column that does). A
 * write that committed takes no deliveries after it: the transaction refuses a further batch.
 * `opts` go to the database transaction.
 */
export async function writeReporting<T>(
  rt: Pick<Runtime, 'db' | 'notifications'>,
  write: Statement,
  commit: Commit,
  report: (rows: Record<string, unknown>[]) => { result: T; deliveries: Statement | null },
  opts?: TransactionOptions,
): Promise<T> {
  let queued = false;
  const result = await rt.db.transaction(async (tx) => {
    const [rows] = await tx.run([write], { commit });
    const { result, deliveries } = report(rows);
    if (deliveries) {
      await tx.run([deliveries], { commit: true });
      queued = true;
    }
    return result;
  }, opts);
  if (queued) rt.notifications.sender.to?.wake();
  return result;
}

/**
 * Queues a webhook delivery for the relayer's notification, inside the caller's database
 * transaction: the delivery exists if and only if the change it reports was committed.
 */
async function enqueue(out: Outbox, notificationId: string | null, relayerId: string, transactionId: string | null, event: string, payload: object) {
  if (!notificationId) return;
  const id = randomUUID();
  const body = writeJson({ id, event, payload, timestamp: new Date().toISOString() });
  await out.db.delivery.create({ data: { id, notificationId, relayerId, transactionId, event, body } });
  out.queued = true;
}

export async function emitTransactionUpdate(families: FamilySpecs, out: Outbox, relayer: Pick<Relayer, 'id' | 'notificationId'>, transaction: Transaction) {
  await enqueue(out, relayer.notificationId, relayer.id, transaction.id, 'transaction_update', {
    payload_type: 'transaction',
    ...transactionRecord(families, transaction),
  });
}

/**
 * The transaction_update deliveries of many changes as one INSERT (rows in the order given: their
 * seq orders the sends), to run in the database transaction that writes the changes; null when no
 * change has a notification to go to. After that transaction commits, wake the sender.
 */
export function transactionUpdates(
  families: FamilySpecs,
  updates: { relayer: Pick<Relayer, 'id' | 'notificationId'>; transaction: Transaction }[],
): Statement | null {
  const data = updates
    .filter((u) => u.relayer.notificationId)
    .map(({ relayer, transaction }, n) => {
      const id = randomUUID();
      const event = 'transaction_update';
      const payload = { payload_type: 'transaction', ...transactionRecord(families, transaction) };
      const body = writeJson({ id, event, payload, timestamp: new Date().toISOString() });
      return { id, notificationId: relayer.notificationId!, relayerId: relayer.id, transactionId: transaction.id, event, body, n };
    });
  if (data.length === 0) return null;
  return {
    sql: `INSERT INTO deliveries (id, notification_id, relayer_id, transaction_id, event, body)
       SELECT id, "notificationId", "relayerId", "transactionId", event, body
       FROM jsonb_to_recordset($1::jsonb) AS x(id text, "notificationId" text, "relayerId" text, "transactionId" text, event text, body text, n int),
         ${CACHED_LOOKUPS}
       ORDER BY n`,
    params: [JSON.stringify(data)],
  };
}

export async function emitRelayerState(out: Outbox, relayer: Relayer) {
  await enqueue(out, relayer.notificationId, relayer.id, null, 'relayer_state_update', {
    payload_type: 'relayer',
    id: relayer.id,
    name: relayer.name,
    network: relayer.network,
    network_type: relayer.networkType,
    address: relayer.address,
    paused: relayer.paused,
    system_disabled: relayer.systemDisabled,
    disabled_reason: relayer.disabledReason ?? null,
  });
}

/** An ERC-4337 operation as webhooks report it (user_operation_update). */
export const userOperationPayload = (op: UserOperation) => ({
  payload_type: 'user_operation',
  id: op.id,
  relayer_id: op.relayerId,
  hash: op.hash,
  chain_id: op.chainId,
  entry_point: op.entryPoint,
  sender: op.sender,
  nonce: op.nonce,
  status: op.status,
  status_reason: op.statusReason,
  transaction_id: op.transactionId,
  receipt: op.receipt ?? null,
  created_at: op.createdAt.toISOString(),
  updated_at: op.updatedAt.toISOString(),
});

/** Queues the user_operation_update delivery of an operation's change (its inclusion or failure) in the caller's database transaction. */
export async function emitUserOperationUpdate(out: Outbox, relayer: Pick<Relayer, 'id' | 'notificationId'>, op: UserOperation) {
  await enqueue(out, relayer.notificationId, relayer.id, op.transactionId, 'user_operation_update', userOperationPayload(op));
}
