import { z } from 'zod';
import type { SignerKind } from '../signers/index.js';
import type { DirectOps } from './relayers/direct.js';

// The contract of a chain family: what the rest of the service needs to know about it to offer it
// (network type, config, policies, send request, record, signer), without its pipeline. Each family
// folder exports one (src/chains/<family>/spec.ts); src/chains/list.ts lists them. Its field sets
// (network fields, policy, send fields) are zod schemas, each field described once: the config
// checks, the REST checks, the GraphQL send input and the OpenAPI document are derived from them.

/**
 * What GraphQL shows of a request field beyond its zod schema (which gives its type): its
 * description there, and the input type name of an object or union of objects.
 */
export const graphqlInfo = z.registry<{ description?: string; name?: string }>();

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
    /**
     * A relayer's policies (config file format, snake_case): what config, GraphQL and REST check, and
     * what the OpenAPI document shows. Its integer fields (u128) are stored as decimal strings.
     */
    schema: z.ZodObject;
    /** Its OpenAPI component name. */
    name: string;
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
    /**
     * Its fields by REST (snake_case) name, each with its type, constraints and description: the
     * source of the REST check, the OpenAPI shape, and the GraphQL input (graphqlInfo adds to it).
     */
    fields: z.ZodObject;
    /** Validates a request given in GraphQL field names (absent fields left out): `fields` under camelCase names, and the shape's rules. */
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

/** The expiry field shapes A and C take, as GraphQL describes it. */
export const validUntilInfo = { description: 'RFC 3339; default 8 hours from now.' };

type Camel<S extends string> = S extends `${infer H}_${infer T}` ? `${H}${Capitalize<Camel<T>>}` : S;

/** A field's GraphQL name: the camelCase of its REST (snake_case) name. */
export const camelName = <S extends string>(s: S) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) as Camel<S>;

/** A REST object shape under its GraphQL names. */
export function camelShape<T extends z.ZodRawShape>(shape: T): { [K in keyof T as Camel<K & string>]: T[K] } {
  return Object.fromEntries(Object.entries(shape).map(([k, v]) => [camelName(k), v])) as never;
}
