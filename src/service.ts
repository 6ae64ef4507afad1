import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createApp, type App } from './app.js';
import { ConfigError, loadConfig } from './config/load.js';
import { loadSigners } from './config/signers.js';
import { syncConfig } from './config/sync.js';
import { openDatabase } from './db/client.js';
import { startDevnet } from './devnet.js';
import type { Env } from './core/settings.js';
import { createLogger, type Logger } from './lib/log.js';
import { createEvents } from './core/pubsub.js';
import { defaultWindow, rateLimits } from './lib/rate-limits.js';
import { connectRedis } from './lib/redis.js';
import { crashAt } from './lib/crash.js';
import { createState } from './core/state.js';
import type { Runtime } from './core/runtime.js';
import { line } from './lib/line.js';
import { startWorkers } from './core/worker.js';
import { FAMILY_SPECS } from './chains/list.js';
import { loadFamilies } from './core/registry.js';
import { releaseAll } from './db/lease.js';
import { createMetrics } from './metrics/index.js';
import { watchDatabase } from './metrics/scrape.js';
import { startMetricsServer } from './metrics/server.js';
import { applyNetworkOverrides } from './core/networks.js';
import { closeSigners, signerFor } from './core/signers.js';
import { followChanges } from './core/follow.js';
import { custodiesOf, type Custodies } from './signers/custody.js';
import { CUSTODY_TYPES } from './signers/list.js';
import { loadPlugins, stopPlugins } from './core/plugins/pool.js';

export interface Service {
  rt: Runtime;
  app: App;
  apiKey: string;
  /** The port of the metrics server (METRICS_ENABLED), once listening. */
  metricsPort?: number;
  /** Stops the work (finishing the current steps), gives this instance's leases back, closes the database and the devnet. */
  stop(): Promise<void>;
  /** When a stop takes too long: signals the devnet to stop, so the process leaves nothing running behind it. */
  abandon(): void;
}

export class StartupError extends Error {}

/**
 * SIGNER_STORE_KEY, else (embedded default only) one generated once and kept under DATA_DIR beside
 * the API key, so signers can be created through the API on a fresh start.
 */
async function resolveStoreKey(env: Env): Promise<string | undefined> {
  if (env.signerStoreKey || env.databaseUrl) return env.signerStoreKey;
  const file = path.join(env.dataDir, 'signer-store-key');
  const existing = (await readFile(file, 'utf8').catch(() => '')).trim();
  if (existing.length >= 32) return existing;
  const key = randomBytes(32).toString('base64url');
  await mkdir(env.dataDir, { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/** The API key: API_KEY, else (embedded default only) one generated once and kept under DATA_DIR. */
async function resolveApiKey(env: Env, log: Logger): Promise<string> {
  if (env.apiKey) return env.apiKey;
  if (env.databaseUrl) throw new StartupError('API_KEY is required when DATABASE_URL is set (at least 32 characters)');
  const file = path.join(env.dataDir, 'api-key');
  const existing = await readFile(file, 'utf8').catch(() => '');
  if (existing.trim().length >= 32) return existing.trim();
  const key = randomBytes(32).toString('base64url');
  await mkdir(env.dataDir, { recursive: true });
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  // Printed once, on stdout rather than through the logger, which redacts keys.
  process.stdout.write(`\nNo API_KEY set: generated one and saved it to ${file}\n  API key: ${key}\n\n`);
  log.info({ file }, 'generated an API key');
  return key;
}

export async function startService(
  given: Env,
  /** `custodies`: the signer types offered (default: signers/list.ts). */
  opts: { log?: Logger; workers?: boolean; custodies?: Custodies } = {},
): Promise<Service> {
  const log = opts.log ?? createLogger(given.logLevel);
  const apiKey = await resolveApiKey(given, log);
  const env = { ...given, signerStoreKey: await resolveStoreKey(given) };
  // The chain families offered (chains/list.ts) with their pipelines: everything below derives from them.
  const families = await loadFamilies(FAMILY_SPECS);
  const custodies = opts.custodies ?? custodiesOf(CUSTODY_TYPES);
  const config = await loadConfig(env.configPath, families, process.env, custodies);
  const signers = await loadSigners(config, families);
  // Compiled and loaded once here: a plugin that does not is a config problem, all listed at once.
  // A plugin's process may read neither the config file, the data folder nor a keystore.
  const guarded = [config.file, env.dataDir, ...[...config.signers.values()].flatMap((s) => ('keystorePath' in s ? [s.keystorePath] : []))];
  const { plugins, problems } = await loadPlugins(config.plugins, env.plugins, guarded);
  if (problems.length) throw new ConfigError(config.file, problems);
  const devnet = await (env.devnet ? startDevnet(config, env.devnetPort, env.dataDir, log) : undefined)?.catch(async (e) => {
    await stopPlugins(plugins);
    throw e;
  });
  const db = await openDatabase({
    databaseUrl: env.databaseUrl,
    dataDir: env.dataDir,
    // Code and message only: the error carries the pg client, connection parameters included.
    onIdleError: (err) =>
      log.warn({ code: (err as { code?: string }).code, reason: err.message }, 'an idle database connection failed; the pool opens a new one'),
  }).catch(async (e) => {
    await stopPlugins(plugins);
    await devnet?.stop();
    throw e;
  });
  const redis = env.redisUrl ? await connectShared(env.redisUrl) : undefined;
  const rt: Runtime = {
    env,
    log,
    config,
    instanceId: env.instanceId ?? randomUUID(),
    metrics: createMetrics(),
    crash: crashAt(env.crashAt),
    state: createState(),
    db,
    families,
    signers: { loaded: signers, custodies },
    access: {
      rateLimit: rateLimits(defaultWindow(env.rateLimit.perSecond, env.rateLimit.burst), redis?.publish),
    },
    notifications: {
      events: createEvents(redis, (err) => log.warn({ err }, 'live events: Redis command failed')),
      sender: line(),
    },
    work: line(),
    plugins,
    redisPing: redis ? () => redis.publish.ping() : undefined,
  };
  try {
    await loadCustodySigners(rt);
    await syncConfig(db.prisma, config, families, signers);
  } catch (e) {
    await stopPlugins(plugins);
    await db.close();
    redis?.publish.disconnect();
    redis?.subscribe.disconnect();
    await devnet?.stop();
    throw e;
  }
  const changes = followChanges(rt);
  watchDatabase(rt);
  const metrics = env.metrics.enabled
    ? await startMetricsServer(rt.metrics.registry, env.host, env.metrics.port, log).catch(async (e: Error) => {
        await stopPlugins(plugins);
        await db.close();
        redis?.publish.disconnect();
        redis?.subscribe.disconnect();
        await devnet?.stop();
        throw new StartupError(`metrics: cannot listen on ${env.host}:${env.metrics.port}: ${e.message}`);
      })
    : undefined;
  await applyNetworkOverrides(rt);
  await loadApiSigners(rt);
  const workers = opts.workers === false ? undefined : await startWorkers(rt);
  const app = createApp(rt, apiKey);
  log.info({ database: db.kind, relayers: config.relayers.length, instance: rt.instanceId }, 'relayer service ready');
  return {
    rt,
    app,
    apiKey,
    metricsPort: metrics?.port,
    abandon: () => void devnet?.process.kill('SIGTERM'),
    async stop() {
      // Each stage is logged: an operator watching a drain sees where it is.
      log.info('stopping workers: finishing the current steps');
      await workers?.stop();
      await stopPlugins(plugins);
      // Nothing here works on a row any more: another instance may take this one's rows at once.
      const released = await Promise.all([releaseAll(db, rt.instanceId, 'transactions'), releaseAll(db, rt.instanceId, 'deliveries')]);
      log.info({ transactions: released[0], deliveries: released[1] }, 'workers stopped; leases released');
      await metrics?.stop();
      await changes?.stop();
      await closeSigners(rt);
      await db.close();
      redis?.publish.disconnect();
      redis?.subscribe.disconnect();
      log.info('database closed');
      if (devnet) {
        await devnet.stop();
        log.info('devnet stopped');
      }
    },
  };
}

/** Signers of relayers created through the API (the file's were loaded with it); one that fails disables only its relayer. */
/**
 * The config file's relayers on a custody's key: each key is asked for its public part now. One
 * that does not answer is logged; its relayer is disabled by its start-up check until it does.
 */
async function loadCustodySigners(rt: Runtime) {
  await Promise.all(
    rt.config.relayers
      .filter((r) => rt.config.signers.get(r.signerId)?.type === 'custody')
      .map((r) => signerFor(rt, r.signerId, r.networkType).catch((err: Error) => rt.log.warn({ relayerId: r.id, reason: err.message }, 'signer not loaded'))),
  );
}

async function loadApiSigners(rt: Runtime) {
  for (const r of await rt.db.prisma.relayer.findMany({ where: { configDigest: null }, select: { id: true, signerId: true, networkType: true } })) {
    await signerFor(rt, r.signerId, r.networkType).catch((err) => rt.log.error({ err, relayerId: r.id }, 'signer of relayer could not be loaded'));
  }
}

/** Two connections: a subscribed Redis connection can do nothing else. */
async function connectShared(url: string) {
  const [publish, subscribe] = await Promise.all([connectRedis(url), connectRedis(url)]);
  return { publish, subscribe };
}
