import { invalid } from './domain-error.js';
import { once } from '../lib/once.js';

export const DEFAULT_PER_PAGE = 10;
export const MAX_PER_PAGE = 100;

export interface Page {
  currentPage: number;
  perPage: number;
  skip: number;
}

/** Pages start at 1; per_page defaults to 10 and is at most 100. */
export function toPage(page?: number | null, perPage?: number | null): Page {
  const p = page ?? 1;
  const n = perPage ?? DEFAULT_PER_PAGE;
  if (!Number.isInteger(p) || p < 1) throw invalid('page: must be an integer >= 1');
  if (!Number.isInteger(n) || n < 1 || n > MAX_PER_PAGE) throw invalid(`per_page: must be an integer from 1 to ${MAX_PER_PAGE}`);
  return { currentPage: p, perPage: n, skip: (p - 1) * n };
}

/**
 * A page whose rows and total are read only if the query asks for them: a client that counts does
 * not pay for reading rows, nor one that reads rows for counting them all.
 */
export interface Paged<T> {
  items: () => Promise<T[]>;
  pagination: Pagination;
}

export interface Pagination {
  /** Null on a page asked by cursor. */
  currentPage: number | null;
  perPage: number;
  totalItems: () => Promise<number>;
}

export const paged = <T>(
  page: Pick<Page, 'perPage'> & { currentPage: number | null },
  items: () => Promise<T[]>,
  totalItems: () => Promise<number>,
): Paged<T> => ({
  items,
  pagination: { currentPage: page.currentPage, perPage: page.perPage, totalItems },
});

/** What a list request reads: its rows, its total, or both. */
export interface PageAsk {
  items: boolean;
  total: boolean;
}

/** Where a row stands in a list ordered by creation, newest first: what a cursor names. */
export interface Position {
  createdAt: Date;
  id: string;
}

/** A page asked by cursor: `first` rows (default 10, at most 100) after the cursor `after` (from the start without). */
export interface Seek {
  first: number;
  after: Position | null;
}

/** The opaque cursor of a row: its place in the order, as the base64url of `<createdAt ms>:<id>`. */
export const toCursor = (p: Position): string => Buffer.from(`${p.createdAt.getTime()}:${p.id}`).toString('base64url');

const CURSOR = /^(\d{1,15}):([\x21-\x7e]{1,255})$/;
const LAST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export function toSeek(first?: number | null, after?: string | null): Seek {
  const n = first ?? DEFAULT_PER_PAGE;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PER_PAGE) throw invalid(`first: must be an integer from 1 to ${MAX_PER_PAGE}`);
  if (after == null) return { first: n, after: null };
  const m = /^[\w-]{1,400}$/.test(after) ? CURSOR.exec(Buffer.from(after, 'base64url').toString('latin1')) : null;
  // Up to the end of year 9999: the database's text form of a later time differs.
  if (!m || Number(m[1]) > LAST_MS) throw invalid('after: not a cursor of this list (give an endCursor or an edge cursor as returned)');
  return { first: n, after: { createdAt: new Date(Number(m[1])), id: m[2] } };
}

/** Whether a list goes on after a page, and the cursor to ask for what follows. */
export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
}

/** How a list of a parent (a relayer's) is read, newest first. */
export interface ListReads<T> {
  total(): Promise<number>;
  /** `take` rows after the first `skip`. */
  page(skip: number, take: number): Promise<T[]>;
  /** `take` rows after the position `after` (from the newest without). */
  after(after: Position | null, take: number): Promise<T[]>;
  /** Throws when the parent does not exist: asked only when no row shows that it does. */
  parent?(): Promise<unknown>;
}

/**
 * A page of a list, by number (page, perPage) or by cursor (first, after). Whichever read the
 * request asks for first (its rows, else its total) also shows that the parent exists, since the
 * rows name it: the parent is read only when that answer is empty.
 */
export async function listPage<T extends Position>(
  opts: { page?: number | null; perPage?: number | null; first?: number | null; after?: string | null },
  reads: ListReads<T>,
  ask: PageAsk,
): Promise<Paged<T> & { pageInfo: () => Promise<PageInfo> }> {
  const byCursor = opts.first != null || opts.after != null;
  if (byCursor && (opts.page != null || opts.perPage != null)) throw invalid('give page and perPage, or first and after, not both');
  const total = once(reads.total);
  let list: { currentPage: number | null; perPage: number; rows: () => Promise<T[]>; more: (rows: T[]) => Promise<boolean> };
  if (byCursor) {
    const seek = toSeek(opts.first, opts.after);
    // One row more than asked for tells whether the list goes on.
    const read = once(() => reads.after(seek.after, seek.first + 1));
    list = {
      currentPage: null,
      perPage: seek.first,
      rows: async () => (await read()).slice(0, seek.first),
      more: async () => (await read()).length > seek.first,
    };
  } else {
    const p = toPage(opts.page, opts.perPage);
    list = {
      currentPage: p.currentPage,
      perPage: p.perPage,
      rows: once(() => reads.page(p.skip, p.perPage)),
      more: async (rows) => p.skip + rows.length < (await total()),
    };
  }
  const items = once(list.rows);
  // Both asked for: the count runs beside the rows (on PostgreSQL, on a second connection).
  if (ask.items && ask.total) total().catch(() => {});
  if (reads.parent) {
    const found = ask.items ? (await items()).length > 0 : ask.total ? (await total()) > 0 : false;
    if (!found) await reads.parent();
  }
  const pageInfo = async () => {
    const rows = await items();
    const last = rows.at(-1);
    return { hasNextPage: rows.length > 0 && (await list.more(rows)), endCursor: last ? toCursor(last) : null };
  };
  return { ...paged(list, items, total), pageInfo };
}
