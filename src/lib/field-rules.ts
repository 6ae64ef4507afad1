import type { z } from 'zod';

// Rules between the fields of a request object, each declared once: the zod check (the field it
// names and its message) and the JSON Schema the OpenAPI document states are both derived from it.
// Fields go by their REST (snake_case) names; null counts as absent. A rule JSON Schema cannot
// state (an order between two values) is stated in words and as an `x-` extension keyword.

type JsonSchema = Record<string, unknown>;
type Obj = Record<string, unknown>;

export interface FieldRule {
  /** The field the refusal names and why, when `o` breaks the rule. */
  broken(o: Obj): { field: string; message: string } | undefined;
  /** The rule in JSON Schema, on the REST names. */
  json: JsonSchema;
}

const given = (o: Obj, f: string) => o[f] !== undefined && o[f] !== null;
/** The JSON Schema of "`f` is given" (and equals `value`, when one is named). */
const present = (f: string, value?: unknown): JsonSchema => ({
  required: [f],
  properties: { [f]: value === undefined ? { not: { type: 'null' } } : { const: value } },
});

/** `field` (when it equals `value`, if named) cannot be given with any of `others`. */
export function excludes(field: string, others: readonly string[], message: string, value?: unknown): FieldRule {
  return {
    broken: (o) => (given(o, field) && (value === undefined || o[field] === value) && others.some((f) => given(o, f)) ? { field, message } : undefined),
    json: { description: `${field}: ${message}`, not: { allOf: [present(field, value), { anyOf: others.map((f) => present(f)) }] } },
  };
}

/** Each of `fields` or none: a refusal names the first left out. */
export function together(fields: readonly string[], message: string): FieldRule {
  return {
    broken: (o) => {
      const missing = fields.find((f) => !given(o, f));
      return missing && fields.some((f) => given(o, f)) ? { field: missing, message } : undefined;
    },
    json: { description: message, anyOf: [{ allOf: fields.map((f) => present(f)) }, { not: { anyOf: fields.map((f) => present(f)) } }] },
  };
}

/** Exactly one of `fields`: a refusal names the first. */
export function exactlyOne(fields: readonly string[], message: string): FieldRule {
  return {
    broken: (o) => (fields.filter((f) => given(o, f)).length === 1 ? undefined : { field: fields[0], message }),
    json: { description: message, oneOf: fields.map((f) => present(f)) },
  };
}

/** `field` is required when `other` is absent (empty text counts as absent too). */
export function requiredWithout(field: string, other: string, message: string): FieldRule {
  return {
    broken: (o) => (!o[field] && !o[other] ? { field, message } : undefined),
    json: { description: `${field}: ${message}`, anyOf: [present(other), present(field)] },
  };
}

/**
 * `field` must not exceed `limit` when both are given. JSON Schema cannot compare two values: the
 * document states it in words and as `x-at-most` ({ field: limit }).
 */
export function atMost(field: string, limit: string, message: string): FieldRule {
  return {
    broken: (o) => (given(o, field) && given(o, limit) && (o[field] as bigint) > (o[limit] as bigint) ? { field, message } : undefined),
    json: { description: `${field}: ${message} (not expressible in JSON Schema; stated as x-at-most)`, 'x-at-most': { [field]: limit } },
  };
}

/** The rules as JSON Schema, for an object schema's `.meta()`. */
export const rulesJson = (rules: readonly FieldRule[]): JsonSchema => ({ allOf: rules.map((r) => r.json) });

/**
 * The rules as a zod check on an object whose keys are `name(field)` (GraphQL's camelCase, or the
 * REST names themselves); each broken rule is one issue at the field it names.
 */
export function checkRules(rules: readonly FieldRule[], name: (field: string) => string = (f) => f) {
  return (value: Obj, ctx: z.RefinementCtx) => {
    const o = new Proxy(value, { get: (t, k) => t[name(String(k))] });
    for (const rule of rules) {
      const b = rule.broken(o);
      if (b) ctx.addIssue({ code: 'custom', path: [name(b.field)], message: b.message });
    }
  };
}
