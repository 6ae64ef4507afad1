import { z } from 'zod';

export const U128_MAX = (1n << 128n) - 1n;
export const INT64_MAX = (1n << 63n) - 1n;

/** How an integer schema is written in JSON and documented: a JSON number with every digit, within [min, max]. */
export interface IntegerFormat {
  format: 'u128' | 'int64';
  min: bigint;
  max: bigint;
}

// Kept on the schema's definition, which its .meta()/.describe() copies share.
const FORMAT = Symbol('integer format');
type Marked = { [FORMAT]?: IntegerFormat };

/**
 * Marks `schema` as an integer of `format` (for the REST checks, GraphQL types and documents), its
 * JSON Schema an integer within the bounds; returns it.
 */
export function asInteger<T extends z.ZodType>(schema: T, format: IntegerFormat): T {
  (schema._zod.def as Marked)[FORMAT] = format;
  // Bounds as text: a JSON Schema is made through JSON.stringify, which takes no bigint (see jsonBound).
  z.globalRegistry.add(schema, { type: 'integer', format: format.format, minimum: `${format.min}`, maximum: `${format.max}` } as never);
  return schema;
}

/** The schema inside optional, nullable and default wrappers. */
export function unwrap(schema: z.ZodType): z.ZodType {
  let s = schema;
  for (;;) {
    const def = s._zod.def as { type: string; innerType?: z.ZodType };
    if (!def.innerType || !['optional', 'nullable', 'default', 'prefault', 'readonly', 'nonoptional'].includes(def.type)) return s;
    s = def.innerType;
  }
}

/** The integer format of a schema, or undefined (see unwrap for one inside wrappers). */
export const integerFormatOf = (schema: z.ZodType): IntegerFormat | undefined => (schema._zod.def as Marked)[FORMAT];

const kindOf = (v: unknown) =>
  v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'bigint' ? 'a number' : `${/^[aeiou]/.test(typeof v) ? 'an' : 'a'} ${typeof v}`;
const integerMessage = (input: unknown) =>
  input === undefined
    ? 'required'
    : input === null
      ? 'must not be null'
      : `must be an integer${typeof input === 'number' || typeof input === 'bigint' ? '' : `, got ${kindOf(input)}`}`;

/** An integer given as a JSON number or bigint (never a string), within [min, max]. */
export const boundedInt = (min: bigint, max: bigint, label: IntegerFormat['format']) =>
  asInteger(
    // z.number().int(): a fraction (or a number read inexactly, NaN) is no integer at all.
    z.union([z.number().int(), z.bigint()], { error: (iss) => integerMessage(iss.input) }).transform((v, ctx) => {
      const n = BigInt(v);
      if (n < min) {
        ctx.addIssue({ code: 'custom', message: n < 0n || min === 0n ? `must be >= ${min > 0n ? 0n : min}` : `must be at least ${min}` });
        return z.NEVER;
      }
      if (n > max) {
        ctx.addIssue({ code: 'custom', message: `must fit in ${label}` });
        return z.NEVER;
      }
      return n;
    }),
    { format: label, min, max },
  );

/** An integer given as a JSON number or bigint (never a string), within [0, max]. */
export const nonNegativeInt = (max: bigint, label: IntegerFormat['format']) => boundedInt(0n, max, label);

export const u128 = nonNegativeInt(U128_MAX, 'u128');
export const int64 = nonNegativeInt(INT64_MAX, 'int64');

/** The keys of an object schema whose values are integers (stored as decimal strings). */
export const integerFields = (schema: z.ZodObject): string[] => Object.keys(schema.shape).filter((k) => integerFormatOf(unwrap(schema.shape[k] as z.ZodType)));

/** A stored object of `schema` (its integers as decimal strings) with its integers back as bigint. */
export function readStored<T extends z.ZodObject>(schema: T, stored: unknown): z.output<T> {
  const out: Record<string, unknown> = { ...((stored ?? {}) as object) };
  for (const k of integerFields(schema)) if (out[k] !== undefined && out[k] !== null) out[k] = BigInt(out[k] as string);
  return out as z.output<T>;
}

/** Base64 text (standard alphabet, padded). */
export const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
export const hexData = z.string().regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex with whole bytes');

/**
 * An RFC 3339 date-time (seconds required, offset Z or ±hh:mm), as zod checks it. A value that is
 * not a string keeps the message of its type (jsonMessages: "must be a string").
 */
export const rfc3339Text = z.iso.datetime({ offset: true, error: (i) => (i.code === 'invalid_type' ? undefined : 'must be an RFC 3339 timestamp') });

/** An RFC 3339 timestamp, as a Date. */
export const rfc3339 = rfc3339Text.transform((s) => new Date(s));

const snake = (s: string) => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * "field: why" for every issue, the detail users see beside "Bad Request". Fields are named as the
 * REST spec and the config file name them (snake_case), list items as [i].
 */
export function describeIssues(error: z.ZodError, prefix = ''): string {
  return error.issues
    .map((i) => {
      const path = i.path.reduce<string>(
        (p, seg) => (typeof seg === 'number' ? `${p}[${seg}]` : p ? `${p}.${snake(String(seg))}` : snake(String(seg))),
        prefix,
      );
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join('; ');
}

/**
 * A URL as text: no control characters (the URL parser drops tabs and line breaks and trims the
 * ends, so a URL holding them would be stored as sent but used as another).
 */
export const urlText = z
  .string()
  .max(2048)
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what it refuses.
  .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'must not contain control characters');

const EXPECTED: Record<string, string> = {
  number: 'a number',
  int: 'an integer',
  bigint: 'an integer',
  array: 'an array',
  object: 'an object',
  record: 'an object',
  string: 'a string',
  boolean: 'a boolean',
};

/**
 * The messages of JSON values checked against a schema (the REST adapter's): what was wrong with
 * the value as sent, in the words the API has always used. Messages a schema gives itself win.
 */
export const jsonMessages: z.core.$ZodErrorMap = (iss) => {
  const input = iss.input as unknown;
  switch (iss.code) {
    case 'invalid_type':
      if (input === undefined) return 'required';
      if (input === null) return 'must not be null';
      // A number read as NaN or ±Infinity was written inexactly (lib/json.ts readNumber).
      if (typeof input === 'number' && iss.expected === 'int') return 'must be an integer';
      return `must be ${EXPECTED[iss.expected] ?? `a ${iss.expected}`}, got ${kindOf(input)}`;
    case 'invalid_value':
      return `must be one of ${iss.values.map(String).sort().join(', ')}`;
    case 'invalid_union': {
      const d = (iss as { discriminator?: string; options?: unknown[] }).discriminator;
      if (d === undefined) return undefined;
      const given = input && typeof input === 'object' ? (input as Record<string, unknown>)[d] : undefined;
      return given === undefined ? 'required' : `must be one of ${((iss as { options?: unknown[] }).options ?? []).map(String).sort().join(', ')}`;
    }
  }
  return undefined;
};

const shown = (k: string) => (k.length > 64 ? `${k.slice(0, 64)}…` : k);

/** Each issue as "path: why" (paths as `a.b[0]` under `prefix`), an unknown field as "name: unknown field". */
export function issueTexts(issues: readonly z.core.$ZodIssue[], prefix = ''): string[] {
  return issues.flatMap((i) => {
    const path = i.path.reduce<string>((p, seg) => (typeof seg === 'number' ? `${p}[${seg}]` : p ? `${p}.${String(seg)}` : String(seg)), prefix);
    if (i.code === 'unrecognized_keys') return i.keys.map((k) => `${path ? `${path}.` : ''}${shown(k)}: unknown field`);
    return [path ? `${path}: ${i.message}` : i.message];
  });
}

/**
 * Text the database can store, as a JSON Schema pattern (its regular expressions read code points):
 * no NUL (PostgreSQL text cannot hold it) and no UTF-16 surrogate without its pair (not encodable
 * as UTF-8). The OpenAPI document puts it on every string and field name it states.
 */
export const TEXT_PATTERN = '^[^\\u0000\\ud800-\\udfff]*$';
const TEXT = new RegExp(TEXT_PATTERN, 'u');
const MAX_TEXT_ISSUES = 20;

/** Why a string cannot be stored as text, or null when it can: the one rule for every text input. */
export function textProblem(s: string): string | null {
  if (TEXT.test(s)) return null;
  return s.includes('\0') ? 'must not contain NUL (\\u0000) characters' : 'must not contain lone UTF-16 surrogates';
}

/** Why text decoded from bytes that were not UTF-8 is refused: it holds U+FFFD where they were. */
export const replacedBytes = (s: string): string | null => (s.includes('\uFFFD') ? 'must be valid UTF-8' : null);

/**
 * Every string of a parsed JSON value (object keys included) that `problem` refuses, as
 * "path: why" (paths as `a.b[0]`, the caller's names). Stops after a few.
 */
export function textIssues(value: unknown, path: string, issues: string[], problem: (s: string) => string | null = textProblem): void {
  const at = (p: string, why: string) => issues.length < MAX_TEXT_ISSUES && issues.push(p ? `${p}: ${why}` : why);
  const walk = (v: unknown, p: string) => {
    if (issues.length >= MAX_TEXT_ISSUES) return;
    if (typeof v === 'string') {
      const why = problem(v);
      if (why) at(p, why);
    } else if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, `${p}[${i}]`));
    } else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) {
        const why = problem(k);
        const name = why ? JSON.stringify(k).slice(1, -1).slice(0, 64) : k.slice(0, 64);
        const q = p ? `${p}.${name}` : name;
        if (why) at(q, `field name ${why}`);
        walk(item, q);
      }
    }
  };
  walk(value, path);
}
