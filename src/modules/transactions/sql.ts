import { columnOf, columnsAs, recordsetJson } from '../../db/columns.js';
import { LEASE_MS } from '../../db/lease.js';
import { Prisma, type Transaction } from '../../generated/prisma/client.js';

// Hot paths (intake, the worker's claims) write and read transaction rows in raw SQL: Prisma's
// createManyAndReturn and findMany cost several times the database's own work per row.

/** Every column of a transaction row, under its Prisma field name: raw rows read as Transaction. */
export const TRANSACTION_COLUMNS = columnsAs(Object.values(Prisma.TransactionScalarFieldEnum));

/** The fields a new row is written with; the database fills in the rest (status, times, defaults). */
export type NewTransaction = Pick<
  Transaction,
  | 'id' | 'relayerId' | 'networkType' | 'from' | 'to' | 'data' | 'nonce' | 'gasLimit' | 'gasPrice' | 'maxFeePerGas'
  | 'maxPriorityFeePerGas' | 'speed' | 'validUntil' | 'idempotencyKey' | 'requestDigest'
> & { value?: string | null; request: Prisma.InputJsonValue };

const INSERTED: [field: keyof NewTransaction, type: string, cast?: string][] = [
  ['id', 'text'], ['relayerId', 'text'], ['networkType', 'text'], ['from', 'text'], ['to', 'text'],
  ['value', 'text'], ['data', 'text'], ['nonce', 'bigint'], ['gasLimit', 'bigint'], ['gasPrice', 'text'],
  ['maxFeePerGas', 'text'], ['maxPriorityFeePerGas', 'text'], ['speed', 'text', '"Speed"'], ['validUntil', 'text', 'timestamp(3)'],
  ['request', 'jsonb'], ['idempotencyKey', 'text'], ['requestDigest', 'text'],
];

const INSERT_SQL = `INSERT INTO transactions (${INSERTED.map(([f]) => `"${columnOf(f)}"`).join(', ')}, updated_at, lease_owner, lease_until)
  SELECT ${INSERTED.map(([f, , cast]) => (f === 'value' ? `coalesce(x."value", '0')` : cast ? `x."${f}"::${cast}` : `x."${f}"`)).join(', ')}, now(),
    $2::text, CASE WHEN $2::text IS NULL THEN NULL ELSE now() + ($3 || ' milliseconds')::interval END
  FROM jsonb_to_recordset($1::jsonb) AS x(${INSERTED.map(([f, type]) => `"${f}" ${type}`).join(', ')}, n int)
  ORDER BY n
  RETURNING ${TRANSACTION_COLUMNS}`;

/**
 * Inserts rows in one statement and returns them as written, in the order given; with `leaseOwner`
 * they are written leased to it (for LEASE_MS), to be worked on without claiming them first.
 */
export async function insertTransactions(db: Prisma.TransactionClient, rows: NewTransaction[], leaseOwner: string | null = null): Promise<Transaction[]> {
  const json = recordsetJson(rows.map((r, n) => ({ ...r, n })));
  const written = await db.$queryRawUnsafe<Transaction[]>(INSERT_SQL, json, leaseOwner, String(LEASE_MS));
  const byId = new Map(written.map((t) => [t.id, t]));
  return rows.map((r) => byId.get(r.id)!);
}
