import { invalid } from './domain-error.js';

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
  currentPage: number;
  perPage: number;
  totalItems: () => Promise<number>;
}

export const paged = <T>(page: Page, items: () => Promise<T[]>, totalItems: () => Promise<number>): Paged<T> => ({
  items,
  pagination: { currentPage: page.currentPage, perPage: page.perPage, totalItems },
});

/** What a list request reads: its rows, its total, or both. */
export interface PageAsk {
  items: boolean;
  total: boolean;
}
