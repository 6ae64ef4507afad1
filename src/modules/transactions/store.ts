import type { Prisma, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../../runtime.js';
import { emitTransactionUpdate } from '../notifications/events.js';

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
    return { after, changed };
  });
  if (result?.changed) publishTransaction(rt, result.after);
  return result?.after ?? null;
}

export function publishTransaction(rt: Runtime, tx: Transaction) {
  rt.pubsub.publish('transaction:relayer', tx.relayerId, tx);
  rt.pubsub.publish('transaction:id', tx.id, tx);
}
