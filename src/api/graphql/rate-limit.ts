import { collectFields, getDirective, MapperKind, mapSchema } from '@graphql-tools/utils';
import { type DocumentNode, type FragmentDefinitionNode, type GraphQLError, type GraphQLObjectType, type GraphQLSchema, getOperationAST, Kind } from 'graphql';
import { rateLimitDirective } from 'graphql-rate-limit-directive';
import type { Plugin } from 'graphql-yoga';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { RateLimits, Window } from '../../lib/rate-limits.js';
import type { Context } from './context.js';
import { AppError, rateLimited } from './app-error.js';

/**
 * Marks a field as drawing on the caller's budget (spec 4.1-4.3) of the deployment's window
 * (RATE_LIMIT_*), shared by every field marked so. A field may give its own window instead,
 * `{ rateLimit: { limit, duration } }`: `limit` calls per `duration` seconds, a budget of its own.
 */
export const RATE_LIMITED = { rateLimit: {} } as const;

type Marked = { limit?: unknown; duration?: unknown };

/** A marked field's window: undefined for the deployment's (marked without arguments). */
function windowOf(schema: GraphQLSchema, field: Parameters<typeof getDirective>[1], name: string): Window | 'none' | undefined {
  const args = getDirective(schema, field, 'rateLimit')?.[0] as Marked | undefined;
  if (!args) return 'none';
  const { limit, duration } = args;
  if (limit === undefined && duration === undefined) return undefined;
  const whole = (n: unknown): n is number => Number.isInteger(n) && (n as number) > 0;
  if (!whole(limit) || !whole(duration)) throw new Error(`@rateLimit on ${name}: give both limit and duration, whole numbers above 0`);
  // The marked object itself: the deployment's window keeps its identity (RateLimits.limiter's quick path).
  return args as Window;
}

/**
 * The schema with graphql-rate-limit-directive applied last, its limiters this service's
 * (`limits`, one per window), each caller counted apart (Caller.budget). Fields marked without
 * arguments are given the deployment's window first, so the directive sees both arguments.
 * The directive wraps each marked field to take a point each time it resolves (a relayer's
 * transactions: one a relayer listed). Root fields get their own resolvers back: their points
 * are taken before execution, every alias at once (takeCharge), and the directive's wrapper there
 * would take them again, one alias at a time, and cost every send two promise turns.
 */
export function applyRateLimits(schema: GraphQLSchema, limits: RateLimits): GraphQLSchema {
  const filled = mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
      const w = windowOf(schema, field, `${typeName}.${fieldName}`);
      if (w !== undefined) return field;
      const directives = { ...(field.extensions?.directives as object), rateLimit: limits.defaults };
      return { ...field, extensions: { ...field.extensions, directives } };
    },
  });
  const { rateLimitDirectiveTransformer } = rateLimitDirective<Context>({
    keyGenerator: (_args, _source, _fieldArgs, ctx) => ctx.caller.budget,
    onLimit: (res) => {
      throw rateLimited(res.msBeforeNext / 1000);
    },
    // The directive makes one limiter per window and passes its window here: it gets this
    // service's, the one takeCharge uses (a constructor may return another object).
    limiterClass: function Limiter(opts: { points: number; duration: number }) {
      return limits.limiter({ limit: opts.points, duration: opts.duration });
    } as never,
  });
  const roots = new Set([schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()].map((t) => t?.name));
  return mapSchema(rateLimitDirectiveTransformer(filled), {
    [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
      if (!roots.has(typeName)) return field;
      return { ...field, resolve: (filled.getType(typeName) as GraphQLObjectType).getFields()[fieldName].resolve };
    },
  });
}

/** What an operation's rate-limited root fields take: per window (undefined: the deployment's), how many calls (each alias one). */
export type Charge = { window?: Window; calls: number; fields: string[] }[];

/**
 * The charge of an operation's rate-limited root fields: each alias is a call (`a: sendTransaction …
 * b: sendTransaction …` is two), fields skipped by @skip/@include are none.
 */
export function rootCharge(schema: GraphQLSchema, document: DocumentNode, operationName?: string | null, variables?: Record<string, unknown> | null): Charge {
  const operation = getOperationAST(document, operationName);
  const root = operation && schema.getRootType(operation.operation);
  if (!operation || !root || operation.operation === 'subscription') return [];
  const fragments: Record<string, FragmentDefinitionNode> = {};
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
  const charge: Charge = [];
  for (const nodes of collectFields(schema, fragments, variables ?? {}, root, operation.selectionSet).fields.values()) {
    const name = nodes[0].name.value;
    const field = root.getFields()[name];
    const w = field && windowOf(schema, field, `${root.name}.${name}`);
    if (!field || w === 'none') continue;
    const same = charge.find((c) => c.window?.limit === w?.limit && c.window?.duration === w?.duration);
    if (same) {
      same.calls++;
      if (!same.fields.includes(name)) same.fields.push(name);
    } else charge.push({ window: w, calls: 1, fields: [name] });
  }
  return charge;
}

/** How many rate-limited root fields the operation runs, whatever their window. */
export const rateLimitedRootFields = (...args: Parameters<typeof rootCharge>) => rootCharge(...args).reduce((n, c) => n + c.calls, 0);

/**
 * Takes the points of every rate-limited root field of an operation at once, before it runs: an
 * operation whose aliases ask for more than the caller has left runs none of them (no mutation is
 * half done) and answers Too Many Requests. Applies to both surfaces (the REST adapter executes
 * through the same envelop pipeline). `status` is the HTTP status of Too Many Requests.
 */
export function rateLimitPlugin(status: number): Plugin<Context> {
  return {
    async onExecute({ args, setResultAndStopExecution }) {
      const charge = rootCharge(args.schema, args.document, args.operationName, args.variableValues as Record<string, unknown> | undefined);
      const refused = await takeCharge(args.contextValue as Context, charge, status);
      if (refused) setResultAndStopExecution({ errors: [refused] });
    },
  };
}

/** Takes a charge from the caller's budgets, all or none: null when taken, else the error to answer with. */
export async function takeCharge(ctx: Context, charge: Charge, status: number): Promise<GraphQLError | null> {
  if (!charge.length) return null;
  const limits = ctx.rt.access.rateLimit;
  for (const c of charge) {
    const w = c.window ?? limits.defaults;
    const deployment = w.limit === limits.defaults.limit && w.duration === limits.defaults.duration;
    // Would never fit in the window: waiting cannot help, so not a 429.
    if (c.calls > w.limit) return bad(c, w.limit, deployment ? deploymentLimit(ctx, w.limit) : `the @rateLimit limit of ${c.fields.join(', ')}`);
  }
  const key = ctx.caller.budget;
  const limiter = (c: Charge[number]) => limits.limiter(c.window ?? limits.defaults);
  const take = (c: Charge[number]) => limiter(c).consume(key, c.calls).then(taken, waitOf);
  const wait = charge.length === 1 ? await take(charge[0]) : Math.max(...(await Promise.all(charge.map(take))));
  if (!wait) return null;
  // A refused count is still added to the counter: give every point back, so what was refused costs nothing.
  await Promise.all(charge.map((c) => limiter(c).reward(key, c.calls)));
  // Ends before error masking, which sets the HTTP status of the other errors.
  const error = rateLimited(wait / 1000);
  Object.assign(error.extensions.http as object, { status });
  return error;
}

const taken = () => 0;

/** Milliseconds until a refused count may be taken; any other failure is passed on. */
function waitOf(e: unknown): number {
  if (e instanceof RateLimiterRes) return Math.max(1, e.msBeforeNext);
  throw e;
}

const deploymentLimit = (ctx: Context, limit: number) => (limit === ctx.rt.env.rateLimit.burst ? 'RATE_LIMIT_BURST_SIZE' : 'RATE_LIMIT_REQUESTS_PER_SECOND');

function bad(c: Charge[number], limit: number, why: string): GraphQLError {
  const error = new AppError('BAD_REQUEST', 'Bad Request', `the operation runs ${c.calls} rate-limited fields; at most ${limit} (${why}) fit in one operation`);
  Object.assign(error.extensions, { http: { status: 400 } });
  return error;
}
