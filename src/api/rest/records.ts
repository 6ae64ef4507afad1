import type { RestNotificationFragment, RestPaginationFragment, RestRelayerFragment, RestTransactionFragment } from '../../generated/graphql.js';
import { z } from 'zod';
import type { FamilySpec, RecordColumn } from '../../core/family-spec.js';
import { type CommonField, transactionRecord as coreRecord } from '../../core/transactions/record.js';
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

// The transaction record's rule is core's (transactions/record.ts, webhooks read it too); here
// only its JSON Schema, by record name.
const txCommon: Record<CommonField, JsonSchema> = {
  id: str,
  relayer_id: str,
  status: enumRef('TransactionStatus'),
  status_reason: nullable(str),
  created_at: time,
  sent_at: nullable(time),
  confirmed_at: nullable(time),
  valid_until: nullable(time),
  hash: nullable(str),
};

/** The row fields a family's record may carry (its spec's record.fields), by record name. */
const txColumns: Record<RecordColumn, JsonSchema> = {
  network_type: str,
  from: str,
  to: nullable(str),
  value: amount,
  data: nullable(str),
  nonce: nullable(int),
  gas_limit: nullable(int),
  gas_price: nullable(amount),
  max_fee_per_gas: nullable(amount),
  max_priority_fee_per_gas: nullable(amount),
  speed: nullableRef('Speed'),
  signature: nullable(obj),
};

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
  /** The transaction record (spec 2.2) of the GraphQL fields the REST operations select (RestTransaction). */
  const transactionRecord = (tx: RestTransactionFragment) => coreRecord(families, tx);

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
  const txFamilyFields: Record<string, JsonSchema> = Object.fromEntries(families.list.flatMap((f) => f.record.fields.map((k) => [k, txColumns[k]])));

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
      properties: { ...txCommon, ...txFamilyFields },
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
