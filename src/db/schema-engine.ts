import { readFile, readdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { bindMigrationAwareSqlAdapterFactory, type SqlDriverAdapter, type SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import * as bindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import pg from 'pg';
import { projectDir } from '../lib/root.js';

// Prisma's schema engine compiled to WebAssembly: migrations run in-process over the same driver
// adapter as the client, so no native engine (which would need a download) is ever required.

export const prismaDir = path.join(projectDir(), 'prisma');
const migrationsDir = path.join(prismaDir, 'migrations');

// Module state, on purpose: the engine's JavaScript glue holds one WebAssembly instance per process
// (__wbg_set_wasm), so it is loaded once and every schema engine shares it.
let ready: Promise<void> | undefined;
function loadWasm(): Promise<void> {
  ready ??= (async () => {
    const js = createRequire(import.meta.url).resolve('@prisma/schema-engine-wasm/schema_engine_bg');
    const wasmPath = js.replace(/\.js$/, '.wasm');
    const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), {
      './schema_engine_bg.js': bindings as unknown as WebAssembly.ModuleImports,
    });
    const exports = instance.exports as unknown as { __wbindgen_start(): void };
    (bindings as unknown as { __wbg_set_wasm(w: unknown): void }).__wbg_set_wasm(exports);
    exports.__wbindgen_start();
  })();
  return ready;
}

export async function openSchemaEngine(factory: SqlMigrationAwareDriverAdapterFactory) {
  await loadWasm();
  const schema = await readFile(path.join(prismaDir, 'schema.prisma'), 'utf8');
  return bindings.SchemaEngine.new({ datamodels: [['schema.prisma', schema]] }, () => {}, bindMigrationAwareSqlAdapterFactory(factory));
}

export async function readMigrations(): Promise<bindings.MigrationList> {
  const names = (await readdir(migrationsDir, { withFileTypes: true }).catch(() => []))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  const lockPath = path.join(migrationsDir, 'migration_lock.toml');
  return {
    baseDir: migrationsDir,
    lockfile: { path: 'migration_lock.toml', content: await readFile(lockPath, 'utf8').catch(() => null) },
    shadowDbInitScript: '',
    migrationDirectories: await Promise.all(
      names.map(async (name) => ({
        path: name,
        migrationFile: {
          path: 'migration.sql',
          content: { tag: 'ok' as const, value: await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8') },
        },
      })),
    ),
  };
}

export const noFilter = { externalTables: [], externalEnums: [] };

/**
 * Applies every migration in prisma/migrations not yet applied; returns the names applied.
 * Instances starting together on one database queue on the engine's migration lock; one that
 * gives up waiting tries again and finds the work done.
 */
export async function applyMigrations(factory: SqlMigrationAwareDriverAdapterFactory, attempts = 5): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    // The engine never closes the connections it opens, and one of them holds the migration lock:
    // close them ourselves, or the next instance to start waits for that lock in vain.
    const opened: { dispose(): Promise<void> }[] = [];
    const tracked: SqlMigrationAwareDriverAdapterFactory = Object.create(factory, {
      connect: { value: async () => keep(opened, await factory.connect()) },
      connectToShadowDb: { value: async () => keep(opened, await factory.connectToShadowDb()) },
    });
    const engine = await openSchemaEngine(tracked);
    try {
      const { appliedMigrationNames } = await engine.applyMigrations({ migrationsList: await readMigrations(), filters: noFilter });
      return appliedMigrationNames;
    } catch (e) {
      if (attempt >= attempts || !/timed out|lock/i.test(String((e as Error).message))) throw e;
      await new Promise((r) => setTimeout(r, 500 * attempt));
    } finally {
      engine.free();
      await Promise.all(opened.map((a) => a.dispose().catch(() => {})));
    }
  }
}

function keep<T extends SqlDriverAdapter>(list: { dispose(): Promise<void> }[], adapter: T): T {
  list.push(adapter);
  return wholeScripts(adapter);
}

/**
 * @prisma/adapter-pg runs a migration script cut at every ";", statement by statement on any
 * connection of its pool: a function body (with ";" inside its quotes) would be cut apart, and a
 * migration half applied could be left behind. Sent whole, as Prisma's native engine sends it, the
 * server parses it and runs it as one transaction. (PGlite's adapter sends it whole already.)
 */
function wholeScripts<T extends SqlDriverAdapter>(adapter: T): T {
  const driver = (adapter as { underlyingDriver?: () => unknown }).underlyingDriver?.();
  if (!(driver instanceof pg.Pool)) return adapter;
  adapter.executeScript = async (script) => {
    try {
      await driver.query(script);
    } catch (e) {
      (adapter as unknown as { onError(e: unknown): never }).onError(e);
    }
  };
  return adapter;
}
