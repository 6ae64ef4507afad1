import { Response } from '@whatwg-node/fetch';
import type { Caller } from '../../core/access/keys.js';
import type { z } from 'zod';
import { type GraphQLError, type GraphQLSchema, isEnumType, type OperationDefinitionNode } from 'graphql';
import { type LocalCall, requestContext } from '../graphql/context.js';
import { rootCharge } from '../graphql/rate-limit.js';
import type { OperationRunner } from '../graphql/run.js';
import { parseJson, stringifyJson } from '../../lib/json.js';
import { replacedBytes, textIssues, textProblem } from '../../lib/validate.js';
import { BodyTooLarge, InvalidUtf8, isJsonContentType, readBodyText } from '../body.js';
import type { Runtime } from '../../core/runtime.js';
import { DOCS_CSP, docsPage } from './docs.js';
import { laterFeature } from './sign-and-forward.js';
import { fail, json, ok } from './envelope.js';
import { camel, check, fromText, graphqlNames, pathText, typeProblem } from './fields.js';
import { openApiDocument, type EnumValues } from './openapi.js';
import { httpOf, isErrorCode, type ErrorCode } from './status.js';
import { restRoutes } from './routes.js';
import type { CompiledRoute, Route } from './route.js';
import type { HttpLabels } from '../../core/metrics.js';

export interface RestContext {
  requestId: string;
  caller: Caller;
  /** Metrics labels of the request: the adapter names the route template it matched. */
  labels?: HttpLabels;
  /** The request's URL, parsed once by whoever passes it on. */
  url?: URL;
}

const OPENAPI_PATH = '/api/v1/openapi.json';
const DOCS_PATH = '/api/v1/docs';

/** Reads enum values from the schema, so the adapter and the GraphQL enum never disagree. */
export function schemaEnums(schema: GraphQLSchema): EnumValues {
  const cache = new Map<string, string[]>();
  return (name) => {
    let values = cache.get(name);
    if (!values) {
      const type = schema.getType(name);
      if (!isEnumType(type)) throw new Error(`REST route table names ${name}, which is not an enum of the schema`);
      values = type.getValues().map((v) => v.name);
      cache.set(name, values);
    }
    return values;
  };
}

/**
 * The routes whose GraphQL field exists in the schema. Requests skip parsing and validation: the
 * documents are fixed in the code, and test/api/rest/operations.test.ts validates each against the
 * schema (validating them here cost 90 ms of CPU at every start).
 */
export function compileRoutes(schema: GraphQLSchema, table: Route[]): CompiledRoute[] {
  return table.flatMap((route) => {
    const parent = route.field.type === 'Query' ? schema.getQueryType() : schema.getMutationType();
    const field = parent?.getFields()[route.field.name];
    if (!field) return [];
    const op = route.document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition')!;
    const charge = rootCharge(schema, route.document);
    return [
      {
        route,
        segments: route.path
          .split('/')
          .slice(1)
          .map((s) => (s.startsWith('{') ? { param: s.slice(1, -1) } : s)),
        document: route.document,
        operationName: op.name!.value,
        rateLimited: charge.reduce((n, c) => n + c.calls, 0),
        charge,
      },
    ];
  });
}

/** The routes a path of `n` segments may match, in table order: only those are compared with it. */
const candidates = (compiled: CompiledRoute[], n: number) =>
  compiled.filter((c) => c.segments.length === n || (c.route.tail !== undefined && n > c.segments.length));

/** The routes, and those a path may match by its segment count (up to 16; longer paths are filtered each time). */
function routeIndex(compiled: CompiledRoute[]) {
  const bySize = Array.from({ length: 17 }, (_, n) => candidates(compiled, n));
  return (n: number) => bySize[n] ?? candidates(compiled, n);
}

function match(routesOf: ReturnType<typeof routeIndex>, segments: string[]) {
  const found: { c: CompiledRoute; params: Record<string, string>; tail?: string }[] = [];
  for (const c of routesOf(segments.length)) {
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < c.segments.length && ok; i++) {
      const s = c.segments[i];
      if (typeof s === 'string') ok = s === segments[i];
      else if (segments[i] === '') ok = false;
      else params[s.param] = segments[i];
    }
    if (!ok) continue;
    // What lies below a route that takes any path under it: "/any/thing", or "".
    const tail = c.route.tail === undefined ? undefined : segments.slice(c.segments.length).reduce((t, x) => `${t}/${x}`, '');
    found.push({ c, params, tail });
  }
  // A literal segment wins over a parameter: DELETE …/transactions/pending is not a cancel of "pending".
  const literals = (c: CompiledRoute) => c.segments.filter((s) => typeof s === 'string').length;
  return found.sort((a, b) => literals(b.c) - literals(a.c));
}

const MAX_ISSUES = 20;
const describe = (issues: string[]) => issues.slice(0, MAX_ISSUES).join('; ') + (issues.length > MAX_ISSUES ? `; and ${issues.length - MAX_ISSUES} more` : '');

/** The fields of a body that was not UTF-8: those holding a replaced sequence (the body itself when none does). */
function utf8Issues(text: string): string[] {
  const issues: string[] = [];
  try {
    textIssues(parseJson(text), '', issues, replacedBytes);
  } catch {
    // not JSON either: the body is named below
  }
  return issues.length ? issues : ['body: must be valid UTF-8'];
}

/** A GraphQL error as the spec's error envelope: status and message by extensions.code (status.ts). */
export function errorResponse(error: GraphQLError): Response {
  const code = error.extensions?.code;
  const detail = error.extensions?.detail as string | undefined;
  if (isErrorCode(code)) {
    const { status, message: fixed } = httpOf[code];
    const message = fixed ?? error.message;
    const headers = (error.extensions?.http as { headers?: Record<string, string> } | undefined)?.headers;
    return fail(status, message, detail ?? (error.message !== message ? error.message : undefined), headers);
  }
  // Errors of the request itself (variable coercion) have no path; resolver errors always do.
  if (!code && !error.path) return failWith('BAD_REQUEST', error.message);
  return failWith('INTERNAL');
}

/** The envelope of an error code, with the spec's message. */
export function failWith(code: ErrorCode, detail?: string): Response {
  const { status, message } = httpOf[code];
  return fail(status, message ?? code, detail);
}

/**
 * The /api/v1 compatibility layer: each route runs a named GraphQL operation on the same schema
 * (built for the same chain families, rt.families).
 */
export function createRestHandler(run: OperationRunner, rt: Runtime, schema: GraphQLSchema) {
  const compiled = compileRoutes(
    schema,
    restRoutes(rt.families, rt.signers.custodies, (type) => !!rt.families.pipeline(type)?.replace),
  );
  const routesOf = routeIndex(compiled);
  const enums = schemaEnums(schema);
  let openapi: string | undefined;
  let docs: string | undefined;
  const openApiText = () => (openapi ??= stringifyJson(openApiDocument(compiled, enums, rt.families)));

  const isPublicPath = (path: string) => path === OPENAPI_PATH || path === DOCS_PATH;
  const normalise = (pathname: string) => (pathname.length > 1 && pathname.endsWith('/') ? pathname.slice(0, -1) : pathname);

  /** The JSON body (an object, or an array where the route takes one), or why there is none (a 400 issue). */
  function readBody(text: string, issues: string[], arrays = false): Record<string, unknown> | undefined {
    if (!text.trim()) return void issues.push('body: required (a JSON object)');
    let value: unknown;
    try {
      value = parseJson(text);
    } catch (e) {
      return void issues.push(`body: invalid JSON (${e instanceof RangeError ? 'nested too deeply' : (e as Error).message})`);
    }
    if (value === null || typeof value !== 'object' || (Array.isArray(value) && !arrays))
      return void issues.push(`body: must be a JSON object${arrays ? ' or array' : ''}`);
    textIssues(value, '', issues);
    return issues.length ? undefined : (value as Record<string, unknown>);
  }

  /**
   * Names of query parameters whose value is not valid percent-encoded UTF-8. URLSearchParams would
   * read such bytes as U+FFFD; like a path, the query is refused instead.
   */
  function badlyEncoded(search: string): Set<string> {
    const bad = new Set<string>();
    for (const part of search.slice(1).split('&')) {
      const [name, value = ''] = part.split(/=(.*)/s);
      try {
        decodeURIComponent(value.replace(/\+/g, ' '));
      } catch {
        try {
          bad.add(decodeURIComponent(name.replace(/\+/g, ' ')));
        } catch {}
      }
    }
    return bad;
  }

  function variablesFor(c: CompiledRoute, params: Record<string, string>, url: URL, request: Request, text: string, issues: string[], tail?: string) {
    const { route } = c;
    const variables: Record<string, unknown> = {};
    if (route.tail !== undefined) {
      try {
        variables[route.tail] = decodeURIComponent(tail ?? '');
      } catch {
        issues.push('route: invalid percent-encoding in the path');
      }
    }
    for (const [name, p] of Object.entries(route.pathParams)) {
      try {
        const text = decodeURIComponent(params[name]);
        const why = textProblem(text);
        if (why) issues.push(`${name}: ${why}`);
        variables[p.gql] = fromText(text, p.schema ?? pathText, name, issues);
      } catch {
        issues.push(`${name}: invalid percent-encoding in the path`);
      }
    }
    const malformed = route.query ? badlyEncoded(url.search) : new Set<string>();
    for (const [name, schema] of Object.entries(route.query?.shape ?? {}) as [string, z.ZodType][]) {
      const given = url.searchParams.getAll(name);
      const why = given.map(textProblem).find(Boolean);
      if (malformed.has(name)) issues.push(`${name}: invalid percent-encoding in the query`);
      else if (why) issues.push(`${name}: ${why}`);
      else if (given.length > 1) issues.push(`${name}: given more than once`);
      else if (given.length === 1) variables[camel(name)] = fromText(given[0], schema, name, issues);
    }
    for (const [name, h] of Object.entries(route.headers ?? {})) {
      const given = request.headers.get(name);
      if (given === null) continue;
      check(h.schema, given, h.name, issues);
      variables[h.gql] = given;
    }
    if (route.body?.text) variables[route.body.variable] = text;
    else if (route.body) {
      const body = readBody(text, issues, !!route.body.json);
      if (body && route.body.json) variables[route.body.variable] = route.body.map ? route.body.map(body) : body;
      else if (body) {
        // A body of several shapes: here only what GraphQL could not carry; the shape of the
        // relayer's type (one the document shows) is checked by the service.
        check(route.body.schema, body, '', issues, route.body.shapes ? typeProblem : undefined);
        variables[route.body.variable] = graphqlNames(body);
      }
    }
    if (route.whole)
      Object.assign(variables, route.whole(request, url, route.body && variables[route.body.variable], String(variables[route.tail ?? ''] ?? '')));
    return variables;
  }

  async function handle(request: Request, ctx: RestContext): Promise<Response> {
    const url = ctx.url ?? new URL(request.url);
    const path = normalise(url.pathname);
    if (isPublicPath(path)) {
      if (ctx.labels) ctx.labels.endpoint = path;
      if (request.method !== 'GET') return fail(405, 'Method Not Allowed', `use GET on ${path}`, { Allow: 'GET' });
      if (path === OPENAPI_PATH) return new Response(openApiText(), { headers: { 'content-type': 'application/json' } });
      return new Response((docs ??= docsPage(JSON.parse(openApiText()))), {
        headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': DOCS_CSP },
      });
    }
    const found = match(routesOf, path.split('/').slice(1));
    if (!found.length) {
      const later = laterFeature(path.split('/').slice(1));
      return fail(404, 'Not Found', later ?? `no route ${path}`);
    }
    if (ctx.labels) ctx.labels.endpoint = found[0].c.route.path;
    const hit = found.find((f) => f.c.route.method === request.method);
    if (!hit) {
      const allow = [...new Set(found.map((f) => f.c.route.method))].join(', ');
      return fail(405, 'Method Not Allowed', `${request.method} is not allowed on ${path}; allowed: ${allow}`, { Allow: allow });
    }
    let body = '';
    if (hit.c.route.body) {
      let notUtf8 = false;
      try {
        body = await readBodyText(request, rt.env.maxBodyBytes);
      } catch (e) {
        if (e instanceof BodyTooLarge) return fail(413, 'Payload Too Large', e.message);
        if (!(e instanceof InvalidUtf8)) throw e;
        [body, notUtf8] = [e.text, true];
      }
      // An empty body is "body: required" (400) whatever its type; any other must be JSON.
      const type = request.headers.get('content-type');
      if (body.length > 0 && !isJsonContentType(type)) {
        return fail(415, 'Unsupported Media Type', `send the body as application/json (got ${type ?? 'no Content-Type'})`);
      }
      if (notUtf8) return failWith('BAD_REQUEST', describe(utf8Issues(body)));
    }
    const issues: string[] = [];
    const variables = variablesFor(hit.c, hit.params, url, request, body, issues, hit.tail);
    if (issues.length) return failWith('BAD_REQUEST', describe(issues));

    const result = await run(
      { document: hit.c.document, operationName: hit.c.operationName, variables, charge: hit.c.charge, fixed: true },
      requestContext(rt, ctx.requestId, ctx.caller, local),
      ctx.labels,
    );
    if (result.errors?.length) return errorResponse(result.errors[0]);
    if (hit.c.route.respond) return hit.c.route.respond(result.data);
    const out = hit.c.route.result(result.data);
    if (hit.c.route.raw) return json(hit.c.route.status, out.data);
    return ok(out.data, out.pagination, hit.c.route.status);
  }
  const local: LocalCall = (request, caller, requestId) => handle(request, { requestId, caller });

  return {
    routes: compiled,
    local,
    handle,
    isPublic: (request: Request) => {
      const path = normalise(new URL(request.url).pathname);
      if (request.method !== 'GET') return false;
      return isPublicPath(path) || match(routesOf, path.split('/').slice(1)).some((f) => f.c.route.public && f.c.route.method === 'GET');
    },
    notFound: () => fail(404, 'Not Found', 'no such route'),
    unauthorized: () => failWith('UNAUTHORIZED'),
    forbidden: (detail: string) => failWith('FORBIDDEN', detail),
    internalError: () => failWith('INTERNAL'),
  };
}

export type RestHandler = ReturnType<typeof createRestHandler>;
