import type { Prisma, Relayer, Transaction, TransactionStatus } from '../../generated/prisma/client.js';
import type { Runtime } from '../runtime.js';
import type { NetworkType, ShapeOf } from '../family-list.js';
import type { Held } from './held.js';
import type { NewTransaction, TransactionPatch } from './rows.js';

/** What a chain family decides when it accepts a request: the row to write. */
export interface Accepted {
  data: Pick<NewTransaction, 'from'> &
    Partial<Pick<NewTransaction, 'to' | 'value' | 'data' | 'gasLimit' | 'gasPrice' | 'maxFeePerGas' | 'maxPriorityFeePerGas' | 'speed'>> & { validUntil: Date };
  /** The normalised request the pipeline will build from (JSON-safe). */
  request: Prisma.InputJsonValue;
  /** Whether the transaction takes the relayer's next nonce / sequence number. */
  takesNonce: boolean;
  /**
   * What makes the request one of a kind whatever the client's Idempotency-Key (a user's signed
   * authorization the network takes once): kept as the row's key, so the same request again is
   * the first transaction, and another request with it a conflict.
   */
  onceKey?: string;
}

/**
 * Something a step does besides deciding. `read`: looks at the chain (or the database); `sign`:
 * makes bytes to send, which stay in the process; `send`: leaves the process (a broadcast), or
 * must follow the write for another reason, so the core writes its decision before performing it. `point` names the signing path (send, resubmit,
 * resign, ...) for the crash points `<family>.<point>.signed|saved|broadcast`, which the core fires.
 */
export interface Effect {
  stage: 'read' | 'sign' | 'send';
  point?: string;
  /** A read that waits on the chain (for what was sent to be mined): meanwhile the step gives up its turn to send. */
  waits?: true;
}

/** What one step decided for one row; the core writes it, performs its effects, and asks again. */
export interface Decision<E extends Effect = Effect> {
  /** The row as last written: its lease guards the next write. */
  tx: Transaction;
  /** The columns to write (status among them); empty when nothing changed. The due time is nextInMs. */
  patch: Omit<TransactionPatch, 'dueAt'>;
  /** Statuses passed through on the way to patch.status, each reported as its own event. */
  via?: TransactionStatus[];
  /** To perform next, all of one stage. */
  effects: E[];
  /** When to look at the row again; null once there is nothing left to do. */
  nextInMs: number | null;
}

/**
 * A family's half of a step, for one relayer's rows at a time; the core worker (core/step-runner.ts)
 * runs every family in the same order: observe -> decide -> write what will be sent -> perform ->
 * record -> save with the next due time. Only observe and perform touch the world; decide and
 * record are pure, and no family writes a transaction row itself.
 */
export interface Steps<C = unknown, S = unknown, E extends Effect = Effect, R = unknown, D extends Decision<E> = Decision<E>> {
  /** What the relayer's rows are worked with (RPC clients, signer, policy); throws when it cannot be built. */
  context(rt: Runtime, relayer: Relayer): C;
  /** Reads what deciding needs (the chain's answers for the rows). */
  observe(c: C, rows: Transaction[]): Promise<S>;
  decide(rows: Transaction[], seen: S, now: Date): D[];
  /**
   * Performs effects, each with the decision it belongs to (several decisions at once, so a
   * family can batch them): one outcome each, in order. The outcome of a sign effect that made
   * new bytes has `signed: true` (and the `point` they were made for, when the effect could not
   * name it before).
   */
  perform(c: C, todo: { effect: E; d: D }[]): Promise<R[]>;
  /** The decision once `d.effects` gave `outcomes` (one each, in order); its effects replace d's. */
  record(d: D, outcomes: R[], now: Date): D;
  /**
   * After the step's rows were saved (rows whose lease was lost are left out): once, or for a step
   * that waits on the chain, first with the rows it was done with when it began to wait.
   */
  settled?(c: C, ds: D[]): void;
}

/** The chain-specific half of the pipeline; one per network type (its spec's load), loaded at start-up. */
export interface ChainFamily<T extends NetworkType = NetworkType> {
  /** Policy and chain checks of a request; throws a Bad Request naming the rule broken. */
  accept(rt: Runtime, relayer: Relayer, request: ShapeOf<T>): Promise<Accepted>;
  /** The next nonce / sequence number the chain expects from the relayer. */
  chainNonce(rt: Runtime, relayer: Relayer): Promise<bigint>;
  /** The relayer account's native balance on chain, in the chain's smallest unit (wei, lamports, stroops). */
  balance(rt: Runtime, relayer: Relayer): Promise<{ balance: bigint; unit: string }>;
  /** How the core worker advances its transactions by one step (price, sign, submit, check, resubmit, ...). */
  // biome-ignore lint/suspicious/noExplicitAny: each family has its own context, observations and effects
  steps: Steps<any, any, any, any, any>;
  /**
   * Cancels a transaction whose lease `owner` holds (not final, not mined): returns the row as
   * written, with the lease given back. Families that cannot cancel leave this out.
   */
  cancel?(rt: Runtime, tx: Transaction, owner: string): Promise<Transaction>;
  /** Replaces the payload of a leased transaction at the same nonce with an accepted request. */
  replace?(rt: Runtime, tx: Transaction, accepted: Accepted, owner: string): Promise<Transaction>;
  /** The relayer's start-up check (signer, chain, nonce); throws with a reason to disable it. */
  checkRelayer?(rt: Runtime, relayer: Relayer): Promise<void>;
  /**
   * The relayer's new transactions that will wait before any work can be done on them, as this
   * instance knows now (EVM: those the send window will hold); null when it knows of none.
   */
  heldFrom?(rt: Runtime, relayer: Relayer): Held | null;
  /**
   * The family's own background work beside the transaction steps (EVM: bundling UserOperations,
   * deploying and funding relayers' paymasters), started and stopped with the workers. It creates
   * transactions only through the normal send path.
   */
  startWorkers?(rt: Runtime): { stop(): Promise<void> };
}
