import { randomUUID } from 'node:crypto';
import type { Transaction } from '../../generated/prisma/client.js';
import { claimRow, LEASE_MS, release } from '../../db/lease.js';
import { conflict, invalid } from '../domain-error.js';
import type { Runtime } from '../runtime.js';
import type { NetworkType } from '../family-list.js';
import { getRelayer } from '../relayers/service.js';
import { FINAL_STATUSES, getTransaction } from './service.js';
import { parseShape } from './shapes.js';

const WAIT_FOR_LEASE_MS = 10_000;

/**
 * Runs `fn` on the transaction while holding its lease, so no worker works on it meanwhile (a
 * worker holds a row only for one step, so the wait is short).
 */
async function withLease(rt: Runtime, id: string, fn: (tx: Transaction, owner: string) => Promise<Transaction>): Promise<Transaction> {
  const owner = `${rt.instanceId}:api:${randomUUID()}`;
  const deadline = Date.now() + WAIT_FOR_LEASE_MS;
  for (let pause = 10; !(await claimRow(rt.db.prisma, 'transactions', id, owner, LEASE_MS)); pause = Math.min(200, pause * 2)) {
    if (Date.now() > deadline) throw conflict('Conflict', 'the transaction is being worked on; try again');
    await new Promise((r) => setTimeout(r, pause));
  }
  const tx = await rt.db.prisma.transaction.findUniqueOrThrow({ where: { id } });
  try {
    return await fn(tx, owner);
  } catch (e) {
    await release(rt.db.prisma, 'transactions', owner, [{ id, leaseUntil: tx.leaseUntil, dueAt: tx.dueAt }]);
    throw e;
  }
}

function refuseFinal(tx: Transaction, action: 'cancel' | 'replace') {
  if (FINAL_STATUSES.includes(tx.status) || tx.status === 'mined') throw invalid(`cannot ${action} a transaction in status ${tx.status}`);
}

/** Cancels a transaction that is not mined yet (see the chain family for how). */
export async function cancelTransaction(rt: Runtime, relayerId: string, id: string): Promise<Transaction> {
  const tx = await getTransaction(rt, id, relayerId);
  refuseFinal(tx, 'cancel');
  const family = rt.families.pipeline(tx.networkType as NetworkType);
  if (!family?.cancel) throw invalid(`${tx.networkType} transactions cannot be canceled`);
  return withLease(rt, id, (leased, owner) => {
    refuseFinal(leased, 'cancel');
    return family.cancel!(rt, leased, owner);
  });
}

/** Replaces the payload of a transaction that is not mined yet, at the same nonce. */
export async function replaceTransaction(rt: Runtime, relayerId: string, id: string, input: Record<string, unknown>): Promise<Transaction> {
  const tx = await getTransaction(rt, id, relayerId);
  const relayer = await getRelayer(rt, relayerId);
  refuseFinal(tx, 'replace');
  const type = tx.networkType as NetworkType;
  const family = rt.families.pipeline(type);
  if (!family?.replace) throw invalid(`${type} transactions cannot be replaced`);
  const request = parseShape(rt.families, type, input);
  const accepted = await family.accept(rt, relayer, request as never);
  return withLease(rt, id, (leased, owner) => {
    refuseFinal(leased, 'replace');
    return family.replace!(rt, leased, accepted, owner);
  });
}

export interface CancelPendingResult {
  queuedForCancellationTransactionIds: string[];
  failedToQueueTransactionIds: string[];
  totalProcessed: number;
}

/**
 * Cancels every transaction of the relayer that is not final and not mined, each as
 * cancelTransaction does; one that cannot be canceled (mined meanwhile, busy) is listed as failed.
 */
export async function cancelPendingTransactions(rt: Runtime, relayerId: string): Promise<CancelPendingResult> {
  await getRelayer(rt, relayerId);
  const open = await rt.db.prisma.transaction.findMany({
    where: { relayerId, status: { notIn: [...FINAL_STATUSES, 'mined'] } },
    orderBy: [{ nonce: 'asc' }, { createdAt: 'asc' }],
    select: { id: true },
  });
  const queued: string[] = [];
  const failed: string[] = [];
  for (const { id } of open) {
    try {
      await cancelTransaction(rt, relayerId, id);
      queued.push(id);
    } catch (e) {
      rt.log.warn({ err: e, relayerId, transactionId: id }, 'cancel of a pending transaction refused');
      failed.push(id);
    }
  }
  return { queuedForCancellationTransactionIds: queued, failedToQueueTransactionIds: failed, totalProcessed: open.length };
}
