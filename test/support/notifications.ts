import { createHmac } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import type { Transaction, TransactionStatus } from '../../src/generated/prisma/client.js';
import { emitTransactionUpdate, writeWithEvents } from '../../src/core/notifications/events.js';
import { claimRow, LEASE_MS } from '../../src/db/lease.js';
import { publishTransaction, saveTransactions } from '../../src/core/transactions/store.js';
import type { Runtime } from '../../src/core/runtime.js';
import { families } from './families.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from './service.js';
import { startReceiver, type Received } from './receiver.js';

export { subscribe } from './subscribe.js';

export const SIGNING_KEY = 'hook-signing-key-do-not-leak';

/** The EVM test config with notification "hook" (signed with SIGNING_KEY unless `key` is null) on the relayer. */
export function hookConfig(url: string, key: string | null = SIGNING_KEY) {
  return ({ rpcUrl }: { rpcUrl: string }) =>
    evmConfig(rpcUrl, {
      relayer: { notification_id: 'hook' },
      notifications: [{ id: 'hook', type: 'webhook', url, ...(key ? { signing_key: { type: 'plain', value: key } } : {}) }],
    });
}

/**
 * A transaction row as if just accepted: written with its first webhook event in one database
 * transaction, then published (as sendTransaction does). dueAt null keeps chain workers off it; the
 * tests move it on through saveTransactions under a lease, the pipeline's own way of changing a transaction.
 */
export async function acceptTransaction(rt: Runtime, relayerId = 'evm-relayer'): Promise<Transaction> {
  const relayer = await rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: relayerId } });
  const tx = await writeWithEvents(rt, async (out) => {
    const row = await out.db.transaction.create({
      data: { relayerId, networkType: 'evm', from: DEV_ADDRESS, to: '0x000000000000000000000000000000000000dEaD', value: '1', request: {}, dueAt: null },
    });
    await emitTransactionUpdate(families, out, relayer, row);
    return row;
  });
  publishTransaction(rt, tx);
  rt.work.to?.wake();
  return tx;
}

export const LIFECYCLE: TransactionStatus[] = ['sent', 'submitted', 'mined', 'confirmed'];

export async function walk(rt: Runtime, id: string, statuses: TransactionStatus[] = LIFECYCLE) {
  for (const status of statuses) {
    const hash = `0x${'ab'.repeat(32)}`;
    // As a worker does: take the row's lease, then save the change under it.
    if (!(await claimRow(rt.db.prisma, 'transactions', id, rt.instanceId, LEASE_MS))) throw new Error(`transaction ${id} is leased elsewhere`);
    const before = await rt.db.prisma.transaction.findUniqueOrThrow({ where: { id } });
    const patch = { status, hash, ...(status === 'sent' ? { sentAt: new Date() } : {}), ...(status === 'confirmed' ? { confirmedAt: new Date() } : {}) };
    await saveTransactions(rt, rt.instanceId, [{ before, patch, release: true }]);
  }
}

/** What a receiver written for the reference system checks, plus our timestamped header. */
export function signaturesOf(r: Received, key = SIGNING_KEY) {
  const xSignature = createHmac('sha256', key).update(r.raw).digest('base64');
  const header = String(r.headers['x-relayer-signature'] ?? '');
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  return {
    xSignatureValid: r.headers['x-signature'] === xSignature,
    timestampedValid: !!m && m[2] === createHmac('sha256', key).update(`${m[1]}.${r.raw}`).digest('hex'),
    skewSeconds: m ? Math.abs(Date.now() / 1000 - Number(m[1])) : Infinity,
  };
}

/**
 * For the enclosing suite: a receiver, and the service on anvil with the relayer's notification
 * pointing at it (hookConfig). Read `env.svc` / `env.receiver` inside tests.
 */
export function hookedService() {
  const env = {} as { receiver: Awaited<ReturnType<typeof startReceiver>>; svc: TestService };
  beforeAll(async () => {
    env.receiver = await startReceiver();
    env.svc = await startTestService({ anvil: true, config: hookConfig(env.receiver.url) });
  });
  afterAll(async () => {
    await env.svc?.stop();
    await env.receiver?.close();
  });
  return env;
}

/** Statuses a receiver saw for one transaction, in arrival order. */
export const statusesFor = (received: Received[], txId: string) =>
  received.filter((r) => r.body?.event === 'transaction_update' && r.body.payload.id === txId).map((r) => r.body.payload.status as string);
