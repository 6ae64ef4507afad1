import type { Prisma, Relayer, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../runtime.js';
import { FAMILIES, type NetworkType } from '../../chains/families.js';
import type { ShapeOf } from './shapes.js';
import type { NewTransaction } from './store.js';

/** What a chain family decides when it accepts a request: the row to write. */
export interface Accepted {
  data: Pick<NewTransaction, 'from'> &
    Partial<Pick<NewTransaction, 'to' | 'value' | 'data' | 'gasLimit' | 'gasPrice' | 'maxFeePerGas' | 'maxPriorityFeePerGas' | 'speed'>> & { validUntil: Date };
  /** The normalised request the pipeline will build from (JSON-safe). */
  request: Prisma.InputJsonValue;
  /** Whether the transaction takes the relayer's next nonce / sequence number. */
  takesNonce: boolean;
}

/** The chain-specific half of the pipeline; one per network type (its spec's load), loaded at start-up. */
export interface ChainFamily<T extends NetworkType = NetworkType> {
  /** Policy and chain checks of a request; throws a Bad Request naming the rule broken. */
  accept(rt: Runtime, relayer: Relayer, request: ShapeOf<T>): Promise<Accepted>;
  /** The next nonce / sequence number the chain expects from the relayer. */
  chainNonce(rt: Runtime, relayer: Relayer): Promise<bigint>;
  /** The relayer account's native balance on chain, in the chain's smallest unit (wei, lamports, stroops). */
  balance(rt: Runtime, relayer: Relayer): Promise<{ balance: bigint; unit: string }>;
  /** Advances one transaction by one step (price, sign, submit, check, resubmit, ...). */
  process(rt: Runtime, tx: Transaction): Promise<void>;
  /** Advances several leased transactions at once (fewer round trips); used instead of process when given. */
  processBatch?(rt: Runtime, txs: Transaction[]): Promise<void>;
  /**
   * Cancels a transaction whose lease `owner` holds (not final, not mined): returns the row as
   * written, with the lease given back. Families that cannot cancel leave this out.
   */
  cancel?(rt: Runtime, tx: Transaction, owner: string): Promise<Transaction>;
  /** Replaces the payload of a leased transaction at the same nonce with an accepted request. */
  replace?(rt: Runtime, tx: Transaction, accepted: Accepted, owner: string): Promise<Transaction>;
  /** The relayer's start-up check (signer, chain, nonce); throws with a reason to disable it. */
  checkRelayer?(rt: Runtime, relayer: Relayer): Promise<void>;
}

/** Every family's pipeline by network type. */
export type Families = ReadonlyMap<string, ChainFamily>;

// Code, not state: the pipelines of the listed families (chains/families.ts), imported once per
// process and the same for every runtime.
let pipelines: Families | undefined;

/** Imports every family's pipeline (its spec's `load`); start-up awaits this before anything runs. */
export async function loadFamilies(): Promise<Families> {
  pipelines ??= new Map(await Promise.all(FAMILIES.map(async (spec) => [spec.type, (await spec.load()) as ChainFamily] as const)));
  return pipelines;
}

export function familyOf(type: string): ChainFamily | undefined {
  if (!pipelines) throw new Error('the chain families are not loaded yet (loadFamilies at start-up)');
  return pipelines.get(type);
}
