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

/** JSON.parse that keeps every digit of an integer and never passes off a non-integer as one (readNumber). */
export function parseJson(text: string): unknown {
  return losslessParse(text, null, readNumber);
}

/** JSON.stringify that writes bigint as a number literal with every digit. */
export function stringifyJson(value: unknown): string {
  return losslessStringify(value as JavaScriptValue) ?? 'null';
}
