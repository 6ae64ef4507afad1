import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import type { DocumentNode } from 'graphql';
import type { z } from 'zod';
import type { FamilySpec } from '../../core/family-spec.js';
import type { Charge } from '../graphql/rate-limit.js';

// What a REST route is: an entry of the route table (routes.ts and the files it gathers), and the
// same compiled for the adapter (handler.ts) and the OpenAPI document (openapi.ts).

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface Output {
  data: unknown;
  pagination?: { current_page: number; per_page: number; total_items: number };
}

// biome-ignore lint/suspicious/noExplicitAny: a route table holds routes of every operation's data type.
export interface Route<TData = any> {
  /** OpenAPI operationId. */
  id: string;
  method: Method;
  /** With `{name}` path parameters; a trailing slash is accepted on every route. */
  path: string;
  tag: 'Relayers' | 'Transactions' | 'Notifications' | 'Signers' | 'Networks' | 'API keys' | 'Plugins' | 'Health';
  summary: string;
  description?: string;
  /** The section of the interface spec the route implements; absent for routes beyond it. */
  spec?: string;
  // biome-ignore lint/suspicious/noExplicitAny: each operation has its own variables type.
  document: TypedDocumentNode<TData, any> | DocumentNode;
  /** The mutation or query field this route needs, so it is offered only when the schema has it. */
  field: { type: 'Query' | 'Mutation'; name: string };
  /**
   * Each parameter's GraphQL variable and, when it is more than any text, its schema (a value is
   * read as its type, as a query value is).
   */
  pathParams: Record<string, { gql: string; description: string; schema?: z.ZodType }>;
  /** Query parameters by name (each optional), checked by and documented from their schemas. */
  query?: z.ZodObject;
  /** The route also takes any path below it (`…/call/any/thing`): `/any/thing` goes in this variable ("" for none). */
  tail?: string;
  /** Variables from the request as a whole (a plugin call forwards its method, headers and query), given the body's variable and the tail. */
  whole?(request: Request, url: URL, body: unknown, tail: string): Record<string, unknown>;
  /** Request headers (lower-case names) mapped to variables. */
  headers?: Record<string, { gql: string; name: string; schema: z.ZodType }>;
  body?: {
    variable: string;
    /** Checked against this schema and documented from it; top-level fields go on under their camelCase names. */
    schema: z.ZodObject;
    description: string;
    example: Record<string, unknown>;
    /** The documented body: the families' send shapes (A, B, C), one of which the relayer's type takes. */
    shapes?: readonly FamilySpec[];
    /** The documented body: one of these objects (the service checks which by its own rules: a signer's config by its type). */
    variants?: readonly z.ZodObject[];
    /** The whole body (a JSON object or array) is the variable as it is, checked by the service; its JSON Schema. */
    json?: Record<string, unknown>;
    /** The body's text is the variable as it is: the service reads it (a JSON-RPC route answers its own parse errors). */
    text?: boolean;
    /** The body's variable made from the body (json bodies). */
    map?(body: unknown): unknown;
  };
  status: number;
  /** The answer is `data` itself, not the envelope (the JSON-RPC passthrough). */
  raw?: boolean;
  /** The data's component schema (records.ts, entities.ts, direct.ts), or 'string'. */
  response: { schema: string; list: boolean };
  /** Served without a token (readiness). */
  public?: boolean;
  /** A body other than the envelope (readiness answers its own document, 503 when not ready). */
  respond?(data: TData): Response;
  /** The error statuses the route can answer besides 400, 401, 500 and (when its field is rate limited) 429. */
  errors: number[];
  result(data: TData): Output;
}

/** A route of one operation's data type, as the table holds it. */
export const route = <TData>(r: Route<TData>): Route => r as Route;

export interface CompiledRoute {
  route: Route;
  segments: (string | { param: string })[];
  document: DocumentNode;
  operationName: string;
  /** How many rate-limited root fields it runs (its field carries @rateLimit: one). */
  rateLimited: number;
  /** What they take of the caller's budget, counted once. */
  charge: Charge;
}
