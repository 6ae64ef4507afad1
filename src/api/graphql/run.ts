import { normalizedExecutor } from '@graphql-tools/executor';
import { type DocumentNode, type ExecutionResult, type GraphQLError, type GraphQLSchema, getOperationAST } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import type { HttpLabels, Metrics } from '../../core/metrics.js';
import type { Context } from './context.js';
import { inputChecker } from './input.js';
import { type Charge, rootCharge, takeCharge } from './rate-limit.js';

export interface Operation {
  /** Parsed and validated against the schema (with the document limits) by the caller. */
  document: DocumentNode;
  operationName?: string | null;
  variables: Record<string, unknown>;
  /** What its rate-limited root fields take, when the caller knows (REST routes count theirs once). */
  charge?: Charge;
  /** A document fixed in the code (a REST route's): run compiled, the compilation kept with it. */
  fixed?: boolean;
}

/**
 * Runs a query or mutation with the rules yoga's plugins apply on /graphql (input rules, rate limit,
 * the metrics label, error masking) without its per-request pipeline: the REST routes and plain
 * JSON posts to /graphql run here, everything else through yoga.
 */
export function operationRunner(opts: { schema: GraphQLSchema; metrics: Metrics; mask: (error: unknown) => Error; rateLimitedStatus: number }) {
  const { schema, metrics, mask } = opts;
  const inputError = inputChecker();
  // Compiled once per fixed document (a REST route's): the compiled function coerces variables and
  // resolves fields without the executor's per-request walk of the document (a quarter of the
  // executor's CPU on the send route). Resolvers, directives and scalars are the schema's.
  const compiled = new WeakMap<DocumentNode, Map<string, CompiledQuery | null>>();
  const compiledOf = (op: Operation): CompiledQuery | null => {
    let byName = compiled.get(op.document);
    if (!byName) compiled.set(op.document, (byName = new Map()));
    const name = op.operationName ?? '';
    let c = byName.get(name);
    if (c === undefined) {
      const made = compileQuery(schema, op.document, op.operationName ?? undefined);
      byName.set(name, (c = isCompiledQuery(made) ? made : null));
    }
    return c;
  };
  const execute = async (op: Operation, ctx: Context): Promise<ExecutionResult> => {
    const c = op.fixed ? compiledOf(op) : null;
    if (c) {
      const result = await c.query(undefined, ctx, op.variables);
      // Refused before anything ran (a variable it cannot coerce): the executor's own words for it.
      if (!(result.errors && result.data === undefined)) return result;
    }
    // yoga's executor: its errors carry the HTTP status yoga answers with (400 for a variable it refuses).
    return (await normalizedExecutor({
      schema,
      document: op.document,
      operationName: op.operationName,
      variableValues: op.variables,
      contextValue: ctx,
    })) as ExecutionResult;
  };
  return async (op: Operation, ctx: Context, labels?: HttpLabels): Promise<ExecutionResult> => {
    try {
      if (labels) labels.operation = metrics.operation(getOperationAST(op.document, op.operationName)?.name?.value);
      const refused =
        inputError(op.document, op.variables) ??
        (await takeCharge(ctx, op.charge ?? rootCharge(schema, op.document, op.operationName, op.variables), opts.rateLimitedStatus));
      if (refused) return { errors: [mask(refused) as GraphQLError] };
      const result = await execute(op, ctx);
      return result.errors ? { ...result, errors: result.errors.map((e) => mask(e) as GraphQLError) } : result;
    } catch (err) {
      return { errors: [mask(err) as GraphQLError] };
    }
  };
}

export type OperationRunner = ReturnType<typeof operationRunner>;
