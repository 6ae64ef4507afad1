// The durable record of UserOperations a relayer's bundler accepted: one row per (chain, EntryPoint,
// hash), whatever the number of times or instances it was sent to.
import type { Prisma, UserOperation as UserOpRow } from '../../../generated/prisma/client.js';
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
      data: { ...key, relayerId: op.relayerId, sender: op.sender, nonce: op.nonce.toString(), operation: op.operation as never },
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

/** Ends operations that will not be included, with why. Included ones stay included. */
export async function markFailed(db: Db, ids: string[], reason: string): Promise<number> {
  const { count } = await db.prisma.userOperation.updateMany({
    where: { id: { in: ids }, status: { in: ['pending', 'submitted'] } },
    data: { status: 'failed', statusReason: reason },
  });
  return count;
}

/** Operations of a bundle that provably did not land (their nonce unused) wait for the next one. */
export async function markPending(db: Db, ids: string[]): Promise<number> {
  const { count } = await db.prisma.userOperation.updateMany({
    where: { id: { in: ids }, status: 'submitted' },
    data: { status: 'pending', transactionId: null, statusReason: null },
  });
  return count;
}

/** Operations sent by `sender` to the relayer since `since` (its per-sender limit counts them). */
export function countSenderOps(db: Db, relayerId: string, sender: string, since: Date): Promise<number> {
  return db.prisma.userOperation.count({ where: { relayerId, sender, createdAt: { gte: since } } });
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
