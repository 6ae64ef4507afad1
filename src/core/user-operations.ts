// Reading the ERC-4337 operations relayers' bundlers accepted (table user_operations; written by
// the EVM family, src/chains/evm/aa/store.ts): one by hash, a relayer's as a list, newest first.
import type { Prisma, UserOperation, UserOperationStatus } from '../generated/prisma/client.js';
import { invalid, notFound } from './domain-error.js';
import { listPage, type PageAsk, type PageInfo, type Paged } from './page.js';
import { getRelayer } from './relayers/service.js';
import type { Runtime } from './runtime.js';

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
export function listUserOperations(
  rt: Runtime,
  relayerId: string,
  opts: { page?: number | null; perPage?: number | null; status?: UserOperationStatus | null; first?: number | null; after?: string | null },
  ask: PageAsk = { items: true, total: true },
  relayerKnown = false,
): Promise<Paged<UserOperation> & { pageInfo: () => Promise<PageInfo> }> {
  const where: Prisma.UserOperationWhereInput = { relayerId, ...(opts.status ? { status: opts.status } : {}) };
  return listPage(
    opts,
    {
      total: () => rt.db.prisma.userOperation.count({ where }),
      page: (skip, take) => rt.db.prisma.userOperation.findMany({ where, orderBy: NEWEST, skip, take }),
      after: (after, take) =>
        rt.db.prisma.userOperation.findMany({
          where: after ? { ...where, OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : where,
          orderBy: NEWEST,
          take,
        }),
      ...(relayerKnown ? {} : { parent: () => getRelayer(rt, relayerId) }),
    },
    ask,
  );
}
