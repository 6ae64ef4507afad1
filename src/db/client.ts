import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaClient } from '../generated/prisma/client.js';
import { type Commit, openThreadedPGlite, type Statement, type ThreadedPGlite } from './pglite-thread.js';

export type { Commit, Statement };
import { applyMigrations } from './schema-engine.js';
import { listen } from './notify.js';
import { PLAN_CACHE_MODE, PLAN_ONCE } from './plans.js';

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
   * A database transaction of hand-written statements: it commits when `fn` returns (or with the
   * batch `fn` runs with `commit`), and rolls back when `fn` throws. On the embedded database a
   * batch is one message to its thread and back, the commit included, so the transaction holds the
   * database for fewer waits on the event loop.
   */
  transaction<T>(fn: (tx: Batches) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /** PostgreSQL only: NOTIFY messages on `channel`, on a connection of their own (db/notify.ts). */
  listen?(channel: string, onMessage: (payload: string) => void, onError: (err: Error) => void): { ready: Promise<void>; stop(): Promise<void> };
  close(): Promise<void>;
}

export interface Batches {
  /** Runs `statements` in order; the rows of each read as `read`'s. */
  run(statements: Statement[], opts?: { commit?: Commit }): Promise<Record<string, unknown>[][]>;
}

/** Whether `commit` commits after a batch whose last statement returned `rows` (the thread decides alike). */
const commits = (commit: Commit | undefined, rows: Record<string, unknown>[] | undefined): boolean =>
  typeof commit === 'object' ? !(rows ?? []).some((r) => r[commit.unlessSet] !== null) : !!commit;

export interface TransactionOptions {
  /** Its named statements planned once per connection: only for statements no table's size plans differently (see PLAN_ONCE). */
  planOnce?: boolean;
}

export interface ReadOptions {
  /** A named statement, parsed once per connection (see PLAN_CACHE_MODE). Only for SQL whose text is a constant. */
  prepare?: boolean;
}

/** Prepared statements per process (per connection on PGlite) at most; past it, SQL runs unnamed (a bound, should a caller build texts). */
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
    const databaseUrl = opts.databaseUrl;
    // Migrations on their own pool, ended afterwards (it drops the engine's session locks).
    await applyMigrations(new PrismaPg({ connectionString: opts.databaseUrl, max: 10 }));
    const pool = new pg.Pool({
      connectionString: opts.databaseUrl,
      max: 10,
      // Before the connection is handed out (a server without the setting keeps its default).
      onConnect: async (client) => {
        await client.query(`SET plan_cache_mode = ${PLAN_CACHE_MODE}`).catch(() => {});
      },
    });
    // Without a listener, an idle connection the server ends would be an uncaught exception.
    pool.on('error', (err) => opts.onIdleError?.(err));
    const prisma = new PrismaClient({ adapter: new PrismaPg(pool) });
    const names = new Map<string, string>();
    const nameOf = (sql: string) => {
      let name = names.get(sql);
      if (!name && names.size < MAX_PREPARED) names.set(sql, (name = `relayer_stmt_${names.size}`));
      return name;
    };
    return {
      prisma,
      kind: 'postgres',
      query: async (sql, params) => (await pool.query(sql, params)).rows,
      read: async (sql, params, opts) => (await pool.query({ text: sql, values: params, types: pgTypes, name: opts?.prepare ? nameOf(sql) : undefined })).rows,
      transaction: (fn, opts) => pgTransaction(pool, nameOf, fn, opts),
      listen: (channel, onMessage, onError) => listen(databaseUrl, channel, onMessage, onError),
      close: async () => {
        await prisma.$disconnect();
        await pool.end().catch(() => {});
      },
    };
  }
  let dir: string | undefined;
  if (!opts.inMemory) {
    dir = path.join(opts.dataDir ?? './data', 'pglite');
    await mkdir(dir, { recursive: true });
  }
  const pglite = await openThreadedPGlite(dir, { maxPrepared: MAX_PREPARED });
  await pglite.exec(`SET plan_cache_mode = ${PLAN_CACHE_MODE}`);
  // Prisma's adapter uses only the three entry points the thread offers.
  const factory = new PrismaPGlite(pglite as unknown as PGlite);
  await applyMigrations(factory).catch(async (e) => {
    await pglite.close();
    throw e;
  });
  const prisma = new PrismaClient({ adapter: factory });
  return {
    prisma,
    kind: 'pglite',
    query: async <T>(sql: string, params?: unknown[]) => (await pglite.query<T>(sql, params)).rows,
    read: async <T>(sql: string, params?: unknown[], opts?: ReadOptions) =>
      (await pglite.read(sql, params, { parsers: pgliteParsers, prepare: opts?.prepare })).rows as T[],
    transaction: (fn, opts) => pgliteTransaction(pglite, fn, opts),
    close: async () => {
      await prisma.$disconnect();
      await pglite.close();
    },
  };
}

async function pgTransaction<T>(
  pool: pg.Pool,
  nameOf: (sql: string) => string | undefined,
  fn: (tx: Batches) => Promise<T>,
  options?: TransactionOptions,
): Promise<T> {
  const client = await pool.connect();
  // A checked-out client has no listener of the pool's: a server that goes away while it is held
  // would otherwise end the process (the statement in flight, if any, fails on its own).
  let lost: Error | undefined;
  const onLost = (err: Error) => (lost ??= err);
  client.on('error', onLost);
  let open = false;
  let ended = false;
  const finish = async (sql: 'COMMIT' | 'ROLLBACK') => {
    open = false;
    await client.query(sql);
  };
  try {
    const result = await fn({
      async run(statements, opts) {
        if (ended) throw new Error('the transaction has ended');
        // A single statement committed at once needs no BEGIN and COMMIT around it: it is atomic.
        // Planned once, it runs in a transaction, which the setting lasts for (sent with the BEGIN).
        if (!open && !(opts?.commit === true && statements.length === 1 && !options?.planOnce)) {
          await client.query(options?.planOnce ? `BEGIN; ${PLAN_ONCE}` : 'BEGIN');
          open = true;
        }
        const rows: Record<string, unknown>[][] = [];
        for (const s of statements)
          rows.push((await client.query({ text: s.sql, values: s.params, types: pgTypes, name: s.prepare ? nameOf(s.sql) : undefined })).rows);
        ended = commits(opts?.commit, rows.at(-1));
        if (open && ended) await finish('COMMIT');
        return rows;
      },
    });
    if (open) await finish('COMMIT');
    client.off('error', onLost);
    client.release(lost);
    return result;
  } catch (e) {
    // A connection that cannot roll back is not given back to the pool.
    const broken =
      lost ??
      (open
        ? await finish('ROLLBACK').then(
            () => undefined,
            (err: Error) => err,
          )
        : undefined);
    client.off('error', onLost);
    client.release(broken);
    throw e;
  }
}

async function pgliteTransaction<T>(pglite: ThreadedPGlite, fn: (tx: Batches) => Promise<T>, options?: TransactionOptions): Promise<T> {
  let tx: number | undefined;
  let open = false;
  try {
    const result = await fn({
      async run(statements, opts) {
        if (tx !== undefined && !open) throw new Error('the transaction has ended');
        open = false; // a failed batch rolls the transaction back on the database's side
        // Planned once: the setting goes first in the same message (two statements are a transaction).
        const first = tx === undefined && options?.planOnce ? [{ sql: PLAN_ONCE, params: [] }] : [];
        const r = await pglite.batch([...first, ...statements], { tx, commit: opts?.commit, parsers: pgliteParsers });
        tx = r.tx;
        open = !r.committed;
        return r.results.slice(first.length).map((x) => x.rows as Record<string, unknown>[]);
      },
    });
    if (open) {
      open = false;
      await pglite.end(tx!, true);
    }
    return result;
  } catch (e) {
    if (open) await pglite.end(tx!, false).catch(() => {});
    throw e;
  }
}
