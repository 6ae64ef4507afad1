import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/lib/json.js';

// What the request digest was computed with before canonicalJson: sorted copies of every object,
// then JSON.stringify. Stored digests were made this way, so the text must not change.
const bySortedCopies = (v: unknown): string => {
  const copy = (x: unknown): unknown =>
    typeof x === 'bigint'
      ? x.toString()
      : x instanceof Date
        ? x.toISOString()
        : Array.isArray(x)
          ? x.map(copy)
          : x && typeof x === 'object'
            ? Object.fromEntries(
                Object.keys(x)
                  .filter((k) => (x as Record<string, unknown>)[k] !== undefined)
                  .sort()
                  .map((k) => [k, copy((x as Record<string, unknown>)[k])]),
              )
            : x;
  return JSON.stringify(copy(v));
};

// A small deterministic generator, so a failure repeats.
function random(seed: number) {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s / 0x7fffffff;
  };
}

const KEYS = ['to', 'value', 'data', 'gas_limit', 'Speed', 'a', 'b', '0', '1', '10', '2', '007', '-1', '4294967295', '1.5', 'é', '"q"', ''];

function value(rnd: () => number, depth: number): unknown {
  const pick = Math.floor(rnd() * (depth > 3 ? 7 : 9));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return rnd() < 0.5;
    case 2:
      return Math.floor(rnd() * 1e6) - 5e5;
    case 3:
      return ['', 'x', '0xdead', 'line\nbreak', 'quote"', 'ünï'][Math.floor(rnd() * 6)];
    case 4:
      return BigInt(Math.floor(rnd() * 1e9)) * 10n ** 12n;
    case 5:
      return new Date(1_700_000_000_000 + Math.floor(rnd() * 1e9));
    case 6:
      return rnd() * 100;
    case 7:
      return Array.from({ length: Math.floor(rnd() * 4) }, () => (rnd() < 0.1 ? undefined : value(rnd, depth + 1)));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(rnd() * 6); i > 0; i--) o[KEYS[Math.floor(rnd() * KEYS.length)]] = rnd() < 0.1 ? undefined : value(rnd, depth + 1);
      return o;
    }
  }
}

describe('canonicalJson', () => {
  it('writes the text the sorted copies did, for 5,000 random values (index-like keys, bigints, dates, undefined)', () => {
    const rnd = random(17);
    for (let i = 0; i < 5_000; i++) {
      const v = value(rnd, 0);
      expect(canonicalJson(v)).toBe(bySortedCopies(v));
    }
  });

  it('gives the same text whatever order the keys were set in', () => {
    const a = { value: '1', to: '0xdEaD', nested: { z: 1, a: [2, { y: true, b: null }] } };
    const b = { nested: { a: [2, { b: null, y: true }], z: 1 }, to: '0xdEaD', value: '1' };
    expect(canonicalJson(a)).toBe(canonicalJson(b));
    expect(canonicalJson(a)).toBe('{"nested":{"a":[2,{"b":null,"y":true}],"z":1},"to":"0xdEaD","value":"1"}');
  });

  it('leaves out undefined fields and writes undefined array items as null, as JSON does', () => {
    expect(canonicalJson({ a: undefined, b: [undefined, 1] })).toBe('{"b":[null,1]}');
    expect(canonicalJson(undefined)).toBe('null');
  });
});
