// PGlite on a thread of its own (the thread's side: db/pglite-thread.mjs). Its statements run
// synchronously in WebAssembly, about half of the service's CPU on the embedded database: on the
// event loop, a chain of them held every request behind it.
// This side offers the part of PGlite's interface that Prisma's adapter and db/client.ts use
// (query, exec, transaction), so either runs on it unchanged.
import { Worker } from 'node:worker_threads';
import { messages, type PGlite, type Results, type Transaction, types } from '@electric-sql/pglite';

export type Parsers = Record<number, (value: string, oid?: number) => unknown>;
interface QueryOptions {
  rowMode?: 'array' | 'object';
  parsers?: Parsers;
  /** A named statement, parsed once (SQL whose text is a constant). */
  prepare?: boolean;
}
interface Raw {
  rows: (string | null)[][];
  fields: { name: string; dataTypeID: number }[];
  affectedRows: number;
}
interface Failure {
  message: string;
  name?: string;
  database: boolean;
  fields: Record<string, string | number | boolean | null>;
}

const BASE = types.parsers as Parsers;

/**
 * PGlite's own parsing of values: its built-in parsers, and for each array type (`arrays`: array
 * type, element type) its element's parser applied to every element.
 */
function defaultParsers(arrays: [number, number][]): Parsers {
  const text = (x: string) => x;
  const parsers: Parsers = { ...BASE };
  for (const [array, element] of arrays) parsers[array] = (v: string) => types.arrayParser(v, BASE[element] ?? text, array);
  return parsers;
}

/** Values as PGlite reads them: the query's own parsers first, then `defaults`, else text as is. */
function parse(raw: Raw, defaults: Parsers, opts?: QueryOptions): Results {
  const convert = raw.fields.map(({ dataTypeID }) => {
    const p = opts?.parsers?.[dataTypeID] ?? defaults[dataTypeID];
    return p ? (v: string | null) => (v === null ? null : p(v, dataTypeID)) : (v: string | null) => v;
  });
  const rows =
    opts?.rowMode === 'array'
      ? raw.rows.map((r) => r.map((v, i) => convert[i](v)))
      : raw.rows.map((r) => Object.fromEntries(r.map((v, i) => [raw.fields[i].name, convert[i](v)])));
  return { rows, fields: raw.fields, affectedRows: raw.affectedRows } as Results;
}

function failure(f: Failure): Error {
  const e = f.database ? new messages.DatabaseError(f.message, Number(f.fields.length ?? 0), 'error') : new Error(f.message);
  return Object.assign(e, f.fields);
}

export interface Statement {
  sql: string;
  params?: unknown[];
  /** A named statement, parsed once per connection and planned at every run (SQL whose text is a constant). */
  prepare?: boolean;
}

/**
 * Whether a batch commits the transaction after its statements: always, never, or when every row the
 * last statement returned has column `unlessSet`, null (what would follow depends on those rows;
 * without any, committing in the same round trip spares a transaction held open for nothing).
 */
export type Commit = boolean | { unlessSet: string };

export interface ThreadedPGlite {
  query: PGlite['query'];
  /** query() with this side's options: parsers of its own, a named statement. */
  read(sql: string, params: unknown[] | undefined, opts: QueryOptions): Promise<Results>;
  exec: PGlite['exec'];
  transaction: PGlite['transaction'];
  /**
   * Statements in order, in transaction `tx` or a new one, sent to the thread as one message; as
   * `commit` says, the transaction commits after them. A failed statement rolls the transaction back.
   */
  batch(statements: Statement[], opts: { tx?: number; commit?: Commit; parsers?: Parsers }): Promise<{ tx: number; results: Results[]; committed: boolean }>;
  /** Ends transaction `tx` (one a batch opened); nothing when it has ended already. */
  end(tx: number, commit: boolean): Promise<void>;
  readonly closed: boolean;
  close(): Promise<void>;
}

/**
 * Opens the database under `dataDir` (in memory without one) on a new thread; statements marked
 * `prepare` are named, up to `maxPrepared` texts (none without it).
 */
export async function openThreadedPGlite(dataDir?: string, opts: { maxPrepared?: number } = {}): Promise<ThreadedPGlite> {
  const worker = new Worker(new URL('./pglite-thread.mjs', import.meta.url), {
    workerData: { dataDir, maxPrepared: opts.maxPrepared },
    execArgv: process.execArgv.filter((a) => a.startsWith('--cpu-prof')),
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let next = 1;
  let stopped: Error | undefined;
  let closed = false;
  let closing: Promise<void> | undefined;
  const stop = (e: Error) => {
    stopped ??= e;
    for (const p of pending.values()) p.reject(stopped);
    pending.clear();
  };
  const defaults = await new Promise<Parsers>((resolve, reject) => {
    const failed = (e: Error) => {
      worker.off('message', ready);
      reject(e);
    };
    const exited = (code: number) => failed(new Error(`the database thread exited (${code}) while opening`));
    const ready = (m: { arrays: [number, number][] }) => {
      worker.off('error', failed).off('exit', exited);
      resolve(defaultParsers(m.arrays));
    };
    worker.once('message', ready).once('error', failed).once('exit', exited);
  });
  worker.on('message', (m: { id: number; ok?: unknown; err?: Failure }) => {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.err) p.reject(failure(m.err));
    else p.resolve(m.ok);
  });
  worker.on('error', (e) => stop(new Error(`the database thread failed: ${e instanceof Error ? e.message : String(e)}`)));
  worker.on('exit', (code) => stop(new Error(`the database thread exited (${code})`)));

  const call = <T>(m: Record<string, unknown>) =>
    new Promise<T>((resolve, reject) => {
      if (stopped || closed) return reject(stopped ?? new Error('the database thread is closed'));
      const id = next++;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      worker.postMessage({ id, ...m });
    });
  const query = async (tx: number | undefined, sql: string, params?: unknown[], opts?: QueryOptions) =>
    parse(await call<Raw>({ op: 'query', tx, sql, params: params ?? [], prepare: opts?.prepare }), defaults, opts);
  const exec = async (tx: number | undefined, sql: string, opts?: QueryOptions) =>
    (await call<Raw[]>({ op: 'exec', tx, sql })).map((r) => parse(r, defaults, opts));

  return {
    async batch(statements, { tx, commit, parsers }) {
      const r = await call<{ tx: number; results: Raw[]; committed: boolean }>({ op: 'batch', tx, commit, statements });
      return { tx: r.tx, results: r.results.map((raw) => parse(raw, defaults, { parsers })), committed: r.committed };
    },
    end: (tx, commit) => call({ op: 'end', tx, commit }),
    query: ((sql: string, params?: unknown[], opts?: QueryOptions) => query(undefined, sql, params, opts)) as PGlite['query'],
    read: (sql, params, opts) => query(undefined, sql, params, opts),
    exec: ((sql: string, opts?: QueryOptions) => exec(undefined, sql, opts)) as PGlite['exec'],
    transaction: (async <T>(fn: (tx: Transaction) => Promise<T>) => {
      const id = await call<number>({ op: 'begin' });
      let ended = false;
      const end = async (commit: boolean) => {
        if (ended) return;
        ended = true;
        await call({ op: 'end', tx: id, commit });
      };
      const tx = {
        query: (sql: string, params?: unknown[], opts?: QueryOptions) => query(id, sql, params, opts),
        exec: (sql: string, opts?: QueryOptions) => exec(id, sql, opts),
        rollback: () => end(false),
        get closed() {
          return ended;
        },
      } as unknown as Transaction;
      let result: T;
      try {
        result = await fn(tx);
      } catch (e) {
        await end(false).catch(() => {});
        throw e;
      }
      await end(true);
      return result;
    }) as PGlite['transaction'],
    get closed() {
      return closed;
    },
    close() {
      closing ??= (async () => {
        await call({ op: 'close' }).catch(() => {});
        closed = true;
        await worker.terminate();
      })();
      return closing;
    },
  };
}
