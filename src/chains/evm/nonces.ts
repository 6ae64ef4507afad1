import type { Transaction } from '../../generated/prisma/client.js';
import { randomUUID } from 'node:crypto';
import { insertTransactions, publishTransaction } from '../../core/transactions/store.js';
import type { Runtime } from '../../core/runtime.js';
import { TRANSFER_GAS, type EvmPayload } from './accept.js';
import type { EvmContext } from './context.js';
import type { EvmState } from './state.js';
import type { Hex } from 'viem';
import { isUniqueViolation } from '../../db/unique-violation.js';

/**
 * The account's nonce in the latest block (every nonce below it is mined), read together with the
 * other calls of this turn of the event loop (EvmRpc.gather).
 */
export async function latestNonce(ctx: EvmContext): Promise<bigint> {
  const [o] = await ctx.rpc.gather<Hex>([{ method: 'eth_getTransactionCount', params: [ctx.relayer.address, 'latest'] }]);
  if (!o.ok) throw o.error;
  return BigInt(o.result);
}

export async function chainNonces(ctx: EvmContext): Promise<{ latest: bigint; pending: bigint }> {
  const [latest, pending] = await Promise.all([
    ctx.rpc.request<Hex>('eth_getTransactionCount', [ctx.relayer.address, 'latest']),
    ctx.rpc.request<Hex>('eth_getTransactionCount', [ctx.relayer.address, 'pending']),
  ]);
  return { latest: BigInt(latest), pending: BigInt(pending) };
}

/**
 * Brings the relayer's nonce counter in line with the chain without skipping or reusing a nonce:
 * - nonces the chain has seen beyond the counter (sent from this account elsewhere) are skipped;
 * - a counter ahead of the chain with no transaction at or above the chain's nonce comes back;
 * - an allocated nonce no transaction holds (a gap the chain would wait on forever) gets a
 *   0-value self-transfer of its own, so the nonces after it can be mined.
 */
export async function reconcileNonces(rt: Runtime, ctx: EvmContext): Promise<{ next: bigint; filled: bigint[] }> {
  const id = ctx.relayer.id;
  const { pending } = await chainNonces(ctx);
  const row = await rt.db.prisma.relayer.findUnique({ where: { id }, select: { nextNonce: true } });
  if (!row) return { next: pending, filled: [] };
  if (row.nextNonce === null || row.nextNonce < pending) {
    const [r] = await rt.db.prisma.$queryRaw<{ next: bigint }[]>`
      UPDATE relayers SET next_nonce = GREATEST(COALESCE(next_nonce, 0), ${pending}) WHERE id = ${id} RETURNING next_nonce AS next`;
    if (row.nextNonce !== null) rt.log.info({ relayerId: id, from: row.nextNonce.toString(), to: pending.toString() }, 'nonce counter moved up to the chain');
    if (row.nextNonce !== null) rt.metrics.nonceReconciliations.inc({ relayer_id: id, change: 'moved_up' });
    return { next: BigInt(r.next), filled: [] };
  }
  if (row.nextNonce === pending) return { next: pending, filled: [] };

  // The counter is ahead of the chain: fine while the transactions holding those nonces are on their way.
  const lowered = await rt.db.prisma.$executeRaw`
    UPDATE relayers SET next_nonce = ${pending}
    WHERE id = ${id} AND next_nonce = ${row.nextNonce}
      AND NOT EXISTS (SELECT 1 FROM transactions WHERE relayer_id = ${id} AND nonce >= ${pending})`;
  if (lowered > 0) {
    rt.metrics.nonceReconciliations.inc({ relayer_id: id, change: 'moved_back' });
    rt.log.warn(
      { relayerId: id, from: row.nextNonce.toString(), to: pending.toString() },
      'nonce counter was ahead of the chain with no transaction holding those nonces: moved back',
    );
    return { next: pending, filled: [] };
  }
  const held = await rt.db.prisma.transaction.findMany({
    where: { relayerId: id, nonce: { gte: pending, lt: row.nextNonce } },
    select: { nonce: true },
  });
  const taken = new Set(held.map((h) => h.nonce!.toString()));
  const filled: bigint[] = [];
  for (let n = pending; n < row.nextNonce; n++) {
    if (taken.has(n.toString())) continue;
    if (await fillGap(rt, ctx, n)) filled.push(n);
  }
  if (filled.length > 0) rt.metrics.nonceReconciliations.inc({ relayer_id: id, change: 'gaps_filled' });
  return { next: row.nextNonce, filled };
}

/** A transaction of the relayer's own that takes nonce `n` with a 0-value self-transfer. */
async function fillGap(rt: Runtime, ctx: EvmContext, n: bigint): Promise<boolean> {
  const { relayer } = ctx;
  const reason = `nonce ${n} was allocated but no transaction held it; a 0-value self-transfer takes it so that later transactions can be mined`;
  const validUntil = new Date(Date.now() + 8 * 3600_000);
  const request: EvmPayload = {
    to: relayer.address,
    value: '0',
    data: null,
    gasLimit: TRANSFER_GAS.toString(),
    gasPrice: null,
    maxFeePerGas: null,
    maxPriorityFeePerGas: null,
    speed: 'fast',
    validUntil: validUntil.toISOString(),
  };
  const state: EvmState = { goal: 'noop', outcome: { status: 'canceled', reason }, phase: 'new', broadcasts: [], version: 0 };
  let tx: Transaction;
  try {
    [tx] = await insertTransactions(
      rt,
      [
        {
          id: randomUUID(),
          relayerId: relayer.id,
          networkType: 'evm',
          status: 'canceled',
          statusReason: reason,
          nonce: n,
          from: relayer.address,
          to: relayer.address,
          value: '0',
          data: null,
          gasLimit: TRANSFER_GAS,
          gasPrice: null,
          maxFeePerGas: null,
          maxPriorityFeePerGas: null,
          speed: 'fast',
          validUntil,
          request: request as never,
          chainState: state as never,
          idempotencyKey: null,
          requestDigest: null,
        },
      ],
      { relayers: [relayer] },
    );
  } catch (e) {
    // Someone else filled it meanwhile.
    if (isUniqueViolation(e)) return false;
    throw e;
  }
  rt.log.warn({ relayerId: relayer.id, nonce: n.toString(), transactionId: tx.id }, 'filled a nonce gap');
  publishTransaction(rt, tx);
  rt.work.to?.wake();
  return true;
}
