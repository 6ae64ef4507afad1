import type { Database, Db } from './client.js';

/** How long a worker may hold a transaction row for one step before another may take it. */
export const LEASE_MS = 30_000;

/**
 * Claims up to `limit` due rows of a work table for `owner` until `leaseMs` from now. Rows are
 * locked with FOR UPDATE SKIP LOCKED, so concurrent claimers (other instances) never get the same
 * row; a row whose lease ran out (its worker died) is due again. `where` narrows the rows
 * (trusted SQL written in this codebase, never user input); `returning` lists the columns read
 * back (default: the ids).
 */
export async function claimDue<T = string>(
  db: Pick<Database, 'read'>,
  table: 'transactions' | 'deliveries',
  opts: { owner: string; limit: number; leaseMs: number; where: string; orderBy?: string; returning?: string },
): Promise<T[]> {
  const order = opts.orderBy ?? 'due_at';
  const rows = await db.read<Record<string, unknown>>(
    `UPDATE ${table} SET lease_owner = $1, lease_until = now() + ($2 || ' milliseconds')::interval
     WHERE id IN (
       SELECT id FROM ${table}
       WHERE due_at <= now() AND (lease_until IS NULL OR lease_until < now()) AND (${opts.where})
       ORDER BY ${order}
       LIMIT $3
       FOR UPDATE SKIP LOCKED
     )
     RETURNING ${opts.returning ?? 'id'}`,
    [opts.owner, String(opts.leaseMs), opts.limit],
    // Each caller's text is a constant; it runs every poll of a worker.
    { prepare: true },
  );
  return (opts.returning ? rows : rows.map((r) => r.id)) as T[];
}

/**
 * At start-up, drops the leases nothing works on any more, so their rows are taken up at once
 * rather than when the leases run out: on the embedded database every lease (only one process can
 * open it, so any lease is from an earlier life of this one); on PostgreSQL those of this
 * instance's earlier life, when it has a stable INSTANCE_ID (`stableId`). Such a row due later is due now: rows
 * written leased are due when their lease ends (transactions/store.ts).
 */
export async function dropStaleLeases(db: Database, stableId: string | undefined, table: 'transactions' | 'deliveries') {
  const drop = `UPDATE ${table} SET lease_owner = NULL, lease_until = NULL, due_at = CASE WHEN due_at > now() THEN now() ELSE due_at END`;
  if (db.kind === 'pglite') {
    await db.prisma.$executeRawUnsafe(`${drop} WHERE lease_owner IS NOT NULL`);
  } else if (stableId) {
    await db.prisma.$executeRawUnsafe(`${drop} WHERE lease_owner = $1`, stableId);
  }
}

/**
 * Gives claimed rows back in one statement, each due again at its time (null: no more work); a row
 * is released only if `owner` still holds the lease it was claimed with.
 */
export async function release(
  prisma: Db,
  table: 'transactions' | 'deliveries',
  owner: string,
  rows: { id: string; leaseUntil: Date | null; dueAt: Date | null }[],
) {
  if (rows.length === 0) return;
  await prisma.$executeRawUnsafe(
    `UPDATE ${table} t SET lease_owner = NULL, lease_until = NULL, due_at = v.due_at::timestamp(3)
     FROM jsonb_to_recordset($2::jsonb) AS v(id text, lease_until text, due_at text)
     WHERE t.id = v.id AND t.lease_owner = $1 AND t.lease_until = v.lease_until::timestamp(3)`,
    owner,
    JSON.stringify(rows.map((r) => ({ id: r.id, lease_until: r.leaseUntil?.toISOString() ?? null, due_at: r.dueAt?.toISOString() ?? null }))),
  );
}

/** Takes the lease of one row when no one holds it (or its lease ran out), due or not. */
export async function claimRow(prisma: Db, table: 'transactions' | 'deliveries', id: string, owner: string, leaseMs: number): Promise<boolean> {
  const n = await prisma.$executeRawUnsafe(
    `UPDATE ${table} SET lease_owner = $2, lease_until = now() + ($3 || ' milliseconds')::interval
     WHERE id = $1 AND (lease_until IS NULL OR lease_until < now())`,
    id,
    owner,
    String(leaseMs),
  );
  return n > 0;
}

/** Gives back every lease `owner` holds on a work table (its workers have stopped); returns how many. */
export function releaseAll(db: Database, owner: string, table: 'transactions' | 'deliveries'): Promise<number> {
  return db.prisma.$executeRawUnsafe(`UPDATE ${table} SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1`, owner);
}
