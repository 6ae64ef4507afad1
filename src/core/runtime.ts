import type { PubSub } from 'graphql-yoga';
import type { Database } from '../db/client.js';
import type { Transaction, UserOperation } from '../generated/prisma/client.js';
import type { RateLimits } from '../lib/rate-limits.js';
import type { Crash } from '../lib/crash.js';
import type { Line } from '../lib/line.js';
import type { Logger } from '../lib/log.js';
import type { Custodies } from '../signers/custody.js';
import type { Signer } from '../signers/index.js';
import type { Metrics } from './metrics.js';
import type { Plugins } from './plugins/loaded.js';
import type { Config, Env } from './settings.js';
import type { StateOf } from './state.js';

/** Live events carry the transaction row as it was at the change, so subscribers see every step. */
export type Topics = {
  'transaction:relayer': [relayerId: string, tx: Transaction];
  'transaction:id': [transactionId: string, tx: Transaction];
  /** An ERC-4337 operation's row at each status change, by relayer and by its hash (lower-case). */
  'userOperation:relayer': [relayerId: string, op: UserOperation];
  'userOperation:hash': [hash: string, op: UserOperation];
};

/** This instance's transaction worker (core/worker.ts), as the rest of the service reaches it. */
export interface TransactionWorker {
  /** New work is due now rather than at the next poll. */
  wake(): void;
  /** Rows leased to this instance (owner instanceId, for LEASE_MS), to work on without claiming them again. */
  handOff(rows: Transaction[]): void;
  /** Resolves when the worker has room for more new rows, so accepting sends does not outrun it. */
  roomForSends(): Promise<void> | undefined;
}

/**
 * Everything a request or a worker needs, built once at start-up by the composition root, grouped
 * by concern. The chain families' group (`families`) is declared with their contract, in
 * core/registry.ts, which adds it to this interface: the contract takes the runtime.
 */
export interface Runtime {
  env: Env;
  log: Logger;
  /** The config file as loaded, with the API's network changes applied. */
  config: Config;
  /** This process's name in work leases. */
  instanceId: string;
  /** This runtime's Prometheus metrics (src/metrics): its own registry. */
  metrics: Metrics;
  /** A named crash point (fault-injection tests; does nothing unless RELAYER_CRASH_AT names it). */
  crash: Crash;
  /**
   * What modules hold between requests and steps (queues, caches, RPC clients): one value per slot
   * (core/state.ts) a module declares, created on first use. Modules keep none of their own.
   */
  state: StateOf;
  /** The database; its Prisma client is db.prisma. */
  db: Database;
  signers: {
    /** Signers loaded, by signerKey (core/signers.ts). */
    loaded: Map<string, Signer>;
    /** The signer types offered besides `local` and `plain` (src/signers/list.ts, read by the composition root only). */
    custodies: Custodies;
  };
  access: {
    /** The callers' request budgets: the rate limiters, one per window (lib/rate-limits.ts). */
    rateLimit: RateLimits;
  };
  notifications: {
    /** Live events for GraphQL subscriptions, through Redis when one is configured. */
    events: PubSub<Topics>;
    /** The webhook sender, once started: told when a committed change queued deliveries. */
    sender: Line<{ wake(): void }>;
  };
  /** The transaction worker, once started (core/worker.ts); while none runs, new rows are left due for any instance. */
  work: Line<TransactionWorker>;
  /** The config file's plugins, compiled, with their workers (core/plugins). */
  plugins: Plugins;
  /** Pings the shared Redis, when one is configured (readiness). */
  redisPing?: () => Promise<unknown>;
}
