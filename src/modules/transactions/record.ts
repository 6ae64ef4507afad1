import type { Transaction } from '../../generated/prisma/client.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const num = (n: bigint | null) => (n === null ? null : Number(n));

/**
 * The transaction as REST clients and webhook receivers see it (spec 2.2), in the reference
 * system's field names. EVM records carry the EVM fields; the other families their network data.
 */
export function transactionRecord(tx: Transaction): Record<string, unknown> {
  const common = {
    id: tx.id,
    relayer_id: tx.relayerId,
    status: tx.status,
    status_reason: tx.statusReason,
    created_at: tx.createdAt.toISOString(),
    sent_at: iso(tx.sentAt),
    confirmed_at: iso(tx.confirmedAt),
    valid_until: iso(tx.validUntil),
    hash: tx.hash,
  };
  if (tx.networkType !== 'evm') {
    return { ...common, network_type: tx.networkType, from: tx.from, ...(publicState(tx) ?? {}) };
  }
  return {
    ...common,
    from: tx.from,
    to: tx.to,
    value: tx.value,
    data: tx.data,
    nonce: num(tx.nonce),
    gas_limit: num(tx.gasLimit),
    gas_price: tx.gasPrice,
    max_fee_per_gas: tx.maxFeePerGas,
    max_priority_fee_per_gas: tx.maxPriorityFeePerGas,
    speed: tx.speed,
    signature: tx.signature ?? null,
  };
}

/** Family-specific fields the pipeline chose to publish (chain_state.public). */
export function publicState(tx: Pick<Transaction, 'chainState'>): Record<string, unknown> | null {
  const state = tx.chainState as { public?: Record<string, unknown> } | null;
  return state?.public ?? null;
}
