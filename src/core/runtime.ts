import type { PubSub } from 'graphql-yoga';
import type { Config } from '../config/load.js';
import { networkKey, type Network } from './networks.js';
import type { Families } from './registry.js';
import type { Readiness } from './health.js';
import type { IntakeQueue } from './transactions/intake.js';
import type { SaveQueue } from './transactions/store.js';
import type { Relayer } from '../generated/prisma/client.js';
import { ExpiringMap } from '../lib/expiring.js';
import { type Caller, TRUST_MS } from './access/keys.js';
import type { SignerRegistry } from './signers.js';
import type { Custodies } from '../signers/custody.js';
import type { Database, Db } from '../db/client.js';
import type { StateOf } from './state.js';
import type { Env } from '../config/env.js';
import type { Transaction } from '../generated/prisma/client.js';
import type { Bucket } from '../lib/bucket.js';
import type { Crash } from '../lib/crash.js';
import type { Logger } from '../lib/log.js';
import type { Metrics } from '../metrics/index.js';
import type { Plugins } from './plugins/pool.js';

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
  /** The signer types offered besides `local` and `plain` (src/signers/list.ts, read by the composition root only). */
  custodies: Custodies;
  pubsub: PubSub<Topics>;
  instanceId: string;
  /** Pings the shared Redis, when one is configured (readiness). */
  redisPing?: () => Promise<unknown>;
  rateLimit: Bucket;
  /** What the core holds between requests and steps, by name. */
  held: Held;
  /**
   * The chain families' process state (RPC clients, caches): one value per slot (core/state.ts),
   * created on first use; core cannot name a family's state. Modules keep none of their own.
   */
  state: StateOf;
  /** The config file's plugins, compiled, with their workers (core/plugins). */
  plugins: Plugins;
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

// Relayers as last read; one not asked for in SNAPSHOT_IDLE_MS (deleted) is let go.
const SNAPSHOT_IDLE_MS = 10 * 60_000;

/** The core's process state, one named member per use; it goes away with its runtime. */
export interface Held {
  /** Send requests waiting to be written, of every relayer (transactions/intake.ts). */
  intake: IntakeQueue;
  /** The latest version of each in-flight row this runtime saved, for the mined-nonce claim (transactions/store.ts). */
  savedRows: Map<string, Transaction>;
  /** Relayers as last read here (relayers/service.ts relayerSnapshot). */
  relayerSnapshots: ExpiringMap<string, Relayer>;
  /** The last readiness verdict and when it was asked for (health.ts). */
  readiness: { at: number; verdict: Promise<Readiness> | undefined };
  /** Whether a notification has been seen: from then on every delivery claim is made (notifications/delivery.ts). */
  webhookTargets: { seen: boolean };
  /** Saves of transaction rows waiting to be written together (transactions/store.ts). */
  saves: SaveQueue;
  /** Per relayer: a promise that settles once every step begun so far has ended its turn (step-runner.ts). */
  stepTurns: Map<string, Promise<void>>;
  /** Stored API keys by digest as last read, null for none (access/keys.ts). */
  apiKeys: ExpiringMap<string, Promise<Caller | null>>;
}

export function createHeld(): Held {
  return {
    intake: { items: [], running: false },
    savedRows: new Map(),
    relayerSnapshots: new ExpiringMap(SNAPSHOT_IDLE_MS, { touch: true }),
    readiness: { at: 0, verdict: undefined },
    webhookTargets: { seen: false },
    saves: { running: false, waiting: [] },
    stepTurns: new Map(),
    apiKeys: new ExpiringMap(TRUST_MS),
  };
}

export function findNetwork(rt: Pick<Runtime, 'config'>, type: string, name: string): Network | undefined {
  return rt.config.networks.get(networkKey(type, name));
}
