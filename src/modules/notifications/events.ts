import { randomUUID } from 'node:crypto';
import type { Prisma, Relayer, Transaction } from '../../generated/prisma/client.js';
import { transactionRecord } from '../transactions/record.js';

type Tx = Prisma.TransactionClient;

/**
 * Queues a webhook delivery for the relayer's notification, inside the caller's database
 * transaction: the delivery exists if and only if the change it reports was committed.
 */
async function enqueue(tx: Tx, notificationId: string | null, relayerId: string, transactionId: string | null, event: string, payload: object) {
  if (!notificationId) return;
  const id = randomUUID();
  const body = JSON.stringify({ id, event, payload, timestamp: new Date().toISOString() });
  await tx.delivery.create({ data: { id, notificationId, relayerId, transactionId, event, body } });
}

export async function emitTransactionUpdate(tx: Tx, relayer: Pick<Relayer, 'id' | 'notificationId'>, transaction: Transaction) {
  await enqueue(tx, relayer.notificationId, relayer.id, transaction.id, 'transaction_update', {
    payload_type: 'transaction',
    ...transactionRecord(transaction),
  });
}

export async function emitRelayerState(tx: Tx, relayer: Relayer) {
  await enqueue(tx, relayer.notificationId, relayer.id, null, 'relayer_state_update', {
    payload_type: 'relayer',
    id: relayer.id,
    name: relayer.name,
    network: relayer.network,
    network_type: relayer.networkType,
    address: relayer.address,
    paused: relayer.paused,
    system_disabled: relayer.systemDisabled,
    disabled_reason: relayer.disabledReason ?? null,
  });
}
