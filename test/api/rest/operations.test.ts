import {
  getNullableType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  typeFromAST,
  validate,
  type GraphQLInputType,
  type OperationDefinitionNode,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { camel, check } from '../../../src/api/rest/fields.js';
import { compileRoutes, schemaEnums } from '../../../src/api/rest/handler.js';
import { jsonSchemaOf, openApiDocument } from '../../../src/api/rest/openapi.js';
import { laterRoutes } from '../../../src/api/rest/sign-and-forward.js';
import { families, routes, schema } from '../../support/families.js';

const compiled = compileRoutes(schema, routes);
const offered = new Set(compiled.map((c) => c.route));
const pending = routes.filter((r) => !offered.has(r));

function operation(doc: (typeof routes)[number]['document']) {
  return doc.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
}

type Json = Record<string, any>;
const defs: Record<string, Json> = {};
/** The JSON Schema the document shows for a REST value (its zod schema's). */
const json = (schema: z.ZodType | undefined): Json => (schema ? jsonSchemaOf(schema, defs) : { type: 'string' });
const types = (j: Json): string[] => (Array.isArray(j.type) ? j.type : j.type ? [j.type] : []);
const nullable = (j: Json) => types(j).includes('null') || (j.oneOf ?? []).some((x: Json) => x.type === 'null');
/** The value's schema without its null alternative. */
const nonNull = (j: Json): Json => {
  if (Array.isArray(j.type)) return { ...j, type: j.type.filter((t: string) => t !== 'null')[0] };
  if (j.oneOf?.some((x: Json) => x.type === 'null')) return j.oneOf.find((x: Json) => x.type !== 'null');
  return j;
};

/** Whether a REST JSON Schema can carry a value of a GraphQL input type, recursively. */
function compatible(schema: Json, gql: GraphQLInputType, where: string, problems: string[]) {
  const t = getNullableType(gql);
  const j = nonNull(schema);
  const kind = types(j)[0] ?? (j.$ref ? 'ref' : 'any');
  const fail = (why: string) => problems.push(`${where}: ${why}`);
  if (isListType(t)) {
    if (kind !== 'array') return fail(`GraphQL list, REST ${kind}`);
    return compatible(j.items, t.ofType, `${where}[]`, problems);
  }
  if (isInputObjectType(t)) {
    // A union of objects (a memo's variants) fills one input with the fields of each.
    if (j.oneOf?.every((m: Json) => m.properties)) return j.oneOf.forEach((m: Json) => compatibleFields(m, t.getFields(), where, problems));
    if (kind !== 'object' || !j.properties) return fail(`GraphQL ${t.name}, REST ${kind} without fields`);
    return compatibleFields(j, t.getFields(), where, problems);
  }
  if (isEnumType(t)) {
    if (j.$ref !== `#/components/schemas/${t.name}`) fail(`GraphQL enum ${t.name}, REST ${JSON.stringify(j)}`);
    return;
  }
  if (!isScalarType(t)) return fail('unexpected type');
  const expected: Record<string, (j: Json) => boolean> = {
    String: () => kind === 'string',
    ID: () => kind === 'string',
    Boolean: () => kind === 'boolean',
    Int: (j) => kind === 'integer' && (j.format === 'int32' || (!j.format && j.minimum >= -(2 ** 31) && j.maximum <= 2 ** 31 - 1)),
    Long: (j) => kind === 'integer' && j.format === 'int64',
    BigInt: (j) => kind === 'integer' && j.format === 'u128',
    JSON: () => true,
  };
  if (!expected[t.name]?.(j)) fail(`GraphQL ${t.name}, REST ${JSON.stringify(j)}`);
}

function compatibleFields(object: Json, input: Record<string, { type: GraphQLInputType; defaultValue?: unknown }>, where: string, problems: string[]) {
  const fields = Object.entries((object.properties ?? {}) as Record<string, Json>);
  const required = new Set<string>(object.required ?? []);
  for (const [name, f] of fields) {
    const target = input[camel(name)];
    if (!target) {
      problems.push(`${where}.${name}: no GraphQL field ${camel(name)}`);
      continue;
    }
    compatible(f, target.type, `${where}.${name}`, problems);
    if (nullable(f) && isNonNullType(target.type)) problems.push(`${where}.${name}: nullable in REST, non-null in GraphQL`);
  }
  for (const [gname, target] of Object.entries(input)) {
    if (!isNonNullType(target.type) || target.defaultValue !== undefined) continue;
    const rest = fields.find(([n]) => camel(n) === gname);
    if (!rest || !required.has(rest[0])) problems.push(`${where}.${gname}: required in GraphQL but not in REST`);
  }
}

describe('REST operations', () => {
  it('every document of an offered route is valid against the schema', () => {
    expect(compiled.length).toBeGreaterThanOrEqual(11);
    for (const c of compiled) expect(validate(schema, c.document), `${c.route.method} ${c.route.path}`).toEqual([]);
  });

  it('only routes whose GraphQL field is not in the schema yet are held back', () => {
    for (const r of pending) {
      const parent = r.field.type === 'Query' ? schema.getQueryType()! : schema.getMutationType()!;
      expect(parent.getFields()[r.field.name], r.field.name).toBeUndefined();
    }
    expect(pending.map((r) => r.field.name).filter((n) => !['cancelTransaction', 'replaceTransaction'].includes(n))).toEqual([]);
  });

  it("maps path, query, header and body fields onto the operation's variables with compatible types", () => {
    const problems: string[] = [];
    for (const c of compiled) {
      const r = c.route;
      const where = `${r.method} ${r.path}`;
      const vars = new Map(
        (operation(r.document).variableDefinitions ?? []).map((v) => [v.variable.name.value, typeFromAST(schema, v.type as never) as GraphQLInputType]),
      );
      const provided = new Set<string>();
      const use = (name: string, schema: Json, label: string) => {
        provided.add(name);
        const type = vars.get(name);
        if (!type) return problems.push(`${where} ${label}: no variable $${name}`);
        compatible(schema, type, `${where} ${label}`, problems);
      };
      for (const [name, p] of Object.entries(r.pathParams)) {
        use(p.gql, json(p.schema), name);
        expect(r.path).toContain(`{${name}}`);
      }
      for (const [name, f] of Object.entries(r.query?.shape ?? {})) use(camel(name), json(f as z.ZodType), name);
      for (const h of Object.values(r.headers ?? {})) use(h.gql, json(h.schema), h.name);
      if (r.body) use(r.body.variable, r.body.text ? { type: 'string' } : r.body.json ? {} : json(r.body.schema), 'body');
      for (const [name, type] of vars) if (!provided.has(name) && isNonNullType(type)) problems.push(`${where}: $${name} is never given`);
      expect([...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort()).toEqual(Object.keys(r.pathParams).sort());
    }
    expect(problems).toEqual([]);
  });

  it('the example bodies of the route table pass the JSON checks', () => {
    // A body taken whole (the JSON-RPC passthrough) has no fields to check.
    for (const r of routes.filter((x) => x.body && !x.body.json)) {
      const issues: string[] = [];
      check(r.body!.schema, r.body!.example, '', issues);
      expect(issues, r.id).toEqual([]);
    }
  });

  it('enum fields name enums of the schema', () => {
    const enums = schemaEnums(schema);
    const walk = (j: unknown): void => {
      if (Array.isArray(j)) j.forEach(walk);
      else if (j && typeof j === 'object') {
        const ref = (j as Json).$ref;
        if (typeof ref === 'string' && ['TransactionStatus', 'Speed', 'NetworkType', 'NotificationType'].includes(ref.split('/').pop()!)) {
          expect(enums(ref.split('/').pop()!).length).toBeGreaterThan(0);
        }
        Object.values(j).forEach(walk);
      }
    };
    for (const r of routes)
      [...Object.values(r.query?.shape ?? {}), ...(r.body && !r.body.json ? [r.body.schema] : [])].forEach((f) => walk(json(f as z.ZodType)));
  });

  it('the rate limit applies to the spec routes 4.1-4.3 and to no read or notification route', () => {
    const limited = (method: string, path: string) => compiled.find((c) => c.route.method === method && c.route.path === path)!.rateLimited;
    expect(limited('POST', '/api/v1/relayers/{relayer_id}/transactions')).toBe(1);
    expect(limited('GET', '/api/v1/relayers/{relayer_id}/transactions')).toBe(1);
    expect(limited('PATCH', '/api/v1/relayers/{relayer_id}')).toBe(1);
    // A plugin call by GET runs the plugin as a POST does: limited alike.
    const free = compiled.filter(
      (c) => c.route.tag === 'Notifications' || (c.route.method === 'GET' && c.route.id !== 'listTransactions' && c.route.id !== 'callPluginGet'),
    );
    expect(free.length).toBeGreaterThanOrEqual(7);
    for (const c of free) expect(c.rateLimited, c.route.id).toBe(0);
  });
});

describe('OpenAPI document', () => {
  const doc = openApiDocument(compiled, schemaEnums(schema), families) as any;

  it('is OpenAPI 3.1 with every offered route and the health check', () => {
    expect(doc.openapi).toBe('3.1.0');
    for (const c of compiled) {
      const op = doc.paths[c.route.path][c.route.method.toLowerCase()];
      expect(op.operationId).toBe(c.route.id);
      expect(Object.keys(op.responses)).toContain(String(c.route.status));
      expect(Object.keys(op.responses).includes('429')).toBe(c.rateLimited > 0);
      for (const s of ['400', '401', '500']) expect(op.responses[s]).toBeDefined();
    }
    expect(doc.paths['/v1/health'].get.security).toEqual([]);
    const operations = Object.values(doc.paths).flatMap((p: any) => Object.keys(p));
    const later = laterRoutes.flatMap((l) => l.paths);
    expect(operations).toHaveLength(compiled.length + 2 + later.length);
    for (const p of later) expect(doc.paths[p.path][p.method.toLowerCase()].responses['404']).toBeDefined();
  });

  it('resolves every $ref', () => {
    const refs: string[] = [];
    const walk = (v: unknown) => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') {
        for (const [k, x] of Object.entries(v)) k === '$ref' ? refs.push(x as string) : walk(x);
      }
    };
    walk(doc);
    expect(refs.length).toBeGreaterThan(20);
    for (const ref of refs) {
      const target = ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((o: any, k) => o?.[k], doc);
      expect(target, ref).toBeDefined();
    }
  });

  it('describes the send body as the three shapes, with the JSON types of the route table', () => {
    const send = doc.paths['/api/v1/relayers/{relayer_id}/transactions'].post;
    expect(send.requestBody.content['application/json'].schema.oneOf).toHaveLength(3);
    const evm = doc.components.schemas.EvmTransactionRequest;
    expect(evm.required).toEqual(['value']);
    expect(evm.properties.value.type).toBe('integer');
    expect(evm.properties.gas_limit.type).toEqual(['integer', 'null']);
    expect(evm.properties.speed.$ref).toBe('#/components/schemas/Speed');
    expect(doc.components.schemas.StellarTransactionRequest.properties.max_fee.description).toMatch(/default 1,000,000/);
    expect(send.parameters.map((p: { name: string }) => p.name)).toEqual(['relayer_id', 'Idempotency-Key']);
  });
});
