import type { Prisma, Transaction } from '../../generated/prisma/client.js';

// Transaction rows as they are written: new ones (intake) and the changes of a step (store.ts).

/** The fields a new row is written with; the database fills in the rest (status, times, defaults). */
export type NewTransaction = Pick<
  Transaction,
  | 'id'
  | 'relayerId'
  | 'networkType'
  | 'from'
  | 'to'
  | 'data'
  | 'nonce'
  | 'gasLimit'
  | 'gasPrice'
  | 'maxFeePerGas'
  | 'maxPriorityFeePerGas'
  | 'speed'
  | 'validUntil'
  | 'idempotencyKey'
  | 'requestDigest'
> & {
  value?: string | null;
  request: Prisma.InputJsonValue;
  /** A row born final (a NOOP filling a nonce gap) says so; a client's transaction starts pending. */
  status?: Transaction['status'];
  statusReason?: string | null;
  chainState?: Prisma.InputJsonValue | null;
};

/** The columns a pipeline step may change (identity, ownership and idempotency never change). */
export type TransactionPatch = Partial<
  Pick<
    Transaction,
    | 'status'
    | 'statusReason'
    | 'sentAt'
    | 'confirmedAt'
    | 'hash'
    | 'hashes'
    | 'nonce'
    | 'gasLimit'
    | 'gasPrice'
    | 'maxFeePerGas'
    | 'maxPriorityFeePerGas'
    | 'chainState'
    | 'signature'
    | 'attempts'
    | 'dueAt'
    | 'to'
    | 'value'
    | 'data'
    | 'speed'
    | 'validUntil'
    | 'request'
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
