import { z } from 'zod';
import type { FamilySpec } from '../../core/family-spec.js';
import type { FamilySpecs } from '../../core/registry.js';
import type { CompiledRoute } from './route.js';
import { directSchemas, laterRoutes } from './sign-and-forward.js';
import { entitySchemas } from './entities.js';
import { apiKeySchemas } from './api-keys.js';
import { pluginSchemas } from './plugins.js';
import { policyKindsOf, restRecords, type JsonSchema } from './records.js';
import { httpOf } from './status.js';
import { pathText } from './fields.js';
import { TEXT_PATTERN } from '../../lib/validate.js';

// The OpenAPI 3.1 document of the REST surface, generated from the route table: every request
// value's schema is made from the zod schema the service checks it with (z.toJSONSchema), so the
// document states the constraints the service enforces.

/** Enum values by GraphQL enum type name (read from the schema, the one place they are listed). */
export type EnumValues = (enumType: string) => readonly string[];

const ENUMS = ['TransactionStatus', 'Speed', 'NetworkType', 'NotificationType'];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

/**
 * A zod schema's JSON Schema as the document writes it: named schemas (.meta({ id })) as
 * components (added to `defs` unless present), a value or null as a type list, integers as
 * integers within their bounds (lib/validate.ts asInteger), whatever the schema accepts before
 * its transforms.
 */
export function jsonSchemaOf(schema: z.ZodType, defs: Record<string, JsonSchema>): JsonSchema {
  const {
    $schema: _,
    $defs,
    ...out
  } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    reused: 'inline',
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema._zod.def.type === 'bigint') Object.assign(jsonSchema, { type: 'integer' });
    },
  }) as JsonSchema;
  for (const [k, v] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) if (!defs[k]) defs[k] = tidy(v);
  return tidy(out);
}

const exact = (n: bigint) => (n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n);

function tidy(node: unknown): JsonSchema {
  if (Array.isArray(node)) return node.map(tidy) as never;
  if (!node || typeof node !== 'object') return node as JsonSchema;
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, k === 'default' || k === 'const' || k === 'enum' ? v : tidy(v)])) as JsonSchema;
  if (typeof out.$ref === 'string') {
    return { $ref: out.$ref.replace('#/$defs/', '#/components/schemas/'), ...(out.description ? { description: out.description } : {}) };
  }
  // An integer marked by asInteger: its JSON Schema is the mark, not the union it parses; its
  // bounds are exact (a bigint is written with every digit).
  if (out.format === 'u128' || out.format === 'int64') {
    delete out.anyOf;
    for (const k of ['minimum', 'maximum'] as const) if (typeof out[k] === 'string') out[k] = exact(BigInt(out[k] as string));
  }
  const alternatives = out.anyOf as JsonSchema[] | undefined;
  if (alternatives?.length === 2 && alternatives[1].type === 'null') {
    const { anyOf: _, ...rest } = out;
    const value = alternatives[0];
    if (typeof value.type === 'string') return { ...value, ...rest, type: [value.type, 'null'] };
    if (Array.isArray(value.type)) return { ...value, ...rest, type: [...new Set([...(value.type as string[]), 'null'])] };
    const { description, ...inner } = value;
    return { ...(description ? { description } : {}), ...rest, oneOf: [inner, { type: 'null' }] };
  }
  return out;
}

/** A parameter's schema, and its description lifted to the parameter. */
function parameter(name: string, where: string, required: boolean, schema: z.ZodType, defs: Record<string, JsonSchema>, description?: string) {
  const { description: own, ...json } = jsonSchemaOf(schema, defs);
  return { name, in: where, required, description: description ?? own, schema: json };
}

const envelope = (data: JsonSchema, list: boolean): JsonSchema => ({
  type: 'object',
  required: ['success', 'data', 'error', 'metadata', ...(list ? ['pagination'] : [])],
  properties: {
    success: { const: true },
    data: list ? { type: 'array', items: data } : data,
    error: { type: 'null' },
    metadata: ref('Metadata'),
    ...(list ? { pagination: ref('Pagination') } : {}),
  },
});

// The documented error responses by status (the statuses and spec messages come from status.ts).
const ERRORS: Record<number, { name: string; message: string; description: string }> = {
  400: {
    name: 'BadRequest',
    message: httpOf.BAD_REQUEST.message!,
    description: 'Invalid request: `error` names the field and the reason. Nothing was changed.',
  },
  401: { name: 'Unauthorized', message: httpOf.UNAUTHORIZED.message!, description: 'Missing, malformed or wrong bearer token.' },
  403: {
    name: 'Forbidden',
    message: httpOf.FORBIDDEN.message!,
    description: "The API key lacks the permission the route needs (`error` names it), or a browser's origin is not one the key allows. Nothing was changed.",
  },
  404: {
    name: 'NotFound',
    message: 'Relayer with ID my-relayer not found',
    description:
      'Unknown relayer (`Relayer with ID <id> not found`), notification (`Notification not found`), transaction, signer (`Signer with ID <id> not found`), network (`Network with ID <id> not found`) or plugin (`Plugin with id <id> not found`).',
  },
  405: { name: 'MethodNotAllowed', message: 'Method Not Allowed', description: 'The path exists but not with this method; see the Allow header.' },
  409: {
    name: 'Conflict',
    message: 'Notification with this ID already exists',
    description:
      'The resource already exists (`Relayer with this ID already exists`, `Signer with this ID already exists`, …), or an Idempotency-Key was reused with another body.',
  },
  413: { name: 'PayloadTooLarge', message: 'Payload Too Large', description: 'The body is larger than MAX_BODY_BYTES (default 1 MiB).' },
  415: { name: 'UnsupportedMediaType', message: 'Unsupported Media Type', description: 'The body is not sent as application/json (or application/*+json).' },
  429: {
    name: 'TooManyRequests',
    message: httpOf.RATE_LIMITED.message!,
    description: "The caller's request budget is spent; retry after Retry-After seconds.",
  },
  504: {
    name: 'GatewayTimeout',
    message: 'plugin my-plugin did not answer within 300 s and was stopped',
    description: 'A plugin ran past its timeout and was stopped.',
  },
  503: { name: 'ServiceUnavailable', message: 'Service Unavailable', description: 'Not ready: the readiness document names the failing component.' },
  500: { name: 'InternalServerError', message: httpOf.INTERNAL.message!, description: 'Server failure.' },
};

export function openApiDocument(compiled: CompiledRoute[], enums: EnumValues, families: FamilySpecs): JsonSchema {
  const { recordSchemas } = restRecords(families);
  const paths: Record<string, Record<string, JsonSchema>> = {};
  // Named schemas met on the way (GraphQL's enums are listed first: theirs are the values in order).
  const defs: Record<string, JsonSchema> = Object.fromEntries(ENUMS.map((e) => [e, { type: 'string', enum: [...enums(e)] }]));
  for (const c of compiled) {
    const r = c.route;
    const parameters: JsonSchema[] = [
      ...Object.entries(r.pathParams).map(([name, p]) => parameter(name, 'path', true, p.schema ?? pathText, defs, p.description)),
      ...Object.entries(r.query?.shape ?? {}).map(([name, schema]) => parameter(name, 'query', false, schema as z.ZodType, defs)),
      ...Object.values(r.headers ?? {}).map((h) => parameter(h.name, 'header', false, h.schema, defs)),
    ];
    const statuses = [400, 401, ...(r.public ? [] : [403]), ...r.errors, ...(r.body ? [413, 415] : []), ...(c.rateLimited ? [429] : []), 500].sort();
    const data = r.response.schema === 'string' ? { type: 'string' } : ref(r.response.schema);
    const notes = [
      r.description,
      r.spec ? `Spec section ${r.spec}.` : 'Beyond the interface spec, as in the reference system.',
      c.rateLimited ? "Draws on the caller's rate-limit budget (shared with GraphQL)." : undefined,
      `Runs the GraphQL operation \`${c.operationName}\`.`,
    ].filter(Boolean);
    const operation: JsonSchema = {
      operationId: r.id,
      summary: r.summary,
      description: notes.join('\n\n'),
      tags: [r.tag],
      ...(r.public ? { security: [] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(r.body ? { requestBody: requestBody(r.body, defs) } : {}),
      responses: {
        [String(r.status)]: {
          description: r.status === 201 ? 'Created' : 'OK',
          content: { 'application/json': { schema: r.raw || r.respond ? data : envelope(data, r.response.list) } },
        },
        ...Object.fromEntries(
          statuses.map((s) => [
            String(s),
            // A route answering its own document (readiness) answers it for its error status too.
            r.respond && r.errors.includes(s)
              ? { description: ERRORS[s].description, content: { 'application/json': { schema: data } } }
              : { $ref: `#/components/responses/${ERRORS[s].name}` },
          ]),
        ),
      },
    };
    (paths[r.path] ??= {})[r.method.toLowerCase()] = operation;
  }
  for (const later of laterRoutes) {
    for (const p of later.paths) {
      (paths[p.path] ??= {})[p.method.toLowerCase()] = {
        operationId: `${p.method.toLowerCase()}${p.path.replace(/[^a-zA-Z]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
        summary: `${later.feature}: not available yet`,
        description: `A route of the reference system this service does not offer yet: always 404, \`error\` saying "${later.feature}: not available on this service yet".`,
        tags: ['Not available yet'],
        responses: { '401': { $ref: '#/components/responses/Unauthorized' }, '404': { $ref: '#/components/responses/NotFound' } },
      };
    }
  }
  paths['/api/v1/health'] = {
    get: {
      operationId: 'healthV1',
      summary: 'Health check',
      description: 'As `/v1/health`, at the path @openzeppelin/relayer-sdk calls. Needs no token.',
      tags: ['Health'],
      security: [],
      responses: { '200': { description: 'The service is up.', content: { 'text/plain': { schema: { const: 'OK' } } } } },
    },
  };
  paths['/v1/health'] = {
    get: {
      operationId: 'health',
      summary: 'Health check',
      description: 'Spec section 4.7. Needs no token.',
      tags: ['Health'],
      security: [],
      responses: { '200': { description: 'The service is up.', content: { 'text/plain': { schema: { const: 'OK' } } } } },
    },
  };

  const doc: JsonSchema = {
    openapi: '3.1.0',
    info: {
      title: 'Relayer REST API',
      version: '1.0.0',
      description:
        'The REST interface of the transaction relayer, compatible with OpenZeppelin Relayer. Every JSON response uses one envelope: `success`, `data`, `error`, `metadata` and, on lists, `pagination`. The same operations are available through GraphQL at /graphql.',
    },
    servers: [{ url: '/' }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Relayers' },
      { name: 'Transactions' },
      { name: 'Notifications' },
      { name: 'Signers' },
      { name: 'Networks' },
      { name: 'API keys' },
      { name: 'Plugins' },
      { name: 'Health' },
      { name: 'Not available yet' },
    ],
    paths,
    components: {
      securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer <API_KEY>' } },
      schemas: {
        ...recordSchemas,
        ...directSchemas,
        ...entitySchemas,
        ...apiKeySchemas,
        ...pluginSchemas,
        ...familySchemas(families.list, defs),
        ...defs,
        Metadata: {
          type: 'object',
          properties: {
            logs: { type: 'array', items: { type: 'object', properties: { level: { type: 'string' }, message: { type: 'string' } } } },
            traces: { type: 'array', items: {} },
          },
        },
        ErrorEnvelope: {
          type: 'object',
          required: ['success', 'data', 'error', 'message', 'metadata'],
          properties: {
            success: { const: false },
            data: { type: 'null' },
            error: { type: 'string', description: 'The specific reason: which field and why.' },
            message: { type: 'string', description: 'The spec message of the error kind.' },
            metadata: ref('Metadata'),
          },
        },
      },
      responses: Object.fromEntries(
        Object.entries(ERRORS).map(([status, e]) => [
          e.name,
          {
            description: e.description,
            'x-status': Number(status),
            ...(e.name === 'TooManyRequests'
              ? { headers: { 'Retry-After': { description: 'Seconds until a request is allowed again.', schema: { type: 'integer' } } } }
              : {}),
            ...(e.name === 'MethodNotAllowed' ? { headers: { Allow: { schema: { type: 'string' } } } } : {}),
            content: {
              'application/json': {
                schema: ref('ErrorEnvelope'),
                example: { success: false, data: null, error: e.message, message: e.message, metadata: { logs: [], traces: [] } },
              },
            },
          },
        ]),
      ),
    },
  };
  return withTextRule(doc);
}

const JSON_VALUE = ref('JsonValue');

/**
 * The rule every text input passes (lib/validate.ts textProblem, applied to every string and field
 * name of a request before its schema), stated where the document states text: a pattern on each
 * string, on the names of an object's open fields, and any JSON value as `JsonValue`.
 */
function withTextRule(doc: JsonSchema): JsonSchema {
  const text = { pattern: TEXT_PATTERN };
  const walk = (node: unknown, key?: string): unknown => {
    if (Array.isArray(node)) return key === 'type' || key === 'required' || key === 'enum' ? node : node.map((n) => walk(n));
    if (!node || typeof node !== 'object') return node;
    // (An `x-` keyword holds a rule JSON Schema cannot state, not a schema.)
    const kept = (k: string) => k === 'example' || k === 'const' || k === 'default' || k.startsWith('x-');
    const n = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, kept(k) ? v : walk(v, k)])) as JsonSchema;
    if (key === 'properties' || key === 'components' || key === 'schemas' || key === '$defs') return n;
    const types = (Array.isArray(n.type) ? n.type : n.type ? [n.type] : []) as string[];
    const shaped =
      ['$ref', 'const', 'enum', 'oneOf', 'anyOf', 'allOf', 'not', 'properties', 'required', 'items'].some((k) => k in n) ||
      Object.keys(n).some((k) => k.startsWith('x-'));
    // A schema of any JSON value at all.
    if (!types.length && !shaped) return { ...n, ...JSON_VALUE };
    if (types.includes('string') && !n.enum && n.format !== 'date-time') {
      if (typeof n.pattern !== 'string') Object.assign(n, text);
      else if (n.pattern !== TEXT_PATTERN) n.allOf = [...((n.allOf as JsonSchema[]) ?? []), text];
    }
    if (types.includes('object') && n.additionalProperties !== false) {
      n.propertyNames = text;
      n.additionalProperties ??= JSON_VALUE;
    }
    if (types.includes('array') && !n.items) n.items = JSON_VALUE;
    return n;
  };
  const paths = doc.paths as Record<string, Record<string, JsonSchema>>;
  for (const ops of Object.values(paths)) {
    for (const op of Object.values(ops)) {
      if (op.parameters) op.parameters = (op.parameters as JsonSchema[]).map((p) => ({ ...p, schema: walk(p.schema) }));
      for (const media of Object.values(((op.requestBody as JsonSchema | undefined)?.content ?? {}) as Record<string, JsonSchema>))
        media.schema = walk(media.schema);
    }
  }
  const components = doc.components as { schemas: Record<string, JsonSchema> };
  components.schemas = Object.fromEntries(Object.entries(components.schemas).map(([k, v]) => [k, walk(v) as JsonSchema]));
  components.schemas.JsonValue = {
    description: 'Any JSON value whose strings and field names hold no NUL and no lone UTF-16 surrogate.',
    anyOf: [
      { type: ['null', 'boolean', 'number'] },
      { type: 'string', ...text },
      { type: 'array', items: JSON_VALUE },
      { type: 'object', propertyNames: text, additionalProperties: JSON_VALUE },
    ],
  };
  return doc;
}

function requestBody(body: NonNullable<CompiledRoute['route']['body']>, defs: Record<string, JsonSchema>): JsonSchema {
  const schema =
    body.json ??
    (body.shapes
      ? { oneOf: body.shapes.map((f) => ref(f.send.name)) }
      : body.variants
        ? { oneOf: body.variants.map((v) => jsonSchemaOf(v, defs)) }
        : jsonSchemaOf(body.schema, defs));
  return { required: true, description: body.description, content: { 'application/json': { schema, example: body.example } } };
}

/** Each family's send shape and policy object, and the policies of any relayer. */
function familySchemas(families: readonly FamilySpec[], defs: Record<string, JsonSchema>): Record<string, JsonSchema> {
  return {
    ...Object.fromEntries(families.map((f) => [f.send.name, { description: f.send.description, ...jsonSchemaOf(f.send.fields, defs) }])),
    ...Object.fromEntries(families.map((f) => [f.policy.name, jsonSchemaOf(f.policy.schema, defs)])),
    RelayerPolicies: {
      description: `The relayer's policies in the config file's format, by network type: ${policyKindsOf(families)}.`,
      // anyOf: the families' policy objects overlap (an empty object is a policy of each).
      type: 'object',
      anyOf: families.map((f) => ref(f.policy.name)),
    },
  };
}
