// Pipeline plumbing shared by the Stellar and Solana families (it lives here for the same reason
// as jsonrpc.ts: the two chain folders are the ones their owners may touch).
import type { RpcEndpoint } from '../../config/load.js';
import type { Prisma, Relayer, Transaction } from '../../generated/prisma/client.js';
import { updateTransaction } from '../../modules/transactions/store.js';
import type { Runtime } from '../../runtime.js';

export const FINAL_STATUSES: ReadonlySet<Transaction['status']> = new Set(['confirmed', 'failed', 'expired', 'canceled']);

/**
 * Writes the outcome of one step: the change (status changes send their webhook and live event
 * through updateTransaction), when the row is due again (`nextInMs`; null once final) and the
 * lease given back. Nothing is written when another writer moved the status on meanwhile.
 */
export async function saveStep(
  rt: Runtime,
  tx: Transaction,
  data: Prisma.TransactionUpdateInput,
  nextInMs: number | null,
): Promise<Transaction | null> {
  const dueAt = nextInMs === null ? null : new Date(Date.now() + nextInMs);
  const saved = await updateTransaction(rt, tx.id, { ...data, dueAt, leaseOwner: null, leaseUntil: null }, { expectStatus: [tx.status] });
  if (!saved) {
    await rt.prisma.transaction.updateMany({ where: { id: tx.id, leaseOwner: rt.instanceId }, data: { leaseOwner: null, leaseUntil: null } });
  }
  if (nextInMs === 0) rt.wake();
  return saved;
}

/** The relayer's own RPC URLs when it has any, else its network's. */
export function endpointsOf(relayer: Relayer, networkUrls: RpcEndpoint[]): RpcEndpoint[] {
  const custom = relayer.customRpcUrls as RpcEndpoint[] | null;
  return custom && custom.length > 0 ? custom.map((e) => ({ url: e.url, weight: e.weight ?? 100 })) : networkUrls;
}

/** One client per endpoint list, so endpoint health (cooldowns) is shared by all its users. */
export function clientCache<C>(create: (endpoints: RpcEndpoint[]) => C): (endpoints: RpcEndpoint[]) => C {
  const clients = new Map<string, C>();
  return (endpoints) => {
    const key = JSON.stringify(endpoints);
    let client = clients.get(key);
    if (!client) clients.set(key, (client = create(endpoints)));
    return client;
  };
}

/** A 64-bit integer for JSON: a number while it is exact, else a decimal string (as the Long scalar). */
export const long = (n: bigint): number | string => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString());
