import type { YogaServerInstance } from 'graphql-yoga';
import type { Context } from '../graphql/context.js';
import type { Runtime } from '../runtime.js';
import { fail } from './envelope.js';

export interface RestContext {
  requestId: string;
  caller: string;
}

/** The /api/v1 compatibility layer: each route runs a named GraphQL operation on the same schema. */
export function createRestHandler(_yoga: YogaServerInstance<RestContext, Context>, _rt: Runtime) {
  return {
    isPublic: (_request: Request) => false,
    notFound: () => fail(404, 'Not Found', 'no such route'),
    unauthorized: () => fail(401, 'Unauthorized'),
    internalError: () => fail(500, 'Internal Server Error'),
    handle: async (_request: Request, _ctx: RestContext): Promise<Response> => fail(404, 'Not Found', 'no such route'),
  };
}
