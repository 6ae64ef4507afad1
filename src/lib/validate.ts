import { z } from 'zod';

export const U128_MAX = (1n << 128n) - 1n;
export const INT64_MAX = (1n << 63n) - 1n;

/** An integer given as a JSON number or bigint (never a string), within [0, max]. */
export const nonNegativeInt = (max: bigint, label: string) =>
  z.union([z.number(), z.bigint()], { message: `must be an integer` }).transform((v, ctx) => {
    if (typeof v === 'number' && !Number.isInteger(v)) {
      ctx.addIssue({ code: 'custom', message: 'must be an integer' });
      return z.NEVER;
    }
    const n = BigInt(v);
    if (n < 0n) {
      ctx.addIssue({ code: 'custom', message: 'must be >= 0' });
      return z.NEVER;
    }
    if (n > max) {
      ctx.addIssue({ code: 'custom', message: `must fit in ${label}` });
      return z.NEVER;
    }
    return n;
  });

export const u128 = nonNegativeInt(U128_MAX, 'u128');
export const int64 = nonNegativeInt(INT64_MAX, 'int64');

export const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed 20-byte hex address');
export const hexData = z.string().regex(/^0x([0-9a-fA-F]{2})*$/, 'must be 0x-prefixed hex with whole bytes');

/** An RFC 3339 timestamp, as a Date. */
export const rfc3339 = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i, 'must be an RFC 3339 timestamp')
  .transform((s, ctx) => {
    const d = new Date(s);
    if (Number.isNaN(d.getTime())) {
      ctx.addIssue({ code: 'custom', message: 'is not a valid date' });
      return z.NEVER;
    }
    return d;
  });

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
  .regex(/^[^\u0000-\u001f\u007f-\u009f]*$/, 'must not contain control characters');

// NUL (PostgreSQL text cannot hold it) or a UTF-16 surrogate without its pair (not encodable as UTF-8).
const BAD_TEXT = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const MAX_TEXT_ISSUES = 20;

/** Why a string cannot be stored as text, or null when it can: the one rule for every text input. */
export function textProblem(s: string): string | null {
  const m = BAD_TEXT.exec(s);
  if (!m) return null;
  return m[0] === '\0' ? 'must not contain NUL (\\u0000) characters' : 'must not contain lone UTF-16 surrogates';
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
