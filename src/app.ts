import { Response } from '@whatwg-node/fetch';
import { randomUUID } from 'node:crypto';
import { createYoga } from 'graphql-yoga';
import { type Context, type LocalCall, requestContext } from './api/graphql/context.js';
import { operationRunner } from './api/graphql/run.js';
import { graphqlPost, type ServerContext } from './api/graphql/post.js';
import { maskError } from './api/graphql/app-error.js';
import { GRAPHIQL_CSP, graphiql } from './api/graphql/graphiql.js';
import { limitsPlugin } from './api/graphql/limits.js';
import { applyRateLimits, rateLimitPlugin } from './api/graphql/rate-limit.js';
import { useInputRules } from './api/graphql/input.js';
import { buildSchema } from './api/graphql/schema.js';
import { authenticator } from './api/auth.js';
import { allowOrigin, preflight } from './api/cors.js';
import { ANONYMOUS, type Caller } from './core/access/keys.js';
import { createRestHandler } from './api/rest/handler.js';
import { httpOf } from './api/rest/status.js';
import type { Runtime } from './core/runtime.js';
import type { HttpLabels } from './core/metrics.js';
import { operationLabels } from './api/graphql/metrics.js';

export interface App {
  fetch(request: Request): Promise<Response>;
  /** /graphql requests answered by the direct path and by yoga. */
  graphqlAnswered: { direct: number; yoga: number };
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/**
 * The whole HTTP surface as one Fetch handler: node:http serves it in main, tests call it directly.
 * `yogaOnly` sends every /graphql request through yoga (tests compare it with the direct path).
 */
export function createApp(rt: Runtime, apiKey: string, opts: { yogaOnly?: boolean } = {}): App {
  const schema = applyRateLimits(buildSchema(rt.families), rt.access.rateLimit);
  const graphiqlPage = graphiql();
  const mask = maskError(rt.log, (code) => httpOf[code].status);
  // A plugin's ctx.api calls: REST requests run in process as the plugin's caller (rest is made below).
  const local: LocalCall = (request, caller, requestId) => rest.local(request, caller, requestId);
  const yoga = createYoga<ServerContext, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    // useInputRules reads POST bodies up to MAX_BODY_BYTES itself; yoga's own limit would pipe every
    // body through a TransformStream into a new Request first.
    maxRequestBodySize: false,
    logging: false,
    renderGraphiQL: graphiqlPage.render,
    graphiql: {
      title: 'Relayer GraphQL',
      headers: JSON.stringify({ Authorization: 'Bearer <your API_KEY>' }),
      defaultQuery: '{\n  relayers {\n    items { id network address paused transactions(perPage: 5) { items { id status hash } } }\n  }\n}\n',
    },
    plugins: [useInputRules(rt.env.maxBodyBytes), limitsPlugin(rt.env.graphqlLimits), rateLimitPlugin(httpOf.RATE_LIMITED.status), operationLabels(rt.metrics)],
    maskedErrors: { maskError: mask },
    context: ({ requestId, caller }) => requestContext(rt, requestId, caller, local),
  });
  const run = operationRunner({ schema, metrics: rt.metrics, mask, rateLimitedStatus: httpOf.RATE_LIMITED.status });
  const rest = createRestHandler(run, rt, schema);
  const graphql = graphqlPost(yoga, run, rt, rest.local);
  const authenticate = authenticator(rt, apiKey);
  // Refusals before any operation runs: the envelope on REST, a GraphQL error with the code on /graphql.
  const refuse = (isRest: boolean, code: 'UNAUTHORIZED' | 'FORBIDDEN', detail?: string) =>
    isRest
      ? code === 'UNAUTHORIZED'
        ? rest.unauthorized()
        : rest.forbidden(detail ?? '')
      : Response.json({ errors: [{ message: httpOf[code].message, extensions: { code, ...(detail ? { detail } : {}) } }] }, { status: httpOf[code].status });

  async function handle(request: Request, url: URL, requestId: string, labels: HttpLabels, who: { caller?: Caller }): Promise<Response> {
    const { pathname } = url;
    if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) return preflight(request);
    if (/^(\/api)?\/v1\/health\/?$/.test(pathname)) {
      labels.endpoint = pathname.startsWith('/api') ? '/api/v1/health' : '/v1/health';
      return new Response('OK', { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' } });
    }
    if (request.method === 'GET') {
      const asset = await graphiqlPage.asset(pathname);
      if (asset) return asset;
    }
    const isGraphQL = pathname === '/graphql';
    const isRest = pathname.startsWith('/api/v1');
    if (!isGraphQL && !isRest) return rest.notFound();
    if (isGraphQL) labels.endpoint = '/graphql';
    // The GraphiQL page holds no data; the operations it sends carry the token like any other.
    const wantsGraphiQL = isGraphQL && request.method === 'GET' && (request.headers.get('accept') ?? '').includes('text/html');
    const found = await authenticate(request.headers.get('authorization'));
    if (!found && !wantsGraphiQL && !(isRest && rest.isPublic(request))) return refuse(isRest, 'UNAUTHORIZED');
    const caller = (who.caller = found ?? ANONYMOUS);
    // A browser calling from an origin its key does not allow is refused before anything runs.
    const origin = request.headers.get('origin');
    if (origin && found && !allowOrigin(found, origin)) return refuse(isRest, 'FORBIDDEN', `origin ${origin} is not allowed for this API key`);
    if (!isGraphQL) return rest.handle(request, { requestId, caller, labels, url });
    if (!wantsGraphiQL && !opts.yogaOnly) return graphql.handle(request, { requestId, caller, labels });
    const response = await yoga.handleRequest(request, { requestId, caller, labels });
    if (response.headers.get('content-type')?.startsWith('text/html')) response.headers.set('content-security-policy', GRAPHIQL_CSP);
    return response;
  }

  return {
    graphqlAnswered: graphql.answered,
    async fetch(request) {
      const started = performance.now();
      const url = new URL(request.url);
      const given = request.headers.get('x-request-id');
      const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
      let response: Response;
      const labels: HttpLabels = { endpoint: 'unmatched', operation: '' };
      const who: { caller?: Caller } = {};
      try {
        response = await handle(request, url, requestId, labels, who);
      } catch (err) {
        rt.log.error({ err, requestId }, 'request failed');
        response = rest.internalError();
      }
      response.headers.set('x-request-id', requestId);
      const origin = request.headers.get('origin');
      if (origin && who.caller && allowOrigin(who.caller, origin)) {
        response.headers.set('access-control-allow-origin', origin);
        response.headers.set('access-control-expose-headers', 'x-request-id, retry-after');
        response.headers.append('vary', 'Origin');
      }
      const ms = performance.now() - started;
      rt.metrics.request(request.method, labels, response.status, ms / 1000);
      rt.log.info({ requestId, key: who.caller?.id, method: request.method, path: url.pathname, status: response.status, ms: Math.round(ms) }, 'request');
      return response;
    },
  };
}
