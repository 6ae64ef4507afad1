import type { FieldType, RequestField } from '../../core/family-spec.js';

// The JSON types of REST request fields: what the adapter checks before a value reaches GraphQL
// (the shape of the JSON, never a domain rule), and what the OpenAPI document describes.

export type IntegerFormat = 'int32' | 'int64' | 'u128';

export type JsonType =
  | { kind: 'string'; enumOf?: string; format?: string }
  /** minimum/maximum: documented bounds (the service checks them, with its own message). */
  | { kind: 'integer'; format: IntegerFormat; minimum?: number; maximum?: number }
  | { kind: 'boolean' }
  /** `fields` absent: any JSON object, passed on as it is (policies, Stellar operations). */
  | { kind: 'object'; fields?: Fields }
  | { kind: 'array'; items: JsonType }
  | { kind: 'any' };

export interface Field {
  type: JsonType;
  required?: boolean;
  nullable?: boolean;
  /** The GraphQL input field this one maps to; default: the camelCase of the JSON name. */
  gql?: string;
  description?: string;
}

export type Fields = Record<string, Field>;

export const string = (o: { enumOf?: string; format?: string } = {}): JsonType => ({ kind: 'string', ...o });
export const integer = (format: IntegerFormat, bounds: { minimum?: number; maximum?: number } = {}): JsonType => ({ kind: 'integer', format, ...bounds });
export const boolean = (): JsonType => ({ kind: 'boolean' });
export const object = (fields?: Fields): JsonType => ({ kind: 'object', fields });
export const array = (items: JsonType): JsonType => ({ kind: 'array', items });
export const any = (): JsonType => ({ kind: 'any' });

/** A field as the service describes it (core/family-spec.ts: the chain families' request fields). */
export function restField(f: RequestField): Field {
  return {
    type: restType(f.type),
    ...(f.required ? { required: true } : {}),
    ...(f.nullable ? { nullable: true } : {}),
    ...(f.gql ? { gql: f.gql } : {}),
    ...(f.description ? { description: f.description } : {}),
  };
}

export function restType(t: FieldType): JsonType {
  switch (t.kind) {
    case 'u128':
    case 'int64':
      return integer(t.kind);
    case 'string':
      return string(t.format ? { format: t.format } : {});
    case 'boolean':
      return boolean();
    case 'any':
      return any();
    case 'enum':
      return string({ enumOf: t.name });
    case 'object':
      return object(t.fields ? restFields(t.fields) : undefined);
    case 'list':
      return array(restType(t.items));
  }
}

export const restFields = (fields: Record<string, RequestField>): Fields => Object.fromEntries(Object.entries(fields).map(([k, f]) => [k, restField(f)]));

export const camel = (s: string) => s.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
export const gqlName = (name: string, f: Field) => f.gql ?? camel(name);

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** Enum values by GraphQL enum type name (read from the schema, the one place they are listed). */
export type EnumValues = (enumType: string) => readonly string[];

const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'bigint' ? 'a number' : `a ${typeof v}`);

/**
 * Checks a parsed JSON value against a JSON type and renames object fields to their GraphQL
 * names. Collects every problem as "path: why"; the value is only usable when none were found.
 */
export function convert(value: unknown, type: JsonType, path: string, issues: string[], enums: EnumValues): unknown {
  const at = (why: string) => issues.push(path ? `${path}: ${why}` : why);
  switch (type.kind) {
    case 'any':
      return value;
    case 'string':
      if (typeof value !== 'string') return at(`must be a string, got ${describe(value)}`);
      if (type.enumOf) {
        const allowed = enums(type.enumOf);
        if (!allowed.includes(value)) return at(`must be one of ${allowed.join(', ')}`);
      }
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') return at(`must be a boolean, got ${describe(value)}`);
      return value;
    case 'integer': {
      // parseJson gives integers beyond 2^53 as bigint; a number that is not a safe integer had a
      // fraction or an exponent, so its digits are not exact.
      if (typeof value === 'bigint') {
        if (type.format === 'int32') return at(`must be an integer from ${INT32_MIN} to ${INT32_MAX}`);
        return value;
      }
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        return at(typeof value === 'number' ? 'must be an integer' : `must be an integer, got ${describe(value)}`);
      }
      if (type.format === 'int32' && (value < INT32_MIN || value > INT32_MAX)) return at(`must be an integer from ${INT32_MIN} to ${INT32_MAX}`);
      return type.format === 'int32' ? value : BigInt(value);
    }
    case 'array':
      if (!Array.isArray(value)) return at(`must be an array, got ${describe(value)}`);
      return value.map((item, i) => {
        if (item === null) return issues.push(`${path}[${i}]: must not be null`);
        return convert(item, type.items, `${path}[${i}]`, issues, enums);
      });
    case 'object':
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return at(`must be an object, got ${describe(value)}`);
      return type.fields ? convertFields(value as Record<string, unknown>, type.fields, path, issues, enums) : value;
  }
}

/** An object's fields: unknown ones refused, required ones present, null only where allowed. */
export function convertFields(value: Record<string, unknown>, fields: Fields, path: string, issues: string[], enums: EnumValues): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const name = (k: string) => {
    const shown = k.length > 64 ? `${k.slice(0, 64)}…` : k;
    return path ? `${path}.${shown}` : shown;
  };
  for (const key of Object.keys(value)) {
    const f = Object.hasOwn(fields, key) ? fields[key] : undefined;
    if (!f) {
      issues.push(`${name(key)}: unknown field`);
      continue;
    }
    const v = value[key];
    if (v === null) {
      if (f.nullable) out[gqlName(key, f)] = null;
      else issues.push(`${name(key)}: must not be null`);
      continue;
    }
    out[gqlName(key, f)] = convert(v, f.type, name(key), issues, enums);
  }
  for (const [key, f] of Object.entries(fields)) {
    if (f.required && !Object.hasOwn(value, key)) issues.push(`${name(key)}: required`);
  }
  return out;
}

/** A query-string value (always text) read as the given type. */
export function fromQuery(raw: string, type: JsonType, name: string, issues: string[], enums: EnumValues): unknown {
  if (type.kind === 'integer') {
    if (!/^-?\d{1,40}$/.test(raw)) return issues.push(`${name}: must be an integer`);
    const n = BigInt(raw);
    return convert(n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n, type, name, issues, enums);
  }
  if (type.kind === 'boolean') {
    if (raw !== 'true' && raw !== 'false') return issues.push(`${name}: must be true or false`);
    return raw === 'true';
  }
  return convert(raw, type, name, issues, enums);
}
