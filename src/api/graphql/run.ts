import { normalizedExecutor } from '@graphql-tools/executor';
import { type DocumentNode, type ExecutionResult, type GraphQLError, type GraphQLSchema, getOperationAST } from 'graphql';
import type { HttpLabels, Metrics } from '../../metrics/index.js';
import type { Context } from './context.js';
import { inputError } from './input.js';
import { rateLimitedRootFields, takeTokens } from './rate-limit.js';

export interface Operation {
  /** Parsed and validated against the schema (with the document limits) by the caller. */
  document: DocumentNode;
  operationName?: string | null;
  variables: Record<string, unknown>;
  /** How many rate-limited root fields it runs, when the caller knows (REST routes count theirs once). */
  rateLimited?: number;
}

/**
 * Runs a query or mutation with the rules yoga's plugins apply on /graphql (input rules, rate limit,
 * the metrics label, error masking) without its per-request pipeline: the REST routes and plain
 * JSON posts to /graphql run here, everything else through yoga.
 */
export function operationRunner(opts: { schema: GraphQLSchema; metrics: Metrics; mask: (error: unknown) => Error; rateLimitedStatus: number }) {
  const { schema, metrics, mask } = opts;
  return async (op: Operation, ctx: Context, labels?: HttpLabels): Promise<ExecutionResult> => {
    try {
      if (labels) labels.operation = metrics.operation(getOperationAST(op.document, op.operationName)?.name?.value);
      const refused =
        inputError(op.document, op.variables) ??
        (await takeTokens(ctx, op.rateLimited ?? rateLimitedRootFields(schema, op.document, op.operationName, op.variables), opts.rateLimitedStatus));
      if (refused) return { errors: [mask(refused) as GraphQLError] };
      // yoga's executor: its errors carry the HTTP status yoga answers with (400 for a variable it refuses).
      const result = (await normalizedExecutor({
        schema,
        document: op.document,
        operationName: op.operationName,
        variableValues: op.variables,
        contextValue: ctx,
      })) as ExecutionResult;
      return result.errors ? { ...result, errors: result.errors.map((e) => mask(e) as GraphQLError) } : result;
    } catch (err) {
      return { errors: [mask(err) as GraphQLError] };
    }
  };
}

export type OperationRunner = ReturnType<typeof operationRunner>;
