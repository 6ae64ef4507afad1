import type { z } from 'zod';
import type { SignerKind } from '../signers/index.js';
import type { DirectOps } from './relayers/sign-and-forward.js';

// The contract of a chain family: what the rest of the service needs to know about it to offer it
// (network type, config, policies, send request, record, signer), without its pipeline. Each family
// folder exports one (src/chains/<family>/spec.ts); src/chains/list.ts lists them, and the
// network-type enum, the config checks, the GraphQL send input, the REST send shapes and the
// OpenAPI document are derived from that list.

/** The type of a request field, for GraphQL (input types), REST (JSON checks) and OpenAPI alike. */
export type FieldType =
  /** Unsigned 128-bit integer: GraphQL BigInt, a JSON number with every digit. */
  | { kind: 'u128' }
  /** Signed 64-bit integer: GraphQL Long. */
  | { kind: 'int64' }
  | { kind: 'string'; format?: 'date-time' }
  | { kind: 'boolean' }
  /** Any JSON value. */
  | { kind: 'any' }
  /** A string from a fixed set: a GraphQL enum named `name`. */
  | { kind: 'enum'; name: string; values: readonly string[] }
  /** An object: with `fields`, a GraphQL input type named `name`; without, any JSON object (GraphQL JSON). */
  | { kind: 'object'; name?: string; fields?: Record<string, RequestField> }
  | { kind: 'list'; items: FieldType };

export interface RequestField {
  type: FieldType;
  /** Required in its object (for a send request: in the family's shape). */
  required?: boolean;
  /** null is accepted (as absent) on REST. */
  nullable?: boolean;
  /** REST and OpenAPI description. */
  description?: string;
  /** GraphQL description, when the field has one there. */
  gqlDescription?: string;
  /** The GraphQL name; default the camelCase of the REST (snake_case) name. */
  gql?: string;
}

export interface FamilySpec<T extends string = string, Req extends z.ZodType = z.ZodType> {
  /** The network type: relayers' network_type, config networks' type, a value of the NetworkType enum. */
  type: T;
  /** Its name in prose ("EVM"). */
  label: string;
  /** The kind of signer its relayers sign with. */
  signerKind: SignerKind;
  /** Config file network entries of this type: fields beyond the common ones, and which are required (after `from` inheritance). */
  network: {
    fields: z.ZodRawShape;
    required?: readonly string[];
    /** A cheap JSON-RPC method without parameters its nodes answer: the readiness check's probe. */
    probe: string;
  };
  policy: {
    /** Validates a relayer's policies (config file format, snake_case). */
    schema: z.ZodType<Record<string, unknown>>;
    /** Integer fields stored as decimal strings; REST shows them as JSON numbers. */
    integers?: readonly string[];
    /** The policy object's JSON Schema for the OpenAPI document, when it is spelled out there. */
    document?: { name: string; schema: Record<string, unknown> };
  };
  /** The send request (one of the spec's shapes A, B, C, ...). */
  send: {
    /** The shape's letter in the interface spec (4.1). */
    letter: string;
    /** OpenAPI component name and description. */
    name: string;
    description: string;
    /** What its relayers take, for the GraphQL input's description ("Solana relayers `transaction`"). */
    summary: string;
    /** Its main fields, for the REST route's description ("(`transaction`)"). */
    restHint?: string;
    /** Its fields by REST name; a field several families share is the same object (sharedSendFields). */
    fields: Record<string, RequestField>;
    /** Validates a request given in GraphQL field names (absent fields left out). */
    schema: Req;
  };
  /**
   * The transaction record (REST, webhooks): besides the common fields, these of the row (by
   * record name) and, with `networkData`, the chain-specific fields the pipeline publishes.
   */
  record: { fields: readonly RecordColumn[]; networkData?: boolean };
  /** The pipeline (ChainFamily), loaded once at start-up. */
  load(): Promise<object>;
  /** Signing without sending and the JSON-RPC passthrough (core/relayers/sign-and-forward.ts), loaded on first use. */
  direct?(): Promise<DirectOps>;
}

/** Transaction row fields a family's record may carry, by record (snake_case) name. */
export type RecordColumn =
  | 'network_type'
  | 'from'
  | 'to'
  | 'value'
  | 'data'
  | 'nonce'
  | 'gas_limit'
  | 'gas_price'
  | 'max_fee_per_gas'
  | 'max_priority_fee_per_gas'
  | 'speed'
  | 'signature';

/** Keeps the literal types of a spec (its network type and request schema) for the derived types. */
export const defineFamily = <const T extends string, Req extends z.ZodType>(spec: FamilySpec<T, Req>): FamilySpec<T, Req> => spec;

/** How long a transaction may wait to be mined when the request gives no valid_until: 8 hours. */
export const DEFAULT_VALIDITY_MS = 8 * 60 * 60 * 1000;

/** Send fields more than one family takes: one definition, so the merged surfaces agree (see sendFieldsOf). */
export const sharedSendFields = {
  valid_until: {
    type: { kind: 'string', format: 'date-time' },
    nullable: true,
    description: 'RFC 3339 expiry (default 8 hours).',
    gqlDescription: 'RFC 3339; default 8 hours from now.',
  },
} satisfies Record<string, RequestField>;

const shared = new Set<RequestField>(Object.values(sharedSendFields));

/**
 * The fields of every family's send request in one object (GraphQL and REST take one input for
 * all shapes; the service checks which fields belong to the relayer's type), in family order.
 * Shared fields are described with the shapes that take them ("Shapes A and C: ...").
 */
export function sendFieldsOf(specs: readonly FamilySpec[]): Record<string, RequestField> {
  const out: Record<string, RequestField> = {};
  const letters = new Map<string, string[]>();
  for (const spec of specs) {
    for (const [name, field] of Object.entries(spec.send.fields)) {
      if (out[name] && out[name] !== field) throw new Error(`send field ${name} is defined by two families; share one definition (sharedSendFields)`);
      out[name] = field;
      letters.set(name, [...(letters.get(name) ?? []), spec.send.letter]);
    }
  }
  for (const [name, field] of Object.entries(out)) {
    if (!shared.has(field)) continue;
    const l = letters.get(name)!;
    const which = l.length === 1 ? `Shape ${l[0]}` : `Shapes ${l.slice(0, -1).join(', ')} and ${l[l.length - 1]}`;
    out[name] = { ...field, description: `${which}: ${field.description}` };
  }
  return out;
}
