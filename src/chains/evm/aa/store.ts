// The durable record of UserOperations a relayer's bundler accepted: one row per (chain, EntryPoint,
// hash), whatever the number of times or instances it was sent to.
import type { Prisma, UserOperation as UserOpRow } from '../../../generated/prisma/client.js';
import type { Database } from '../../../db/client.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

/** The database, or a database transaction (Prisma's interactive one) that writes with others. */
export type Db = { prisma: Pick<Prisma.TransactionClient, 'userOperation'> };

export type { UserOpRow };

export type NewUserOp = {
  relayerId: string;
  chainId: number;
  entryPoint: string;
  hash: string;
  sender: string;
  nonce: bigint;
  operation: Record<string, unknown>;
  /** The earliest end of its validity windows (account's, paymaster's); null: none ends. */
  validUntil?: Date | null;
};

/**
 * Keeps an accepted operation. The same operation again (by any instance, at once or later) finds
 * the first row: `created` tells which. Hashes are stored lower-case, as clients write them.
 */
export async function keepUserOp(db: Db, op: NewUserOp): Promise<{ row: UserOpRow; created: boolean }> {
  const key = { chainId: op.chainId, entryPoint: op.entryPoint.toLowerCase(), hash: op.hash.toLowerCase() };
  // One statement when it is new (the usual case); the first row read back when it is not.
  try {
    const row = await db.prisma.userOperation.create({
      data: {
        ...key,
        relayerId: op.relayerId,
        sender: op.sender,
        nonce: op.nonce.toString(),
        operation: op.operation as never,
        validUntil: op.validUntil ?? null,
      },
    });
    return { row, created: true };
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
  }
  const row = await db.prisma.userOperation.findUnique({ where: { chainId_entryPoint_hash: key } });
  if (!row) throw new Error(`user operation ${key.hash} vanished after it was written`);
  return { row, created: false };
}

export function userOpByHash(db: Db, chainId: number, hash: string): Promise<UserOpRow | null> {
  return db.prisma.userOperation.findFirst({ where: { chainId, hash: hash.toLowerCase() } });
}

/** A relayer's operations waiting for a bundle, oldest first. */
export function pendingUserOps(db: Db, relayerId: string, entryPoint: string, limit: number): Promise<UserOpRow[]> {
  return db.prisma.userOperation.findMany({
    where: { relayerId, entryPoint: entryPoint.toLowerCase(), status: 'pending' },
    orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
    take: limit,
  });
}

/** Puts pending operations in the bundle transaction `transactionId`; those no longer pending are left. */
export async function markSubmitted(db: Db, ids: string[], transactionId: string): Promise<number> {
  const { count } = await db.prisma.userOperation.updateMany({ where: { id: { in: ids }, status: 'pending' }, data: { status: 'submitted', transactionId } });
  return count;
}

/**
 * Which rows a change may move, beyond its usual statuses: those still pending (bundling drops
 * operations it read as pending: if another instance bundled one since, its bundle decides), or
 * still submitted in the bundle settled (not one another instance has put it in since).
 */
export type Only = { status: 'pending' } | { status: 'submitted'; transactionId: string | null };

const where = (ids: string[], only: Only | undefined, statuses: ('pending' | 'submitted')[]) =>
  only ? { id: { in: ids }, ...only } : { id: { in: ids }, status: { in: statuses } };

/** Ends operations that will not be included, with why. Included ones stay included. */
export async function markFailed(db: Db, ids: string[], reason: string, only?: Only): Promise<number> {
  const { count } = await db.prisma.userOperation.updateMany({
    where: where(ids, only, ['pending', 'submitted']),
    data: { status: 'failed', statusReason: reason },
  });
  return count;
}

/** Operations of a bundle that provably did not land (their nonce unused) wait for the next one. */
export async function markPending(db: Db, ids: string[], only?: Extract<Only, { status: 'submitted' }>): Promise<number> {
  const { count } = await db.prisma.userOperation.updateMany({
    where: where(ids, only, ['submitted']),
    data: { status: 'pending', transactionId: null, statusReason: null },
  });
  return count;
}

/** A per-sender limit: at most `max` operations of a sender kept by the relayer since `since`. */
export type SenderLimit = { max: number; since: Date };

// Whoever counts a sender's operations to add one holds this lock (per relayer and sender, to the
// end of its transaction): the count and the write that follows are exact across instances. The
// count is a statement of its own after the lock, so that it sees what the previous holder committed.
const LOCK_SENDER = `SELECT pg_advisory_xact_lock(hashtextextended($1, 4337)) AS locked`;
const utc = (n: number) => `$${n}::timestamptz AT TIME ZONE 'UTC'`;
const SENT_SINCE = (r: number, s: number, t: number, except?: number) =>
  `(SELECT count(*) FROM user_operations WHERE relayer_id = $${r} AND sender = $${s} AND created_at >= ${utc(t)}${except ? ` AND id <> $${except}` : ''})`;
const INSERT_WITHIN = `INSERT INTO user_operations
    (id, relayer_id, chain_id, entry_point, hash, sender, nonce, operation, valid_until, created_at, updated_at)
  SELECT $1, $2, $3, $4, $5, $6, $7, $8::json, ${utc(9)}, ${utc(10)}, ${utc(10)}
  WHERE ${SENT_SINCE(2, 6, 11)} < $12
  ON CONFLICT (chain_id, entry_point, hash) DO NOTHING RETURNING id`;
const AFTER_INSERT = `SELECT ${SENT_SINCE(1, 2, 3)} AS sent,
  (SELECT id FROM user_operations WHERE chain_id = $4 AND entry_point = $5 AND hash = $6) AS existing`;
const lockKey = (relayerId: string, sender: string) => `${relayerId}:${sender.toLowerCase()}`;

/**
 * keepUserOp under the per-sender limit: counted and written in one database transaction under the
 * sender's lock, so that concurrent sends (on any instance) never keep more than `limit.max`.
 * `throttled` is the count that refused it.
 */
export async function keepUserOpWithin(db: Database, op: NewUserOp, limit: SenderLimit): Promise<{ row: UserOpRow; created: boolean } | { throttled: number }> {
  const key = { chainId: op.chainId, entryPoint: op.entryPoint.toLowerCase(), hash: op.hash.toLowerCase() };
  const now = new Date().toISOString();
  const [, inserted, [after]] = await db.transaction((tx) =>
    tx.run(
      [
        { sql: LOCK_SENDER, params: [lockKey(op.relayerId, op.sender)] },
        {
          sql: INSERT_WITHIN,
          params: [
            crypto.randomUUID(),
            op.relayerId,
            key.chainId,
            key.entryPoint,
            key.hash,
            op.sender,
            op.nonce.toString(),
            JSON.stringify(op.operation),
            op.validUntil?.toISOString() ?? null,
            now,
            limit.since.toISOString(),
            limit.max,
          ],
        },
        { sql: AFTER_INSERT, params: [op.relayerId, op.sender, limit.since.toISOString(), key.chainId, key.entryPoint, key.hash] },
      ],
      { commit: true },
    ),
  );
  const id = (inserted![0]?.id ?? after!.existing) as string | null;
  if (!id) return { throttled: Number(after!.sent) };
  const row = await db.prisma.userOperation.findUnique({ where: { id } });
  if (!row) throw new Error(`user operation ${key.hash} vanished after it was written`);
  return { row, created: !!inserted![0] };
}

const REVIVE = (limited: boolean) => `UPDATE user_operations SET status = 'pending', relayer_id = $2, operation = $3::json,
    valid_until = ${utc(4)}, transaction_id = NULL, receipt = NULL, status_reason = NULL, updated_at = now() AT TIME ZONE 'UTC'
  WHERE id = $1 AND status = 'failed'${limited ? ` AND ${SENT_SINCE(2, 5, 6, 1)} < $7` : ''} RETURNING id`;

/**
 * A failed operation sent again and accepted again: back to pending, the same row (its hash is its
 * key). Only from failed, so of two instances reviving it at once one does. Under `limit` (the row
 * itself not counted), refused like a new operation: `throttled`. `revived` null: it was not failed anymore.
 */
export async function reviveUserOp(
  db: Database,
  id: string,
  op: Pick<NewUserOp, 'relayerId' | 'sender' | 'operation' | 'validUntil'>,
  limit?: SenderLimit,
): Promise<{ revived: UserOpRow | null } | { throttled: number }> {
  const base = [id, op.relayerId, JSON.stringify(op.operation), op.validUntil?.toISOString() ?? null];
  const statements = limit
    ? [
        { sql: LOCK_SENDER, params: [lockKey(op.relayerId, op.sender)] },
        { sql: REVIVE(true), params: [...base, op.sender, limit.since.toISOString(), limit.max] },
        { sql: `SELECT ${SENT_SINCE(1, 2, 3, 4)} AS sent`, params: [op.relayerId, op.sender, limit.since.toISOString(), id] },
      ]
    : [{ sql: REVIVE(false), params: base }];
  const out = await db.transaction((tx) => tx.run(statements, { commit: true }));
  const updated = out[limit ? 1 : 0]!;
  if (updated.length === 0) {
    const row = await db.prisma.userOperation.findUnique({ where: { id } });
    if (limit && row?.status === 'failed') return { throttled: Number(out[2]![0]!.sent) };
    return { revived: null };
  }
  return { revived: await db.prisma.userOperation.findUnique({ where: { id } }) };
}

export type UserOpReceipt = {
  success: boolean;
  actualGasCost: string;
  actualGasUsed: string;
  transactionHash: string;
  blockNumber: string;
  blockHash: string;
  reason?: string;
};

/** Records an operation's inclusion; null when it had already ended (included or failed, by another instance say). */
export async function markIncluded(db: Db, id: string, receipt: UserOpReceipt): Promise<UserOpRow | null> {
  const { count } = await db.prisma.userOperation.updateMany({
    where: { id, status: { in: ['pending', 'submitted'] } },
    data: { status: 'included', receipt: receipt as never, statusReason: receipt.success ? null : (receipt.reason ?? 'the call reverted') },
  });
  return count ? db.prisma.userOperation.findUnique({ where: { id } }) : null;
}

const MARK_INCLUDED = `UPDATE user_operations AS u
  SET status = 'included', receipt = x.receipt, status_reason = x.reason, updated_at = now()
  FROM json_to_recordset($1::json) AS x(id text, receipt json, reason text)
  WHERE u.id = x.id AND u.status IN ('pending', 'submitted')
  RETURNING u.id`;

/**
 * markIncluded of many operations in one statement (a mined bundle's, each its own receipt); the
 * ids of those it changed. The receipts are kept as written (json, not reordered).
 */
export async function markIncludedMany(
  db: { prisma: Pick<Prisma.TransactionClient, '$queryRawUnsafe'> },
  items: { id: string; receipt: UserOpReceipt }[],
): Promise<string[]> {
  if (items.length === 0) return [];
  const rows = await db.prisma.$queryRawUnsafe<{ id: string }[]>(
    MARK_INCLUDED,
    JSON.stringify(items.map((i) => ({ id: i.id, receipt: i.receipt, reason: i.receipt.success ? null : (i.receipt.reason ?? 'the call reverted') }))),
  );
  return rows.map((r) => r.id);
}
