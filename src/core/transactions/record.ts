import type { FamilySpec, RecordColumn } from '../family-spec.js';
import type { FamilySpecs } from '../registry.js';
import type { Transaction } from '../../generated/prisma/client.js';

type Time = Date | string | null;
type Integer = bigint | number | string | null;

/**
 * A transaction as its record is read from: the row, or the same fields as GraphQL's Transaction
 * type gives them (its field names are the row's; DateTime as text, Long as a number or decimal
 * text, the published chain-specific fields as `networkData` rather than in `chainState`).
 */
export type RecordSource = {
  id: string;
  relayerId: string;
  networkType: string;
  status: string;
  statusReason: string | null;
  createdAt: Date | string;
  sentAt: Time;
  confirmedAt: Time;
  validUntil: Time;
  hash: string | null;
  from: string;
  to: string | null;
  value: string;
  data: string | null;
  nonce: Integer;
  gasLimit: Integer;
  gasPrice: string | null;
  maxFeePerGas: string | null;
  maxPriorityFeePerGas: string | null;
  speed: string | null;
  signature: unknown;
} & ({ chainState: Transaction['chainState'] } | { networkData: unknown });

const time = (t: Time) => (t === null ? null : typeof t === 'string' ? t : t.toISOString());

/** A JSON number, every digit kept: a bigint past 2^53 (written by lib/json.ts's lossless writer). */
function integer(n: Integer): number | bigint | null {
  if (n === null || typeof n === 'number') return n;
  const big = typeof n === 'bigint' ? n : /^-?\d+$/.test(n) ? BigInt(n) : null;
  if (big === null) return null;
  return big <= BigInt(Number.MAX_SAFE_INTEGER) && big >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(big) : big;
}

/** The fields every record has, by record name (one object literal: the record is built per webhook). */
const common = (tx: RecordSource) => ({
  id: tx.id,
  relayer_id: tx.relayerId,
  status: tx.status,
  status_reason: tx.statusReason ?? null,
  created_at: time(tx.createdAt),
  sent_at: time(tx.sentAt ?? null),
  confirmed_at: time(tx.confirmedAt ?? null),
  valid_until: time(tx.validUntil ?? null),
  hash: tx.hash ?? null,
});

export type CommonField = keyof ReturnType<typeof common>;

/** The row fields a family's record may carry (its spec's record.fields), by record name. */
const COLUMNS: Record<RecordColumn, (tx: RecordSource) => unknown> = {
  network_type: (tx) => tx.networkType,
  from: (tx) => tx.from,
  to: (tx) => tx.to,
  value: (tx) => tx.value,
  data: (tx) => tx.data,
  nonce: (tx) => integer(tx.nonce),
  gas_limit: (tx) => integer(tx.gasLimit),
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
 * Webhooks build it from the row, REST from the GraphQL fields of the same row: one rule for both.
 */
export function transactionRecord(families: FamilySpecs, tx: RecordSource): Record<string, unknown> {
  const out: Record<string, unknown> = common(tx);
  const record = families.has(tx.networkType) ? families.spec(tx.networkType).record : unknownFamily;
  for (const k of record.fields) out[k] = COLUMNS[k](tx) ?? null;
  if (!record.networkData) return out;
  const data = 'networkData' in tx ? tx.networkData : publicState(tx);
  return data && typeof data === 'object' ? Object.assign(out, data) : out;
}

/** Family-specific fields the pipeline chose to publish (chain_state.public): GraphQL's `networkData`. */
export function publicState(tx: Pick<Transaction, 'chainState'>): Record<string, unknown> | null {
  const state = tx.chainState as { public?: Record<string, unknown> } | null;
  return state?.public ?? null;
}
