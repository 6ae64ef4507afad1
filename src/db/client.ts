import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations } from './schema-engine.js';
import { createTurns, type Turns } from './turns.js';

export type Db = PrismaClient;
export type DbKind = 'pglite' | 'postgres';

export interface Database {
  prisma: PrismaClient;
  kind: DbKind;
  /** Hand-written SQL on the same connection(s) Prisma uses (benchmarks measure the floor with it). */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /**
   * Hand-written SQL whose rows read as Prisma's: int8 as bigint, timestamp as a UTC Date (both
   * drivers read `timestamp without time zone` as local time), jsonb parsed, enums as strings.
   */
  read<T = Record<string, unknown>>(sql: string, params?: unknown[], opts?: ReadOptions): Promise<T[]>;
  /**
   * The same database for the workers: on PGlite, their operations wait while the API's are
   * queued (db/turns.ts); on PostgreSQL, where the server runs many at once, this one.
   */
  background: Database;
  close(): Promise<void>;
}

export interface ReadOptions {
  /**
   * PostgreSQL: a named statement, parsed and planned once per connection (parsing and planning
   * were about 30% of a read by id). Only for SQL whose text is a constant.
   */
  prepare?: boolean;
}

/** Prepared statements per process at most; past it, SQL runs unnamed (a bound, should a caller build texts). */
const MAX_PREPARED = 64;

const INT8 = 20;
const TIMESTAMP = 1114;
/** A `timestamp without time zone` as Prisma reads it: UTC. */
const utc = (text: string) => new Date(`${text.replace(' ', 'T')}Z`);

// Per query, not pg.types.setTypeParser: Prisma's adapter shares the pool and parses on its own.
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8) return BigInt;
    if (oid === TIMESTAMP) return utc;
    return pg.types.getTypeParser(oid, format);
  }) as typeof pg.types.getTypeParser,
};
const pgliteParsers = { [INT8]: (text: string) => BigInt(text), [TIMESTAMP]: utc };

/**
 * PostgreSQL when a URL is given, else PGlite (PostgreSQL in WebAssembly) under dataDir.
 * Migrations from prisma/migrations are applied before the client is handed out.
 */
export async function openDatabase(opts: {
  databaseUrl?: string;
  dataDir?: string;
  inMemory?: boolean;
  /** An idle PostgreSQL connection failed (server restarted, connection killed); the pool replaces it. */
  onIdleError?: (err: Error) => void;
}): Promise<Database> {
  if (opts.databaseUrl) {
    // Migrations on their own pool, ended afterwards (it drops the engine's session locks).
    await applyMigrations(new PrismaPg({ connectionString: opts.databaseUrl, max: 10 }));
    const pool = new pg.Pool({ connectionString: opts.databaseUrl, max: 10 });
    // Without a listener, an idle connection the server ends would be an uncaught exception.
    pool.on('error', (err) => opts.onIdleError?.(err));
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    const names = new Map<string, string>();
    const nameOf = (sql: string) => {
      let name = names.get(sql);
      if (!name && names.size < MAX_PREPARED) names.set(sql, (name = `relayer_read_${names.size}`));
      return name;
    };
    const db: Database = {
      prisma,
      kind: 'postgres',
      query: async (sql, params) => (await pool.query(sql, params)).rows,
      read: async (sql, params, opts) => (await pool.query({ text: sql, values: params, types: pgTypes, name: opts?.prepare ? nameOf(sql) : undefined })).rows,
      get background() {
        return db;
      },
      close: async () => {
        await prisma.$disconnect();
        await pool.end().catch(() => {});
      },
    };
    return db;
  }
  let pglite: PGlite;
  if (opts.inMemory) {
    pglite = new PGlite();
  } else {
    const dir = path.join(opts.dataDir ?? './data', 'pglite');
    await mkdir(dir, { recursive: true });
    pglite = new PGlite(dir);
  }
  await applyMigrations(new PrismaPGlite(pglite));
  pglite.parsers = pick(pglite.parsers, ARRAYS_READ);
  const turns = createTurns();
  const [api, workers] = [false, true].map((background) => {
    const handle = takingTurns(pglite, turns, background);
    return {
      prisma: new PrismaClient({ adapter: new PrismaPGlite(handle) }),
      query: async <T>(sql: string, params?: unknown[]) => (await handle.query<T>(sql, params)).rows,
      read: async <T>(sql: string, params?: unknown[]) => (await handle.query<T>(sql, params, { parsers: pgliteParsers })).rows,
    };
  });
  const close = async () => {
    await Promise.all([api.prisma.$disconnect(), workers.prisma.$disconnect()]);
    if (!pglite.closed) await pglite.close();
  };
  const background: Database = {
    ...workers,
    kind: 'pglite',
    close,
    get background() {
      return background;
    },
  };
  return { ...api, kind: 'pglite', background, close };
}

/**
 * The array types whose values are parsed into arrays (text[] ... bytea[]): those of the columns
 * a schema like this one has. PGlite copies its instance's parsers into a new object on every
 * query: all of them, with over 300 array types, took about 90 µs, a third of a one-row read. Its
 * built-in parsers of scalar types apply without being listed, so the instance keeps only these.
 */
const ARRAYS_READ = [1009, 1015, 1005, 1007, 1016, 1000, 1115, 1185, 3807, 199, 1231, 1022, 2951, 1001];
const pick = <T>(all: Record<number, T>, keys: number[]) => Object.fromEntries(keys.filter((k) => all[k]).map((k) => [k, all[k]]));

/** PGlite's three entry points (the ones Prisma's adapter and this file use), each run on `turns`. */
function takingTurns(pglite: PGlite, turns: Turns, background: boolean): PGlite {
  const query: PGlite['query'] = (...args) => turns.run(background, () => pglite.query(...args));
  const exec: PGlite['exec'] = (...args) => turns.run(background, () => pglite.exec(...args));
  const transaction: PGlite['transaction'] = (fn) => turns.run(background, () => pglite.transaction(fn));
  return Object.assign(Object.create(pglite), { query, exec, transaction });
}
