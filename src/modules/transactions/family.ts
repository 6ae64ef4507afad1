import type { Prisma, Relayer, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../../runtime.js';
import type { NetworkType } from '../relayers/policies.js';
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

/** The chain-specific half of the pipeline; one per network type, registered at start-up. */
export interface ChainFamily<T extends NetworkType = NetworkType> {
  /** Policy and chain checks of a request; throws a Bad Request naming the rule broken. */
  accept(rt: Runtime, relayer: Relayer, request: ShapeOf<T>): Promise<Accepted>;
  /** The next nonce / sequence number the chain expects from the relayer. */
  chainNonce(rt: Runtime, relayer: Relayer): Promise<bigint>;
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

const families = new Map<NetworkType, ChainFamily>();

export function registerFamily<T extends NetworkType>(type: T, family: ChainFamily<T>) {
  families.set(type, family as unknown as ChainFamily);
}

export function familyOf(type: NetworkType): ChainFamily | undefined {
  return families.get(type);
}
