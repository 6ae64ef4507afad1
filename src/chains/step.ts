// Pipeline plumbing shared by the non-EVM chain families (Stellar, Solana).
import type { RpcEndpoint } from '../config/load.js';
import type { Relayer, Transaction } from '../generated/prisma/client.js';
import { RelayerCheckError } from '../core/errors.js';
import { saveTransactions, type TransactionPatch } from '../core/transactions/store.js';
import type { Runtime } from '../core/runtime.js';
import { slot } from '../core/state.js';
import { ExpiringMap } from '../lib/expiring.js';

export const FINAL_STATUSES: ReadonlySet<Transaction['status']> = new Set(['confirmed', 'failed', 'expired', 'canceled']);

/**
 * Writes the outcome of one step through saveTransactions: the change (a status change queues its
 * webhook and live event in the same database transaction), when the row is due again
 * (`nextInMs`; null once final) and the lease given back. The row is written
 * only while this instance still holds the lease the row was read with; null when it did not
 * (another instance took the row over), and then nothing was written. A status that becomes
 * `sent` carries `sent_at` in the same write.
 */
export async function saveStep(rt: Runtime, tx: Transaction, patch: TransactionPatch, nextInMs: number | null): Promise<Transaction | null> {
  const dueAt = nextInMs === null ? null : new Date(Date.now() + nextInMs);
  const full: TransactionPatch = { ...patch, dueAt };
  if ((full.status === 'sent' || full.status === 'submitted') && !tx.sentAt && !full.sentAt) full.sentAt = new Date();
  const saved = await saveTransactions(rt, rt.instanceId, [{ before: tx, patch: full, release: true }]);
  const row = saved.get(tx.id) ?? null;
  if (!row) rt.log.warn({ transactionId: tx.id }, 'step result not written: the lease of the transaction was lost');
  if (row && nextInMs === 0) rt.wake();
  return row;
}

/**
 * The start of every `process` call: a row already final only gives its lease back (null);
 * any other gets its relayer, for the family to run the step the row's chain state calls for.
 */
export async function relayerOfStep(rt: Runtime, tx: Transaction): Promise<Relayer | null> {
  if (FINAL_STATUSES.has(tx.status)) {
    await saveStep(rt, tx, {}, null);
    return null;
  }
  return rt.prisma.relayer.findUniqueOrThrow({ where: { id: tx.relayerId } });
}

/** For `checkRelayer`: the family's context, a failure to build it being the relayer's configuration error. */
export function contextForCheck<C>(build: () => C): C {
  try {
    return build();
  } catch (e) {
    throw new RelayerCheckError('ConfigurationError', (e as Error).message);
  }
}

/** The relayer's own RPC URLs when it has any, else its network's. */
export function endpointsOf(relayer: Relayer, networkUrls: RpcEndpoint[]): RpcEndpoint[] {
  const custom = relayer.customRpcUrls as RpcEndpoint[] | null;
  return custom && custom.length > 0 ? custom.map((e) => ({ url: e.url, weight: e.weight ?? 100 })) : networkUrls;
}

const CLIENT_IDLE_MS = 10 * 60_000;

/**
 * One client per endpoint list in each runtime, so endpoint health (cooldowns) is shared by all its
 * users; a list unused for CLIENT_IDLE_MS (a changed custom_rpc_urls) is let go.
 */
export function clientCache<C>(name: string, create: (endpoints: RpcEndpoint[], rt: Runtime) => C): (rt: Runtime, endpoints: RpcEndpoint[]) => C {
  const clients = slot(name, () => new ExpiringMap<string, C>(CLIENT_IDLE_MS, { touch: true }));
  return (rt, endpoints) => rt.state(clients).getOrCreate(JSON.stringify(endpoints), () => create(endpoints, rt));
}

/** A 64-bit integer for JSON: a number while it is exact, else a decimal string (as the Long scalar). */
export const long = (n: bigint): number | string => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString());
