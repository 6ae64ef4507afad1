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
