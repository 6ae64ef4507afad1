import type { CompiledRoute } from './handler.js';
import type { EnumValues, Field, Fields, JsonType } from './fields.js';
import { directSchemas, laterRoutes } from './sign-and-forward.js';
import { entitySchemas } from './entities.js';
import type { JsonSchema } from './records.js';
import { httpOf } from './status.js';

// The OpenAPI 3.1 document of the REST surface, generated from the route table.

const ENUMS = ['TransactionStatus', 'Speed', 'NetworkType', 'NotificationType'];

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

const INTEGER_FORMATS: Record<string, JsonSchema> = {
  int32: { type: 'integer', format: 'int32' },
  int64: { type: 'integer', format: 'int64' },
  u128: { type: 'integer', format: 'u128', description: 'An unsigned 128-bit integer, written as a JSON number with every digit.' },
};

export function typeSchema(t: JsonType): JsonSchema {
  switch (t.kind) {
    case 'string':
      return t.enumOf ? ref(t.enumOf) : { type: 'string', ...(t.format ? { format: t.format } : {}) };
    case 'integer':
      return {
        ...INTEGER_FORMATS[t.format],
        ...(t.minimum !== undefined ? { minimum: t.minimum } : {}),
        ...(t.maximum !== undefined ? { maximum: t.maximum } : {}),
      };
    case 'boolean':
      return { type: 'boolean' };
    case 'array':
      return { type: 'array', items: typeSchema(t.items) };
    case 'any':
      return {};
    case 'object':
      return t.fields ? objectSchema(t.fields) : { type: 'object' };
  }
}

function fieldSchema(f: Field): JsonSchema {
  let s = typeSchema(f.type);
  if (f.nullable) s = typeof s.type === 'string' ? { ...s, type: [s.type, 'null'] } : { oneOf: [s, { type: 'null' }] };
  return f.description ? { ...s, description: f.description } : s;
}

function objectSchema(fields: Fields, names: string[] = Object.keys(fields), required = names.filter((n) => fields[n].required)): JsonSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(names.map((n) => [n, fieldSchema(fields[n])])),
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  };
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
  404: {
    name: 'NotFound',
    message: 'Relayer with ID my-relayer not found',
    description:
      'Unknown relayer (`Relayer with ID <id> not found`), notification (`Notification not found`), transaction, signer (`Signer with ID <id> not found`) or network (`Network with ID <id> not found`).',
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
  503: { name: 'ServiceUnavailable', message: 'Service Unavailable', description: 'Not ready: the readiness document names the failing component.' },
  500: { name: 'InternalServerError', message: httpOf.INTERNAL.message!, description: 'Server failure.' },
};

export function openApiDocument(compiled: CompiledRoute[], enums: EnumValues, recordSchemas: Record<string, JsonSchema>): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const c of compiled) {
    const r = c.route;
    const parameters: JsonSchema[] = [
      ...Object.entries(r.pathParams).map(([name, p]) => ({
        name,
        in: 'path',
        required: true,
        description: p.description,
        schema: p.type ? typeSchema(p.type) : { type: 'string' },
      })),
      ...Object.entries(r.query ?? {}).map(([name, f]) => ({ name, in: 'query', required: false, description: f.description, schema: typeSchema(f.type) })),
      ...Object.entries(r.headers ?? {}).map(([name, f]) => ({
        name: headerCase(name),
        in: 'header',
        required: false,
        description: f.description,
        schema: typeSchema(f.type),
      })),
    ];
    const statuses = [400, 401, ...r.errors, ...(r.body ? [413, 415] : []), ...(c.rateLimited ? [429] : []), 500].sort();
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
      ...(r.body ? { requestBody: requestBody(r.body) } : {}),
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

  return {
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
        ...Object.fromEntries(ENUMS.map((e) => [e, { type: 'string', enum: [...enums(e)] }])),
        ...Object.fromEntries(
          compiled
            .flatMap((c) =>
              Object.entries(c.route.body?.shapes ?? {}).map(
                ([name, s]) => [name, { description: s.description, ...objectSchema(c.route.body!.fields, s.fields, s.required) }] as const,
              ),
            )
            .filter(([name], i, all) => all.findIndex(([n]) => n === name) === i),
        ),
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
}

function requestBody(body: NonNullable<CompiledRoute['route']['body']>): JsonSchema {
  const schema = body.json ?? (body.shapes ? { oneOf: Object.keys(body.shapes).map(ref) } : objectSchema(body.fields));
  return { required: true, description: body.description, content: { 'application/json': { schema, example: body.example } } };
}

const headerCase = (h: string) => h.replace(/(^|-)([a-z])/g, (_, d: string, c: string) => d + c.toUpperCase());
