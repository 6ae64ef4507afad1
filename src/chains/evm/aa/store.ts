// The durable record of UserOperations a relayer's bundler accepted: one row per (chain, EntryPoint,
// hash), whatever the number of times or instances it was sent to.
import { Prisma, type UserOperation as UserOpRow } from '../../../generated/prisma/client.js';
import type { Database, Statement } from '../../../db/client.js';
import { columnsAs } from '../../../db/columns.js';

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

export function userOpByHash(db: Db, chainId: number, hash: string): Promise<UserOpRow | null> {
  return db.prisma.userOperation.findFirst({ where: { chainId, hash: hash.toLowerCase() } });
}

const BY_HASHES = `SELECT ${columnsAs(Object.values(Prisma.UserOperationScalarFieldEnum))} FROM user_operations
  WHERE chain_id = $1 AND hash IN (SELECT json_array_elements_text($2::json))`;

/** The rows of a chain with these hashes (lower-case), whatever their EntryPoint: one read for many. */
export function userOpsByHash(db: Pick<Database, 'read'>, chainId: number, hashes: string[]): Promise<UserOpRow[]> {
  return db.read<UserOpRow>(BY_HASHES, [chainId, JSON.stringify(hashes)], { prepare: true });
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

/** A per-sender limit: at most `max` operations of a sender accepted by the relayer since `since`. */
export type SenderLimit = { max: number; since: Date };

/** An operation to keep: a new one, or (`revive`: its row's id) a failed one accepted again. */
export type KeepOp = NewUserOp & { revive?: string };

/** What became of it: its row (`created`: new, or revived), or refused by the limit (`throttled`: the count that refused it). */
export type Kept = { row: UserOpRow; created: boolean } | { throttled: number };

const utc = (n: number) => `$${n}::timestamptz AT TIME ZONE 'UTC'`;
// A sender's operations counted against its limit: those accepted (first or again) since $t.
const SENT_SINCE = (r: number, s: number, t: number, except?: number) =>
  `(SELECT count(*) FROM user_operations WHERE relayer_id = $${r} AND sender = $${s} AND accepted_at >= ${utc(t)}${except ? ` AND id <> $${except}` : ''})`;
// Whoever counts a sender's operations to add one holds this lock (per relayer and sender, to the
// end of its transaction): the count and the write that follows are exact across instances. The
// counts are statements after the locks, so that they see what the previous holder committed;
// the locks are taken in one order (by key), so two instances' groups cannot wait on each other.
const LOCK_SENDER = `SELECT pg_advisory_xact_lock(hashtextextended($1, 4337)) AS locked`;
const lockKey = (relayerId: string, sender: string) => `${relayerId}:${sender.toLowerCase()}`;
const INSERT_MANY = `INSERT INTO user_operations
    (id, relayer_id, chain_id, entry_point, hash, sender, nonce, operation, valid_until, created_at, updated_at, accepted_at)
  SELECT x.id, x.relayer_id, x.chain_id, x.entry_point, x.hash, x.sender, x.nonce, x.operation,
    x.valid_until::timestamptz AT TIME ZONE 'UTC', ${utc(2)}, ${utc(2)}, ${utc(2)}
  FROM json_to_recordset($1::json) AS x(id text, relayer_id text, chain_id int, entry_point text, hash text, sender text, nonce text, operation json, valid_until text)
  ON CONFLICT (chain_id, entry_point, hash) DO NOTHING RETURNING id`;
const INSERT_WITHIN = `WITH sent AS (SELECT ${SENT_SINCE(2, 6, 11)} AS n),
  kept AS (INSERT INTO user_operations
    (id, relayer_id, chain_id, entry_point, hash, sender, nonce, operation, valid_until, created_at, updated_at, accepted_at)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8::json, ${utc(9)}, ${utc(10)}, ${utc(10)}, ${utc(10)}
    WHERE (SELECT n FROM sent) < $12
    ON CONFLICT (chain_id, entry_point, hash) DO NOTHING RETURNING id)
  SELECT (SELECT id FROM kept) AS id, (SELECT n FROM sent) AS sent`;
// Accepted again: counted from now, as a new operation would be.
const REVIVE = (limited: boolean) => `WITH sent AS (SELECT ${limited ? SENT_SINCE(2, 5, 6, 1) : '0'} AS n),
  kept AS (UPDATE user_operations SET status = 'pending', relayer_id = $2, operation = $3::json, valid_until = ${utc(4)},
      transaction_id = NULL, receipt = NULL, status_reason = NULL, updated_at = ${utc(limited ? 8 : 5)}, accepted_at = ${utc(limited ? 8 : 5)}
    WHERE id = $1 AND status = 'failed'${limited ? ' AND (SELECT n FROM sent) < $7' : ''} RETURNING id)
  SELECT (SELECT id FROM kept) AS id, (SELECT n FROM sent) AS sent`;

/**
 * Keeps a group of accepted operations in one database transaction, each with its own outcome, in
 * order: new ones (the same operation again, by any instance, finds the first row: `created`
 * false) and failed ones accepted again (only from failed, so of two instances reviving it at once
 * one does). Under `limit`, each is counted and written under its sender's lock, so that
 * concurrent sends (on any instance, or several of one sender in the group) never keep more than
 * `limit.max`; a revived row is not counted against itself. Hashes are stored lower-case, as
 * clients write them. The operations are of one chain.
 */
export async function keepUserOps(db: Database, ops: KeepOp[], limit?: SenderLimit): Promise<Kept[]> {
  if (ops.length === 0) return [];
  const chainId = ops[0]!.chainId;
  const now = new Date().toISOString();
  const since = limit?.since.toISOString();
  const key = (o: KeepOp) => ({ entryPoint: o.entryPoint.toLowerCase(), hash: o.hash.toLowerCase() });
  const json = (o: KeepOp) => JSON.stringify(o.operation);
  const until = (o: KeepOp) => o.validUntil?.toISOString() ?? null;
  const statements: Statement[] = [];
  if (limit) for (const k of [...new Set(ops.map((o) => lockKey(o.relayerId, o.sender)))].sort()) statements.push({ sql: LOCK_SENDER, params: [k] });
  // Each operation's statement (undefined: in the one insert of the new ones without a limit).
  const own: (number | undefined)[] = [];
  // Rows written in one order (by key) where no sender lock orders them: two writers (instances,
  // groups) with rows in common cannot each hold one the other waits for. Under a limit, in
  // arrival order: the senders' locks, taken first, keep writers of the same rows apart.
  const byKey = (o: KeepOp) => `${key(o).entryPoint} ${key(o).hash}`;
  const order = ops.map((_, i) => i);
  if (!limit) order.sort((a, b) => (byKey(ops[a]!) < byKey(ops[b]!) ? -1 : 1));
  const plain = order.map((i) => ops[i]!).filter((o) => !o.revive && !limit);
  for (const i of order) {
    const o = ops[i]!;
    if (!o.revive && !limit) continue;
    own[i] = statements.length;
    if (o.revive) {
      const base = [o.revive, o.relayerId, json(o), until(o)];
      statements.push({ sql: REVIVE(!!limit), params: limit ? [...base, o.sender, since, limit.max, now] : [...base, now] });
    } else {
      const k = key(o);
      const params = [crypto.randomUUID(), o.relayerId, chainId, k.entryPoint, k.hash, o.sender, o.nonce.toString(), json(o), until(o), now, since, limit!.max];
      statements.push({ sql: INSERT_WITHIN, params });
    }
  }
  if (plain.length) {
    const rows = plain.map((o) => ({
      id: crypto.randomUUID(),
      relayer_id: o.relayerId,
      chain_id: chainId,
      entry_point: key(o).entryPoint,
      hash: key(o).hash,
      sender: o.sender,
      nonce: o.nonce.toString(),
      operation: o.operation,
      valid_until: until(o),
    }));
    statements.push({ sql: INSERT_MANY, params: [JSON.stringify(rows), now] });
  }
  const inserted = plain.length ? statements.length - 1 : -1;
  statements.push({ sql: BY_HASHES, params: [chainId, JSON.stringify([...new Set(ops.map((o) => key(o).hash))])] });
  const out = await db.transaction((tx) => tx.run(statements, { commit: true }));
  const rows = new Map((out.at(-1) as unknown as UserOpRow[]).map((r) => [`${r.entryPoint} ${r.hash}`, r]));
  // Of the same operation twice in the insert, the first is the one created.
  const created = new Set<unknown>(inserted >= 0 ? out[inserted]!.map((r) => r.id) : []);
  return ops.map((o, i): Kept => {
    const k = key(o);
    const row = rows.get(`${k.entryPoint} ${k.hash}`);
    const n = own[i];
    const mine = n === undefined ? null : out[n]![0]!;
    if (mine && !mine.id && limit && (!row || (o.revive && row.status === 'failed'))) return { throttled: Number(mine.sent) };
    if (!row) throw new Error(`user operation ${k.hash} vanished after it was written`);
    return { row, created: mine ? !!mine.id : created.delete(row.id) };
  });
}

/** keepUserOps of one new operation (the same operation again finds the first row: `created` false). */
export async function keepUserOp(db: Database, op: NewUserOp): Promise<{ row: UserOpRow; created: boolean }> {
  return (await keepUserOps(db, [op]))[0] as { row: UserOpRow; created: boolean };
}

/** keepUserOps of one new operation under the per-sender limit. */
export async function keepUserOpWithin(db: Database, op: NewUserOp, limit: SenderLimit): Promise<Kept> {
  return (await keepUserOps(db, [op], limit))[0]!;
}

/**
 * keepUserOps of one failed operation accepted again (the row `id`): `revived` null when it was not
 * failed anymore.
 */
export async function reviveUserOp(
  db: Database,
  id: string,
  op: Pick<NewUserOp, 'relayerId' | 'sender' | 'operation' | 'validUntil'>,
  limit?: SenderLimit,
): Promise<{ revived: UserOpRow | null } | { throttled: number }> {
  const row = await db.prisma.userOperation.findUnique({ where: { id } });
  if (!row) return { revived: null };
  const [r] = await keepUserOps(db, [{ ...op, chainId: row.chainId, entryPoint: row.entryPoint, hash: row.hash, nonce: BigInt(row.nonce), revive: id }], limit);
  return 'throttled' in r! ? r : { revived: r!.created ? r!.row : null };
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
