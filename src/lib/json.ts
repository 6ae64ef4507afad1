import { parse as losslessParse, stringify as losslessStringify, type JavaScriptValue } from 'lossless-json';

const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** Integers written with more digits than this (after the exponent) are read as ±Infinity. */
const MAX_DIGITS = 400;

/**
 * A JSON number by its written form: an exact integer (`12`, `1e3`, `1.50e2`, `-0.0`) as a number
 * while it is a safe integer, else as a bigint (every digit kept); any other number as the double
 * it is, except that one a double would round to an integer (`1e-400`, `1.0000000000000000001`)
 * reads as NaN, so no integer check can take it for one.
 */
export function readNumber(text: string): number | bigint {
  const m = NUMBER.exec(text);
  if (!m) return Number.NaN;
  const [, sign, whole, frac = '', exp = '0'] = m;
  let digits = (whole + frac).replace(/^0+/, '');
  let shift = Number(exp) - frac.length;
  const zeros = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - zeros);
  shift += zeros;
  if (!digits) return 0;
  if (shift >= 0) {
    if (digits.length + shift > MAX_DIGITS) return sign ? -Infinity : Infinity;
    const n = BigInt(sign + digits) * 10n ** BigInt(shift);
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  }
  const d = Number(text);
  return Number.isInteger(d) ? Number.NaN : d;
}

/** Deepest nesting of arrays and objects a body may have; no request of ours needs a tenth of it. */
export const MAX_JSON_DEPTH = 64;

/** Throws a RangeError when the text nests arrays or objects deeper than `max` (strings skipped). */
function checkDepth(text: string, max: number): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) throw new RangeError(`nested deeper than ${max} levels`);
    } else if (c === 93 || c === 125) depth--;
  }
}

/**
 * JSON.parse that keeps every digit of an integer and never passes off a non-integer as one
 * (readNumber), and refuses nesting deeper than MAX_JSON_DEPTH (a RangeError).
 */
export function parseJson(text: string): unknown {
  checkDepth(text, MAX_JSON_DEPTH);
  return losslessParse(text, null, readNumber);
}

/** JSON.stringify that writes bigint as a number literal with every digit. */
export function stringifyJson(value: unknown): string {
  return losslessStringify(value as JavaScriptValue) ?? 'null';
}

/** JSON.stringify when it can (the common case, and much faster); stringifyJson for bigints. */
export function writeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (e) {
    if (e instanceof TypeError) return stringifyJson(value);
    throw e;
  }
}

/** A key JavaScript lists before the others, in numeric order (an array index). */
const isIndex = (k: string) => /^(?:0|[1-9]\d*)$/.test(k) && Number(k) < 4294967295;

/**
 * JSON with every object's keys sorted and undefined values left out, bigints as decimal strings
 * and dates as ISO strings: the same value gives the same text whatever order its keys were set in
 * (jsonb does not keep key order). Keys that are array indexes come first in numeric order, as in
 * any object's JSON. Written out directly: sorting copies of every object first took twice as long
 * (7 µs against 4 for a signed EVM transaction's state).
 */
export function canonicalJson(v: unknown): string {
  if (typeof v === 'bigint') return `"${v}"`;
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (v instanceof Date) return JSON.stringify(v.toISOString());
  if (Array.isArray(v)) {
    let out = '[';
    for (let i = 0; i < v.length; i++) out += (i ? ',' : '') + canonicalJson(v[i]);
    return `${out}]`;
  }
  const o = v as Record<string, unknown>;
  const keys = Object.keys(o);
  let first = 0;
  while (first < keys.length && isIndex(keys[first])) first++;
  let out = '{';
  for (const k of first === 0 ? keys.sort() : [...keys.slice(0, first), ...keys.slice(first).sort()]) {
    if (o[k] === undefined) continue;
    out += `${out.length > 1 ? ',' : ''}${JSON.stringify(k)}:${canonicalJson(o[k])}`;
  }
  return `${out}}`;
}
