import { collectFields, getDirective } from '@graphql-tools/utils';
import { type DocumentNode, type FragmentDefinitionNode, getOperationAST, type GraphQLError, type GraphQLSchema, Kind } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { Context } from './context.js';
import { AppError, rateLimited } from './app-error.js';
import { wrapResolvers } from './wrap.js';

/**
 * Marks a field as drawing on the caller's request budget (spec 4.1-4.3). Every marked field
 * shares one token bucket per caller, on both surfaces; its size and refill rate are deployment
 * settings (RATE_LIMIT_BURST_SIZE, RATE_LIMIT_REQUESTS_PER_SECOND), not per-field arguments.
 */
export const RATE_LIMITED = { rateLimit: { limit: 1, duration: 1 } } as const;

/**
 * Wraps each marked field below the root (a relayer's transactions) to take a token of the
 * caller's budget each time it resolves, once per item of the list it is in; the token is taken
 * from the request's own runtime (ctx.rt.access.rateLimit), so one schema serves every runtime in the
 * process (tests run several). Root fields are left as they are: their tokens are taken before
 * execution (rateLimitPlugin, operationRunner), and a wrapper there cost every send two promise
 * turns for nothing.
 */
export function applyRateLimits(schema: GraphQLSchema): GraphQLSchema {
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map((t) => t?.name));
  return wrapResolvers(schema, (field, typeName) => {
    if (roots.has(typeName) || !getDirective(schema, field, 'rateLimit')?.length) return undefined;
    return (resolve) => async (source, args, ctx, info) => {
      const wait = await ctx.rt.access.rateLimit.take(ctx.caller.budget);
      if (wait > 0) throw rateLimited(wait / 1000);
      return resolve(source, args, ctx, info);
    };
  });
}

/**
 * How many rate-limited root fields the operation runs: each alias is one (`a: sendTransaction …
 * b: sendTransaction …` is two), fields skipped by @skip/@include are none.
 */
export function rateLimitedRootFields(
  schema: GraphQLSchema,
  document: DocumentNode,
  operationName?: string | null,
  variables?: Record<string, unknown> | null,
): number {
  const operation = getOperationAST(document, operationName);
  const root = operation && schema.getRootType(operation.operation);
  if (!operation || !root || operation.operation === 'subscription') return 0;
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  let count = 0;
  for (const nodes of collectFields(schema, fragments, variables ?? {}, root, operation.selectionSet).fields.values()) {
    const field = root.getFields()[nodes[0].name.value];
    if (field && getDirective(schema, field, 'rateLimit')?.length) count++;
  }
  return count;
}

/**
 * Takes the tokens of every rate-limited root field of an operation at once, before it runs: an
 * operation whose aliases ask for more than the caller has left runs none of them (no mutation is
 * half done) and answers Too Many Requests. Applies to both surfaces (the REST adapter executes
 * through the same envelop pipeline). `status` is the HTTP status of Too Many Requests.
 */
export function rateLimitPlugin(status: number): Plugin<Context> {
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      const count = rateLimitedRootFields(args.schema, args.document, args.operationName, args.variableValues as Record<string, unknown> | undefined);
      const refused = await takeTokens(args.contextValue as Context, count, status);
      if (refused) setResultAndStopExecution({ errors: [refused] });
    },
  };
}

/** Takes `count` tokens of the caller's budget: null when taken, else the error to answer with. */
export async function takeTokens(ctx: Context, count: number, status: number): Promise<GraphQLError | null> {
  if (!count) return null;
  const { burst } = ctx.rt.env.rateLimit;
  if (count > burst) {
    // Would never fit in the bucket: waiting cannot help, so not a 429.
    const error = new AppError(
      'BAD_REQUEST',
      'Bad Request',
      `the operation runs ${count} rate-limited fields; at most ${burst} (RATE_LIMIT_BURST_SIZE) fit in one operation`,
    );
    Object.assign(error.extensions, { http: { status: 400 } });
    return error;
  }
  const wait = await ctx.rt.access.rateLimit.take(ctx.caller.budget, count);
  if (wait <= 0) return null;
  // Ends before error masking, which sets the HTTP status of the other errors.
  const error = rateLimited(wait / 1000);
  Object.assign(error.extensions.http as object, { status });
  return error;
}
