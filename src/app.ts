import { randomUUID } from 'node:crypto';
import { createYoga } from 'graphql-yoga';
import type { Context } from './api/graphql/context.js';
import { maskError } from './api/graphql/errors.js';
import { useInputRules } from './api/graphql/input.js';
import { callerKey } from './api/graphql/rate-limit.js';
import { schema } from './api/graphql/schema.js';
import { authenticate } from './api/auth.js';
import { createRestHandler } from './api/rest/handler.js';
import { httpOf } from './api/rest/status.js';
import type { Runtime } from './core/runtime.js';

export interface App {
  fetch(request: Request): Promise<Response>;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** The whole HTTP surface as one Fetch handler: node:http serves it in main, tests call it directly. */
export function createApp(rt: Runtime, apiKey: string): App {
  const yoga = createYoga<{ requestId: string; caller: string }, Context>({
    schema,
    graphqlEndpoint: '/graphql',
    landingPage: false,
    logging: false,
    graphiql: {
      title: 'Relayer GraphQL',
      headers: JSON.stringify({ Authorization: 'Bearer <your API_KEY>' }),
      defaultQuery: '{\n  relayers {\n    items { id network address paused transactions(perPage: 5) { items { id status hash } } }\n  }\n}\n',
    },
    plugins: [useInputRules(rt.env.maxBodyBytes)],
    maskedErrors: { maskError: maskError(rt.log, (code) => httpOf[code].status) },
    context: ({ requestId, caller }) => ({ rt, log: rt.log.child({ requestId }), requestId, caller }),
  });
  const rest = createRestHandler(yoga, rt);

  async function handle(request: Request, requestId: string): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === '/v1/health' || pathname === '/v1/health/') {
      return new Response('OK', { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' } });
    }
    const isGraphQL = pathname === '/graphql';
    const isRest = pathname.startsWith('/api/v1');
    if (!isGraphQL && !isRest) return rest.notFound();
    // The GraphiQL page holds no data; the operations it sends carry the token like any other.
    const wantsGraphiQL = isGraphQL && request.method === 'GET' && (request.headers.get('accept') ?? '').includes('text/html');
    const token = authenticate(request.headers.get('authorization'), apiKey);
    if (!token && !wantsGraphiQL && !(isRest && rest.isPublic(request))) {
      return isRest
        ? rest.unauthorized()
        : Response.json({ errors: [{ message: 'Unauthorized', extensions: { code: 'UNAUTHORIZED' } }] }, { status: httpOf.UNAUTHORIZED.status });
    }
    const caller = token ? callerKey(token) : 'anonymous';
    return isGraphQL ? yoga.handleRequest(request, { requestId, caller }) : rest.handle(request, { requestId, caller });
  }

  return {
    async fetch(request) {
      const started = performance.now();
      const given = request.headers.get('x-request-id');
      const requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
      let response: Response;
      try {
        response = await handle(request, requestId);
      } catch (err) {
        rt.log.error({ err, requestId }, 'request failed');
        response = rest.internalError();
      }
      response.headers.set('x-request-id', requestId);
      const { pathname } = new URL(request.url);
      rt.log.info({ requestId, method: request.method, path: pathname, status: response.status, ms: Math.round(performance.now() - started) }, 'request');
      return response;
    },
  };
}
