import type { FamilySpec, RecordColumn } from '../family-spec.js';
import type { FamilySpecs } from '../registry.js';
import type { Transaction } from '../../generated/prisma/client.js';

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const num = (n: bigint | null) => (n === null ? null : Number(n));

/** The row fields a family's record may carry (its spec's record.fields), by record name. */
const COLUMNS: Record<RecordColumn, (tx: Transaction) => unknown> = {
  network_type: (tx) => tx.networkType,
  from: (tx) => tx.from,
  to: (tx) => tx.to,
  value: (tx) => tx.value,
  data: (tx) => tx.data,
  nonce: (tx) => num(tx.nonce),
  gas_limit: (tx) => num(tx.gasLimit),
  gas_price: (tx) => tx.gasPrice,
  max_fee_per_gas: (tx) => tx.maxFeePerGas,
  max_priority_fee_per_gas: (tx) => tx.maxPriorityFeePerGas,
  speed: (tx) => tx.speed,
  signature: (tx) => tx.signature ?? null,
};

/** A row of a type no family has (not expected): its network type and the published fields. */
const unknownFamily: FamilySpec['record'] = { fields: ['network_type', 'from'], networkData: true };

/**
 * The transaction as REST clients and webhook receivers see it (spec 2.2), in the reference
 * system's field names: the common fields, then those the transaction's family lists
 * (chains/<family>/spec.ts): EVM records the EVM fields, the other families their network data.
 */
export function transactionRecord(families: FamilySpecs, tx: Transaction): Record<string, unknown> {
  const out: Record<string, unknown> = {
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
  const record = families.has(tx.networkType) ? families.spec(tx.networkType).record : unknownFamily;
  for (const k of record.fields) out[k] = COLUMNS[k](tx);
  return record.networkData ? { ...out, ...(publicState(tx) ?? {}) } : out;
}

/** Family-specific fields the pipeline chose to publish (chain_state.public). */
export function publicState(tx: Pick<Transaction, 'chainState'>): Record<string, unknown> | null {
  const state = tx.chainState as { public?: Record<string, unknown> } | null;
  return state?.public ?? null;
}
