import type { PubSub } from 'graphql-yoga';
import type { Config } from '../config/load.js';
import { networkKey, type Network } from './networks.js';
import type { Families } from './registry.js';
import type { SignerRegistry } from './signers.js';
import type { Database, Db } from '../db/client.js';
import type { StateOf } from './state.js';
import type { Env } from '../config/env.js';
import type { Transaction } from '../generated/prisma/client.js';
import type { Bucket } from '../lib/bucket.js';
import type { Crash } from '../lib/crash.js';
import type { Logger } from '../lib/log.js';
import type { Metrics } from '../metrics/index.js';

/** Live events carry the transaction row as it was at the change, so subscribers see every step. */
export type Topics = {
  'transaction:relayer': [relayerId: string, tx: Transaction];
  'transaction:id': [transactionId: string, tx: Transaction];
};

/** Everything a request or a worker needs, built once at start-up. */
export interface Runtime {
  env: Env;
  log: Logger;
  db: Database;
  prisma: Db;
  config: Config;
  /** The chain families this service offers, with their pipelines. */
  families: Families;
  signers: SignerRegistry;
  pubsub: PubSub<Topics>;
  instanceId: string;
  /** Pings the shared Redis, when one is configured (readiness). */
  redisPing?: () => Promise<unknown>;
  rateLimit: Bucket;
  /**
   * This runtime's process state (RPC clients, caches, intake queues): one value per slot
   * (core/state.ts), created on first use. Modules keep none of their own.
   */
  state: StateOf;
  /** This runtime's Prometheus metrics (src/metrics): its own registry. */
  metrics: Metrics;
  /** A named crash point (fault-injection tests; does nothing unless RELAYER_CRASH_AT names it). */
  crash: Crash;
  /** Tells the transaction worker that new work is due now rather than at its next poll. */
  wake(): void;
  /** The same for the webhook sender, once a committed change queued deliveries. */
  wakeDeliveries(): void;
  /**
   * Hands rows leased to this instance (owner instanceId, for LEASE_MS) to its transaction worker,
   * which works on them without claiming them again; null when this process runs no worker.
   */
  handOff: ((rows: Transaction[]) => void) | null;
  /**
   * Resolves when this instance's worker has room for more new rows (at once when it has, or when
   * it runs no worker), so accepting sends does not outrun it.
   */
  roomForSends(): Promise<void> | undefined;
}

export function findNetwork(rt: Pick<Runtime, 'config'>, type: string, name: string): Network | undefined {
  return rt.config.networks.get(networkKey(type, name));
}
