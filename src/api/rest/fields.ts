import { z } from 'zod';
import { MAX_PER_PAGE } from '../../core/page.js';
import { integerFormatOf, issueTexts, jsonMessages, unwrap } from '../../lib/validate.js';

// REST request values are checked by the zod schema the OpenAPI document is made from (openapi.ts):
// the JSON type, the constraints and the fields of each path parameter, query parameter and body,
// with the API's messages (lib/validate.ts jsonMessages). The values go on to GraphQL as sent,
// top-level fields under their camelCase names.

export const camel = (s: string) => s.replace(/[_-]([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/** A REST object's values under their GraphQL (camelCase) names. */
export const graphqlNames = (value: Record<string, unknown>) => Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), v]));

type NumberDef = { type: string; format?: string; checks?: { _zod: { def: { format?: string } } }[] };

/** Whether a schema's values are integers (a query or path value is read as one). */
export function isInteger(schema: z.ZodType): boolean {
  const s = unwrap(schema);
  const def = s._zod.def as NumberDef;
  const formats = [def.format, ...(def.checks ?? []).map((c) => c._zod.def.format)];
  return !!integerFormatOf(s) || (def.type === 'number' && formats.some((f) => f?.includes('int')));
}

const TYPE_CODES = new Set(['invalid_type', 'unrecognized_keys', 'invalid_value', 'invalid_union']);

/**
 * Problems of a value's type: what GraphQL could not carry in that field (its type, an enum
 * member, an input object's fields). Inside a list (of JSON values, in GraphQL) only the type.
 */
export const typeProblem = (i: z.core.$ZodIssue) => (i.path.some((p) => typeof p === 'number') ? i.code === 'invalid_type' : TYPE_CODES.has(i.code));

/** Checks `value` against `schema`, adding each problem (or each that `only` keeps) as "path: why". */
export function check(schema: z.ZodType, value: unknown, path: string, issues: string[], only: (i: z.core.$ZodIssue) => boolean = () => true): void {
  const result = schema.safeParse(value, { error: jsonMessages });
  if (!result.success) issues.push(...issueTexts(result.error.issues.filter(only), path));
}

/** A query or path value (always text) read as its schema's type, then checked. */
export function fromText(raw: string, schema: z.ZodType, name: string, issues: string[]): unknown {
  let value: unknown = raw;
  if (isInteger(schema)) {
    if (!/^-?\d{1,40}$/.test(raw)) return issues.push(`${name}: must be an integer`);
    const n = BigInt(raw);
    value = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  }
  check(schema, value, name, issues);
  return value;
}

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** A GraphQL-named (camelCase) object shape under its REST (snake_case) names. */
export const snakeShape = (shape: z.ZodRawShape): z.ZodRawShape => Object.fromEntries(Object.entries(shape).map(([k, v]) => [snake(k), v]));

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const int32Range = `must be an integer from ${INT32_MIN} to ${INT32_MAX}`;

/** An integer GraphQL takes as Int. */
export const int32 = z.int().min(INT32_MIN, int32Range).max(INT32_MAX, int32Range).meta({ format: 'int32' });

const perPageRange = `must be an integer from 1 to ${MAX_PER_PAGE}`;

/**
 * A path parameter's text when its route names no schema: any but an empty segment (a path with
 * one matches no route); its characters as every text's (textProblem).
 */
export const pathText = z.string().min(1, 'must not be empty');

/** The query of a list route. */
export const paging = z.object({
  page: int32.min(1, 'must be an integer >= 1').optional().meta({ description: 'Page number, from 1 (default 1).' }),
  per_page: int32
    .min(1, perPageRange)
    .max(MAX_PER_PAGE, perPageRange)
    .optional()
    .meta({ description: `Items per page, from 1 to ${MAX_PER_PAGE} (default 10).` }),
});
