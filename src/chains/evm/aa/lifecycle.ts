// An operation's status changes as the rest of the service sees them: live events at every change
// (accepted, submitted, included, failed, back to pending), and a webhook for inclusion and
// failure, queued in the database transaction that makes the change.
import type { Relayer } from '../../../generated/prisma/client.js';
import { emitUserOperationUpdate, writeWithEvents } from '../../../core/notifications/events.js';
import type { Runtime } from '../../../core/runtime.js';
import { markFailed, markIncludedMany, markPending, type Only, type UserOpReceipt, type UserOpRow } from './store.js';

export function publishOps(rt: Runtime, rows: UserOpRow[]): void {
  for (const row of rows) {
    rt.notifications.events.publish('userOperation:relayer', row.relayerId, row);
    rt.notifications.events.publish('userOperation:hash', row.hash, row);
  }
}

export type OpChange =
  | { id: string; to: 'included'; receipt: UserOpReceipt }
  | { id: string; to: 'failed'; reason: string; only?: Only }
  | { id: string; to: 'pending'; only?: Extract<Only, { status: 'submitted' }> };

/**
 * Makes the changes in one database transaction, with the webhook of each inclusion or failure;
 * then publishes the rows changed. A change to a row no longer in the status it comes from (an
 * operation already ended) does nothing.
 */
export async function changeOps(rt: Runtime, relayer: Pick<Relayer, 'id' | 'notificationId'>, changes: OpChange[]): Promise<UserOpRow[]> {
  if (changes.length === 0) return [];
  const rows = await writeWithEvents(rt, async (out) => {
    const db = { prisma: out.db };
    // A mined bundle's inclusions in one statement (a statement each was most of settling's time).
    const changed = await markIncludedMany(
      db,
      changes.flatMap((c) => (c.to === 'included' ? [{ id: c.id, receipt: c.receipt }] : [])),
    );
    for (const c of changes) {
      if (c.to === 'included') continue;
      const n = c.to === 'failed' ? await markFailed(db, [c.id], c.reason, c.only) : await markPending(db, [c.id], c.only);
      if (n) changed.push(c.id);
    }
    const rows = await out.db.userOperation.findMany({ where: { id: { in: changed } } });
    for (const row of rows) if (row.status === 'included' || row.status === 'failed') await emitUserOperationUpdate(out, relayer, row);
    return rows;
  });
  publishOps(rt, rows);
  return rows;
}
