import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAnvil } from '../../src/chains/evm/anvil.js';
import { parseEnv } from '../../src/config/env.js';
import { createLogger } from '../../src/lib/log.js';
import { startService, type Service } from '../../src/service.js';
import type { Custodies } from '../../src/signers/custody.js';
import { seedPglite } from './pglite.js';
import { createTestDatabase } from './postgres.js';

export const API_KEY = 'test-api-key-0123456789abcdef-0123456789';
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** anvil's funded dev account #0, in a keystore with passphrase "devnet". */
export const DEV_KEYSTORE = path.join(ROOT, 'config/keys/devnet.json');
export const DEV_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

export type Anvil = Awaited<ReturnType<typeof startAnvil>>;

/** A config with one EVM relayer ("evm-relayer") on `rpcUrl`, in the reference system's format. */
export function evmConfig(rpcUrl: string, overrides: { relayer?: object; notifications?: object[]; chainId?: number } = {}) {
  return {
    relayers: [
      {
        id: 'evm-relayer',
        name: 'EVM relayer',
        network: 'localnet',
        network_type: 'evm',
        paused: false,
        signer_id: 'dev-signer',
        policies: {},
        ...overrides.relayer,
      },
    ],
    signers: [{ id: 'dev-signer', type: 'local', config: { path: DEV_KEYSTORE, passphrase: { type: 'plain', value: 'devnet' } } }],
    notifications: overrides.notifications ?? [],
    networks: [
      {
        type: 'evm',
        network: 'localnet',
        chain_id: overrides.chainId ?? 31337,
        required_confirmations: 1,
        symbol: 'ETH',
        rpc_urls: [rpcUrl],
        features: ['eip1559'],
        is_testnet: true,
        average_blocktime_ms: 1000,
      },
    ],
  };
}

export interface TestService extends Service {
  dir: string;
  anvil?: Anvil;
  /** A request through the whole app (no port), with the API key unless headers say otherwise. */
  request(method: string, urlPath: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** A GraphQL operation; returns the parsed JSON response. */
  gql<T = any>(query: string, variables?: Record<string, unknown>): Promise<{ data?: T; errors?: any[] }>;
  /** Stops this service (not its chain, folder or database) and starts a new one on the same state (`workers` as given, else as before). */
  restart(env?: Record<string, string>, workers?: boolean): Promise<TestService>;
}

/**
 * Starts the whole service in this process on a temporary DATA_DIR, on PGlite or on a fresh
 * PostgreSQL database, with anvil when the config needs a chain. stop() cleans everything up.
 */
export async function startTestService(
  opts: {
    db?: 'pglite' | 'postgres';
    /** Builds the config; given the anvil URL when `anvil` is set. */
    config?: (ctx: { rpcUrl: string }) => object;
    anvil?: boolean | { blockTime?: number; gasLimit?: number };
    env?: Record<string, string>;
    workers?: boolean;
    custodies?: Custodies;
  } = {},
): Promise<TestService> {
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-test-'));
  const anvil = opts.anvil ? await startAnvil({ port: 0, ...(typeof opts.anvil === 'object' ? opts.anvil : {}) }) : undefined;
  const database = opts.db === 'postgres' ? await createTestDatabase() : undefined;
  const configPath = path.join(dir, 'config.json');
  const config = (opts.config ?? ((c) => evmConfig(c.rpcUrl)))({ rpcUrl: anvil?.url ?? 'http://127.0.0.1:1' });
  await writeFile(configPath, JSON.stringify(config, null, 2));
  const envVars: Record<string, string> = {
    API_KEY,
    CONFIG_PATH: configPath,
    DATA_DIR: dir,
    DEVNET: 'false',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...(database ? { DATABASE_URL: database.url } : {}),
    ...opts.env,
  };
  if (!envVars.DATABASE_URL) await seedPglite(dir);
  const env = parseEnv(envVars);
  const cleanup = async () => {
    await anvil?.stop();
    await database?.drop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    return await wrap(await startService(env, { log: createLogger(env.logLevel), workers: opts.workers, custodies: opts.custodies }));
  } catch (e) {
    await cleanup();
    throw e;
  }

  function wrap(service: Service): TestService {
    const request = (method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}) =>
      service.app.fetch(
        new Request(`http://relayer.test${urlPath}`, {
          method,
          headers: { authorization: `Bearer ${service.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
          body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
        }),
      );
    return {
      ...service,
      dir,
      anvil,
      request,
      async gql(query, variables) {
        const res = await request('POST', '/graphql', { query, variables });
        return res.json();
      },
      async restart(overrides = {}, workers = opts.workers) {
        await service.stop();
        const next = parseEnv({ ...envVars, ...overrides });
        return wrap(await startService(next, { log: createLogger(next.logLevel), workers }));
      },
      async stop() {
        await service.stop();
        await cleanup();
      },
    };
  }
}
