// Reading the ERC-4337 operations relayers' bundlers accepted (table user_operations; written by
// the EVM family, src/chains/evm/aa/store.ts): one by hash, a relayer's as a list, newest first.
import type { Prisma, UserOperation, UserOperationStatus } from '../generated/prisma/client.js';
import { invalid, notFound } from './domain-error.js';
import { once } from '../lib/once.js';
import { type Paged, paged, type PageAsk, toCursor, toPage, toSeek } from './page.js';
import { getRelayer } from './relayers/service.js';
import type { Runtime } from './runtime.js';
import type { PageInfo } from './transactions/service.js';

export type { UserOperation };

const HASH = /^0x[0-9a-fA-F]{64}$/;

/** A hash as the table keeps it (lower-case); refuses what is not 32 bytes of hex. */
export function userOperationHash(hash: string): string {
  if (!HASH.test(hash)) throw invalid('hash: must be a 0x-prefixed 32-byte hex string');
  return hash.toLowerCase();
}

export const userOperationNotFound = (hash: string) => notFound(`User operation with hash ${hash} not found`);

/** The operation with `hash` (of the relayer `relayerId` when given). */
export async function getUserOperation(rt: Runtime, hash: string, relayerId?: string | null): Promise<UserOperation> {
  const key = userOperationHash(hash);
  const op = await rt.db.prisma.userOperation.findFirst({ where: { hash: key, ...(relayerId ? { relayerId } : {}) } });
  if (!op) {
    if (relayerId) await getRelayer(rt, relayerId);
    throw userOperationNotFound(hash);
  }
  return op;
}

const NEWEST: Prisma.UserOperationOrderByWithRelationInput[] = [{ createdAt: 'desc' }, { id: 'desc' }];

/**
 * A page of a relayer's operations, newest first, by number (page, perPage) or by cursor (first,
 * after), as a relayer's transactions are listed. The relayer is read when the answer is empty.
 */
export async function listUserOperations(
  rt: Runtime,
  relayerId: string,
  opts: { page?: number | null; perPage?: number | null; status?: UserOperationStatus | null; first?: number | null; after?: string | null },
  ask: PageAsk = { items: true, total: true },
  relayerKnown = false,
): Promise<Paged<UserOperation> & { pageInfo: () => Promise<PageInfo> }> {
  const byCursor = opts.first != null || opts.after != null;
  if (byCursor && (opts.page != null || opts.perPage != null)) throw invalid('give page and perPage, or first and after, not both');
  const where: Prisma.UserOperationWhereInput = { relayerId, ...(opts.status ? { status: opts.status } : {}) };
  const total = once(() => rt.db.prisma.userOperation.count({ where }));
  let list: { currentPage: number | null; perPage: number; rows: () => Promise<UserOperation[]>; more: (rows: UserOperation[]) => Promise<boolean> };
  if (byCursor) {
    const seek = toSeek(opts.first, opts.after);
    const after = seek.after;
    const read = once(() =>
      rt.db.prisma.userOperation.findMany({
        where: after ? { ...where, OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : where,
        orderBy: NEWEST,
        take: seek.first + 1,
      }),
    );
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
      rows: once(() => rt.db.prisma.userOperation.findMany({ where, orderBy: NEWEST, skip: p.skip, take: p.perPage })),
      more: async (rows) => p.skip + rows.length < (await total()),
    };
  }
  const items = once(list.rows);
  if (!relayerKnown) {
    const found = ask.items ? (await items()).length > 0 : ask.total ? (await total()) > 0 : false;
    if (!found) await getRelayer(rt, relayerId);
  }
  const pageInfo = async () => {
    const rows = await items();
    const last = rows.at(-1);
    return { hasNextPage: rows.length > 0 && (await list.more(rows)), endCursor: last ? toCursor(last) : null };
  };
  return { ...paged(list, items, total), pageInfo };
}
