import { z } from 'zod';
import type { Env, LogLevel } from '../core/settings.js';

export type { Env };

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no'], { message: 'must be true or false' }).transform((v) => v === 'true' || v === '1' || v === 'yes');
const port = z.coerce.number().int().min(0).max(65535);
const positive = z.coerce.number().positive();
/** A Soroban contract address (its StrKey checksum is checked where it is used). */
const contractAddress = z.string().regex(/^C[A-Z2-7]{55}$/, 'must be a C… contract address');

const schema = z.object({
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port.optional(),
  APP_PORT: port.optional(),
  API_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  CONFIG_PATH: z.string().min(1).optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .optional(),
  DEVNET: bool.optional(),
  DEVNET_PORT: port.default(8545),
  RATE_LIMIT_REQUESTS_PER_SECOND: positive.default(100),
  RATE_LIMIT_BURST_SIZE: z.coerce.number().int().positive().default(300),
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  WEBHOOK_BLOCK_PRIVATE_TARGETS: bool.default(false),
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().positive().default(1_000),
  WEBHOOK_RETRY_MAX_DELAY_MS: z.coerce.number().int().positive().default(600_000),
  WEBHOOK_RETRY_WINDOW_MS: z.coerce.number().int().positive().default(86_400_000),
  GRAPHQL_MAX_DEPTH: z.coerce.number().int().positive().default(8),
  GRAPHQL_MAX_ALIASES: z.coerce.number().int().min(0).default(15),
  GRAPHQL_MAX_DIRECTIVES: z.coerce.number().int().min(0).default(50),
  GRAPHQL_MAX_TOKENS: z.coerce.number().int().positive().default(1000),
  GRAPHQL_MAX_COST: z.coerce.number().int().positive().default(1000),
  GRAPHQL_MAX_BYTES: z.coerce.number().int().positive().default(65_536),
  MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(1 << 20),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] satisfies LogLevel[]).default('info'),
  INSTANCE_ID: z.string().min(1).optional(),
  SIGNER_STORE_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
  SIGNER_TIMEOUT_MS: z.coerce.number().int().positive().max(300_000).default(10_000),
  RELAYER_CRASH_AT: z.string().min(1).optional(),
  METRICS_ENABLED: bool.default(false),
  METRICS_PORT: port.default(8081),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  PLUGIN_MAX_CONCURRENCY: z.coerce.number().int().positive().max(256).default(4),
  PLUGIN_MAX_QUEUE: z.coerce.number().int().min(0).max(100_000).default(64),
  PLUGIN_MEMORY_MB: z.coerce.number().int().min(16).max(16_384).default(128),
  JUPITER_API_URL: z.url().default('https://lite-api.jup.ag'),
  PRICE_TIMEOUT_MS: z.coerce.number().int().positive().max(60_000).default(5_000),
  PRICE_CACHE_MS: z.coerce.number().int().min(0).max(300_000).default(10_000),
  PLUGIN_POOL_SIZE: z.coerce.number().int().positive().max(256).default(4),
  STELLAR_MAINNET_FEE_FORWARDER_ADDRESS: contractAddress.optional(),
  STELLAR_TESTNET_FEE_FORWARDER_ADDRESS: contractAddress.optional(),
});

export class EnvError extends Error {}

/** Parses every variable at once; an invalid environment lists all of its problems. */
export function parseEnv(source: Record<string, string | undefined> = process.env): Env {
  const cleaned = Object.fromEntries(Object.entries(source).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new EnvError(`invalid environment:\n${lines.join('\n')}`);
  }
  const e = result.data;
  return {
    host: e.HOST,
    port: e.PORT ?? e.APP_PORT ?? 8080,
    apiKey: e.API_KEY,
    configPath: e.CONFIG_PATH ?? './config/config.json',
    configPathGiven: e.CONFIG_PATH !== undefined,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    devnet: e.DEVNET ?? e.CONFIG_PATH === undefined,
    devnetPort: e.DEVNET_PORT,
    rateLimit: { perSecond: e.RATE_LIMIT_REQUESTS_PER_SECOND, burst: e.RATE_LIMIT_BURST_SIZE },
    webhook: {
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      blockPrivateTargets: e.WEBHOOK_BLOCK_PRIVATE_TARGETS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryMaxDelayMs: e.WEBHOOK_RETRY_MAX_DELAY_MS,
      retryWindowMs: e.WEBHOOK_RETRY_WINDOW_MS,
    },
    graphqlLimits: {
      depth: e.GRAPHQL_MAX_DEPTH,
      aliases: e.GRAPHQL_MAX_ALIASES,
      directives: e.GRAPHQL_MAX_DIRECTIVES,
      tokens: e.GRAPHQL_MAX_TOKENS,
      cost: e.GRAPHQL_MAX_COST,
      bytes: e.GRAPHQL_MAX_BYTES,
    },
    maxBodyBytes: e.MAX_BODY_BYTES,
    logLevel: e.LOG_LEVEL,
    instanceId: e.INSTANCE_ID,
    signerStoreKey: e.SIGNER_STORE_KEY,
    signerTimeoutMs: e.SIGNER_TIMEOUT_MS,
    crashAt: e.RELAYER_CRASH_AT,
    metrics: { enabled: e.METRICS_ENABLED, port: e.METRICS_PORT },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    plugins: { concurrency: e.PLUGIN_MAX_CONCURRENCY, queue: e.PLUGIN_MAX_QUEUE, memoryMb: e.PLUGIN_MEMORY_MB, poolSize: e.PLUGIN_POOL_SIZE },
    prices: { jupiterUrl: e.JUPITER_API_URL.replace(/\/+$/, ''), timeoutMs: e.PRICE_TIMEOUT_MS, cacheMs: e.PRICE_CACHE_MS },
    stellarFeeForwarder: { mainnet: e.STELLAR_MAINNET_FEE_FORWARDER_ADDRESS, testnet: e.STELLAR_TESTNET_FEE_FORWARDER_ADDRESS },
  };
}
