import { parse as losslessParse, stringify as losslessStringify, type JavaScriptValue } from 'lossless-json';

/**
 * JSON.parse that keeps every digit: integers beyond 2^53 become bigint, other integers numbers,
 * anything with a fraction or exponent a plain number (never a valid integer field).
 */
export function parseJson(text: string): unknown {
  return losslessParse(text, null, (value: string) => {
    if (/^-?\d+$/.test(value)) {
      const n = Number(value);
      return Number.isSafeInteger(n) ? n : BigInt(value);
    }
    return Number(value);
  });
}

/** JSON.stringify that writes bigint as a number literal with every digit. */
export function stringifyJson(value: unknown): string {
  return losslessStringify(value as JavaScriptValue) ?? 'null';
}
