// What the service is set up with, as core reads it: the environment's settings and the config
// file's entries. Declared here, below everything that fills them in (src/config parses both).
import type { NetworkType } from './family-list.js';
import type { RpcEndpoint } from './rpc-urls.js';
import type { PluginConfig } from './plugins/settings.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

export interface Env {
  host: string;
  port: number;
  apiKey?: string;
  configPath: string;
  configPathGiven: boolean;
  dataDir: string;
  databaseUrl?: string;
  redisUrl?: string;
  devnet: boolean;
  devnetPort: number;
  rateLimit: { perSecond: number; burst: number };
  /** Retries: full-jitter exponential backoff from retryBaseMs, capped at retryMaxDelayMs, for retryWindowMs. */
  webhook: { timeoutMs: number; blockPrivateTargets: boolean; retryBaseMs: number; retryMaxDelayMs: number; retryWindowMs: number };
  graphqlLimits: GraphQLLimits;
  /** Largest request body read (REST and GraphQL); larger ones are answered 413. */
  maxBodyBytes: number;
  logLevel: LogLevel;
  instanceId?: string;
  /** Passphrase of the keystores of signers created through the API (stored encrypted in the database). */
  signerStoreKey?: string;
  /** The longest a signer custody's call may take before it counts as failed (a timeout). */
  signerTimeoutMs: number;
  /** Fault injection for tests only (src/lib/crash.ts). */
  crashAt?: string;
  /** Prometheus metrics on their own port (the reference system's METRICS_ENABLED, METRICS_PORT). */
  metrics: { enabled: boolean; port: number };
  /** How long SIGTERM/SIGINT may take to drain before the process exits non-zero. */
  shutdownTimeoutMs: number;
  /** Per plugin: calls running at once, calls waiting beyond those (429 past it), and each call's heap in MB. */
  plugins: { concurrency: number; queue: number; memoryMb: number; poolSize: number };
  /** Token prices for gasless fees: Jupiter's base URL, how long a source may take, how long a quote is reused. */
  prices: { jupiterUrl: string; timeoutMs: number; cacheMs: number };
  /** The FeeForwarder contract (C…) gasless Soroban calls go through, per kind of Stellar network (the reference's variables). */
  stellarFeeForwarder: { mainnet?: string; testnet?: string };
}

/** Bounds on a GraphQL document, checked before it runs (src/api/graphql/limits.ts). */
export interface GraphQLLimits {
  depth: number;
  aliases: number;
  directives: number;
  tokens: number;
  cost: number;
  /** Size of the document text (variables excluded) in bytes. */
  bytes: number;
}

export type SignerConfig = {
  id: string;
  /** Where the entry is, for error messages. */
  where: string;
} & (
  | { type: 'local'; keystorePath: string; passphrase: string }
  /** A key custody's type (signers/custody.ts), its config as that type parsed it. */
  | { type: 'custody'; custody: string; config: unknown; baseDir: string }
);

export interface NotificationConfig {
  id: string;
  type: 'webhook';
  url: string;
  signingKey: string | null;
}

export interface RelayerConfig {
  id: string;
  name: string;
  network: string;
  networkType: NetworkType;
  paused: boolean;
  signerId: string;
  notificationId: string | null;
  policies: Record<string, unknown>;
  customRpcUrls: RpcEndpoint[] | null;
  where: string;
}

export interface Config {
  file: string;
  networks: Map<string, Network>;
  signers: Map<string, SignerConfig>;
  notifications: NotificationConfig[];
  relayers: RelayerConfig[];
  plugins: PluginConfig[];
}

export interface Network {
  type: NetworkType;
  name: string;
  chainId?: number;
  requiredConfirmations: number;
  symbol?: string;
  rpcUrls: RpcEndpoint[];
  features: string[];
  tags: string[];
  averageBlocktimeMs?: number;
  isTestnet: boolean;
  /** Stellar network passphrase. */
  passphrase?: string;
  /** The entry as written (snake_case, after `from` inheritance): fields only its chain family reads (its spec's network.fields). */
  fields: Readonly<Record<string, unknown>>;
}
