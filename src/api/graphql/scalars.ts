import { GraphQLError, GraphQLScalarType, Kind, type ValueNode } from 'graphql';
import { rfc3339 } from '../../lib/validate.js';

const invalid = (scalar: string, why: string) => new GraphQLError(`${scalar} ${why}`, { extensions: { code: 'BAD_REQUEST' } });

function toBigInt(value: unknown, scalar: string): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw invalid(scalar, 'must be an integer (send values beyond 2^53 as a string)');
    return BigInt(value);
  }
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value);
  throw invalid(scalar, `must be an integer, got ${typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value}`);
}

/** Integers of any size: output as a decimal string, input as an integer literal, number or decimal string. */
export const BigIntScalar = new GraphQLScalarType<bigint, string>({
  name: 'BigInt',
  description: 'An integer of any size (u128 amounts, wei). Serialized as a decimal string; accepts integers or decimal strings.',
  serialize: (v) => toBigInt(v, 'BigInt').toString(),
  parseValue: (v) => toBigInt(v, 'BigInt'),
  parseLiteral: (node: ValueNode) => {
    if (node.kind === Kind.INT || node.kind === Kind.STRING) return toBigInt(node.value, 'BigInt');
    throw invalid('BigInt', 'must be an integer or a decimal string');
  },
});

/** Integers that fit in a JSON number (nonces, gas limits): output as a number. */
export const LongScalar = new GraphQLScalarType<bigint, number | string>({
  name: 'Long',
  description: 'A 64-bit integer. Serialized as a JSON number while it is a safe integer, else as a decimal string.',
  serialize: (v) => {
    const n = toBigInt(v, 'Long');
    return n <= BigInt(Number.MAX_SAFE_INTEGER) && n >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(n) : n.toString();
  },
  parseValue: (v) => toBigInt(v, 'Long'),
  parseLiteral: (node: ValueNode) => {
    if (node.kind === Kind.INT || node.kind === Kind.STRING) return toBigInt(node.value, 'Long');
    throw invalid('Long', 'must be an integer');
  },
});

export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An RFC 3339 timestamp.',
  serialize: (v) => (v instanceof Date ? v : new Date(String(v))).toISOString(),
  parseValue: (v) => parseDate(v),
  parseLiteral: (node) => {
    if (node.kind !== Kind.STRING) throw invalid('DateTime', 'must be an RFC 3339 string');
    return parseDate(node.value);
  },
});

function parseDate(v: unknown): Date {
  const date = rfc3339.safeParse(v);
  if (!date.success) throw invalid('DateTime', 'must be an RFC 3339 timestamp such as 2030-01-01T00:00:00Z');
  return date.data;
}

function literalToJson(node: ValueNode, variables?: Record<string, unknown> | null): unknown {
  switch (node.kind) {
    case Kind.STRING:
    case Kind.BOOLEAN:
      return node.value;
    case Kind.INT:
      return Number.isSafeInteger(Number(node.value)) ? Number(node.value) : BigInt(node.value);
    case Kind.FLOAT:
      return Number(node.value);
    case Kind.NULL:
      return null;
    case Kind.LIST:
      return node.values.map((v) => literalToJson(v, variables));
    case Kind.OBJECT:
      return Object.fromEntries(node.fields.map((f) => [f.name.value, literalToJson(f.value, variables)]));
    case Kind.VARIABLE:
      return variables?.[node.name.value];
    default:
      throw invalid('JSON', 'unsupported literal');
  }
}

export const JSONScalar = new GraphQLScalarType<unknown, unknown>({
  name: 'JSON',
  description: 'Any JSON value.',
  serialize: (v) => jsonSafe(v),
  parseValue: (v) => v,
  parseLiteral: (node, variables) => literalToJson(node, variables),
});

/** bigints become decimal strings so any JSON value can be serialized. */
function jsonSafe(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(jsonSafe);
  if (v && typeof v === 'object' && !(v instanceof Date)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonSafe(x)]));
  return v;
}
