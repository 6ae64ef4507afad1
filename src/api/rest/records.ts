import type { RestNotificationFragment, RestPaginationFragment, RestRelayerFragment, RestTransactionFragment } from '../../generated/graphql.js';
import { z } from 'zod';
import type { FamilySpec, RecordColumn } from '../../core/family-spec.js';
import type { FamilySpecs } from '../../core/registry.js';
import { MAX_PER_PAGE } from '../../core/page.js';
import { integerFields } from '../../lib/validate.js';

// The response records of the REST surface (spec 2.2-2.4): which GraphQL field each snake_case
// field comes from and its JSON Schema. The adapter maps with these and the OpenAPI document
// describes them, so the two cannot disagree.

export type JsonSchema = Record<string, unknown>;

interface Out<T> {
  from: keyof T & string;
  schema: JsonSchema;
}
type Shape<T> = Record<string, Out<T>>;

const nullable = (schema: JsonSchema): JsonSchema => ({ ...schema, type: [schema.type as string, 'null'] });
const str: JsonSchema = { type: 'string' };
const time: JsonSchema = { type: 'string', format: 'date-time' };
const amount: JsonSchema = { type: 'string', pattern: '^[0-9]+$', description: 'A u128 amount as a decimal string.' };
const int: JsonSchema = { type: 'integer' };
const bool: JsonSchema = { type: 'boolean' };
const obj: JsonSchema = { type: 'object' };
const enumRef = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const nullableRef = (name: string): JsonSchema => ({ oneOf: [enumRef(name), { type: 'null' }] });

type Tx = RestTransactionFragment;

const txCommon: Shape<Tx> = {
  id: { from: 'id', schema: str },
  relayer_id: { from: 'relayerId', schema: str },
  status: { from: 'status', schema: enumRef('TransactionStatus') },
  status_reason: { from: 'statusReason', schema: nullable(str) },
  created_at: { from: 'createdAt', schema: time },
  sent_at: { from: 'sentAt', schema: nullable(time) },
  confirmed_at: { from: 'confirmedAt', schema: nullable(time) },
  valid_until: { from: 'validUntil', schema: nullable(time) },
  hash: { from: 'hash', schema: nullable(str) },
};

/** The row fields a family's record may carry (its spec's record.fields), by record name. */
const txColumns: Record<RecordColumn, Out<Tx>> = {
  network_type: { from: 'networkType', schema: str },
  from: { from: 'from', schema: str },
  to: { from: 'to', schema: nullable(str) },
  value: { from: 'value', schema: amount },
  data: { from: 'data', schema: nullable(str) },
  nonce: { from: 'nonce', schema: nullable(int) },
  gas_limit: { from: 'gasLimit', schema: nullable(int) },
  gas_price: { from: 'gasPrice', schema: nullable(amount) },
  max_fee_per_gas: { from: 'maxFeePerGas', schema: nullable(amount) },
  max_priority_fee_per_gas: { from: 'maxPriorityFeePerGas', schema: nullable(amount) },
  speed: { from: 'speed', schema: nullableRef('Speed') },
  signature: { from: 'signature', schema: nullable(obj) },
};

/** Columns GraphQL gives as Long (a decimal string past 2^53): JSON numbers on REST, every digit kept. */
const INTEGER_COLUMNS = new Set<string>(['nonce', 'gas_limit']);

/** A row of a type no family has (not expected): its network type and the published fields. */
const unknownFamily: FamilySpec['record'] = { fields: ['network_type', 'from'], networkData: true };

function pick<T>(shape: Shape<T>, src: T, out: Record<string, unknown>) {
  for (const key in shape) out[key] = src[shape[key].from] ?? null;
  return out;
}

type Rl = RestRelayerFragment;

const relayerShape: Shape<Rl> = {
  id: { from: 'id', schema: str },
  name: { from: 'name', schema: str },
  network: { from: 'network', schema: str },
  network_type: { from: 'networkType', schema: enumRef('NetworkType') },
  address: { from: 'address', schema: str },
  paused: { from: 'paused', schema: bool },
  system_disabled: { from: 'systemDisabled', schema: bool },
  disabled_reason: {
    from: 'disabledReason',
    schema: { type: ['object', 'null'], properties: { type: { type: 'string', examples: ['NonceSyncFailed'] }, details: str } },
  },
  signer_id: { from: 'signerId', schema: str },
  notification_id: { from: 'notificationId', schema: nullable(str) },
  custom_rpc_urls: { from: 'customRpcUrls', schema: { type: ['array', 'null'], items: enumRef('RpcConfig') } },
  policies: { from: 'policies', schema: { $ref: '#/components/schemas/RelayerPolicies' } },
};

function jsonInteger(v: unknown): unknown {
  if (typeof v !== 'string' || !/^\d+$/.test(v)) return v;
  const n = BigInt(v);
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

const notificationShape: Shape<RestNotificationFragment> = {
  id: { from: 'id', schema: str },
  type: { from: 'type', schema: enumRef('NotificationType') },
  url: { from: 'url', schema: str },
  has_signing_key: { from: 'hasSigningKey', schema: bool },
};

export const notificationRecord = (n: RestNotificationFragment) => pick(notificationShape, n, {});

export const paginationRecord = (p: RestPaginationFragment) => ({ current_page: p.currentPage, per_page: p.perPage, total_items: p.totalItems });

const properties = <T>(...shapes: Shape<T>[]) => Object.fromEntries(shapes.flatMap((s) => Object.entries(s).map(([k, o]) => [k, o.schema])));

/** "A", "A or B", "A, B or C". */
export const orList = (items: string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`);
const andList = (items: string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`);
const article = (word: string) => (/^[AEIOU]/i.test(word) ? 'an' : 'a');

/** How policies are described: "an EVM policy, a Solana policy or a Stellar policy". */
export const policyKindsOf = (families: readonly FamilySpec[]) => orList(families.map((f) => `${article(f.label)} ${f.label} policy`));

/** The records whose fields depend on the chain families offered, and their JSON Schemas. */
export function restRecords(families: FamilySpecs) {
  /**
   * The transaction record (spec 2.2), equal to what webhooks carry (core/transactions/record.ts):
   * the common fields, then those the transaction's family lists (chains/<family>/spec.ts: EVM
   * transactions the EVM fields, the others their network type and the chain-specific fields the
   * pipeline publishes).
   */
  function transactionRecord(tx: Tx): Record<string, unknown> {
    const out = pick(txCommon, tx, {});
    const record = families.has(tx.networkType) ? families.spec(tx.networkType).record : unknownFamily;
    for (const k of record.fields) out[k] = INTEGER_COLUMNS.has(k) ? jsonInteger(tx[txColumns[k].from] ?? null) : (tx[txColumns[k].from] ?? null);
    if (record.networkData && tx.networkData && typeof tx.networkData === 'object') Object.assign(out, tx.networkData);
    return out;
  }

  /**
   * Policy fields the spec types as integers (2.3), by network type (each family's spec). Amounts
   * are stored as decimal strings so that no digit is lost; on the REST surface they are JSON numbers again.
   */
  const integerPolicyFields: Record<string, readonly string[]> = Object.fromEntries(families.list.map((f) => [f.type, integerFields(f.policy.schema)]));

  function relayerRecord(r: Rl): Record<string, unknown> {
    const out = pick(relayerShape, r, {});
    const ints = integerPolicyFields[r.networkType];
    if (ints && r.policies && typeof r.policies === 'object') {
      const p = { ...(r.policies as Record<string, unknown>) };
      for (const k of ints) if (k in p) p[k] = jsonInteger(p[k]);
      out.policies = p;
    }
    return out;
  }

  const withColumns = families.list.filter((f) => !f.record.networkData);
  const withNetworkData = families.list.filter((f) => f.record.networkData);
  /** Every family's record fields, in family order. */
  const txFamilyFields: Shape<Tx> = Object.fromEntries(families.list.flatMap((f) => f.record.fields.map((k) => [k, txColumns[k]])));

  const policyKinds = policyKindsOf(families.list);

  /**
   * A relayer's policies in a request body: the service checks them with the policy schema of the
   * relayer's family; the document shows them all (RelayerPolicies).
   */
  const policiesField = z
    .record(z.string(), z.unknown())
    .meta({ description: `${policyKinds.charAt(0).toUpperCase()}${policyKinds.slice(1)} (config file format).`, $ref: '#/$defs/RelayerPolicies' } as never);

  /** JSON Schemas of the records, for the OpenAPI document's components. */
  const recordSchemas: Record<string, JsonSchema> = {
    Transaction: {
      type: 'object',
      description: `A transaction (spec 2.2). ${withColumns.map((f) => `${f.label} transactions carry the ${f.label} fields`).join('; ')}; ${andList(withNetworkData.map((f) => f.label))} transactions carry \`network_type\` and their chain-specific fields instead.`,
      properties: properties(txCommon, txFamilyFields),
      required: Object.keys(txCommon).concat('from'),
      additionalProperties: true,
    },
    Relayer: {
      type: 'object',
      description: 'A relayer (spec 2.3).',
      properties: properties(relayerShape),
      required: Object.keys(relayerShape),
    },
    Notification: {
      type: 'object',
      description: 'A webhook notification configuration (spec 2.4); the signing key itself is never returned.',
      properties: properties(notificationShape),
      required: Object.keys(notificationShape),
    },
    RpcConfig: { type: 'object', properties: { url: str, weight: int }, required: ['url'] },
    Pagination: {
      type: 'object',
      properties: {
        current_page: { type: 'integer', minimum: 1 },
        per_page: { type: 'integer', minimum: 1, maximum: MAX_PER_PAGE },
        total_items: { type: 'integer', minimum: 0 },
      },
      required: ['current_page', 'per_page', 'total_items'],
    },
  };
  return { transactionRecord, relayerRecord, policyKinds, policiesField, recordSchemas };
}

export type RestRecords = ReturnType<typeof restRecords>;
