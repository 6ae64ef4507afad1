import fc from 'fast-check';

// Values of a JSON Schema (the served OpenAPI document's), drawn with fast-check: what a client
// reading only the document may send. Candidates are drawn from the schema's keywords and kept
// only when ajv, the arbiter, says the document allows them; text holds the characters a client
// may type and those a service might refuse (NUL, lone surrogates, controls, astral ones).

type Json = Record<string, any>;

/** Any character, the awkward ones often. */
export const anyChar = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '\udc00', '\t', '\n', '\u007f', '\u0085', 'é', '😀', '\u200b', '/', '%', '?', '#', '.', ' ') },
);

export const anyText = (minLength = 0, maxLength = 40) => fc.string({ unit: anyChar, minLength, maxLength });

/** Any JSON value (bigints for integers beyond doubles). */
export const anyJson: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.bigInt({ min: -(2n ** 130n), max: 2n ** 130n }),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    anyText(),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(anyText(0, 8), tie('v'), { maxKeys: 3 }),
  ),
})).v;

/** Candidate values of `schema` within `doc` (a document with components.schemas); not all need be valid. */
export function arbitraryOf(doc: { components: { schemas: Record<string, Json> } }, schema: Json, depth = 0): fc.Arbitrary<unknown> {
  const resolve = (s: Json): Json => (s?.$ref ? { ...doc.components.schemas[s.$ref.split('/').pop()!], ...without(s, '$ref') } : s);
  const s = resolve(schema);
  if (depth > 6) return fc.constant(null);
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  for (const k of ['oneOf', 'anyOf'] as const) {
    if (Array.isArray(s[k])) return fc.oneof(...s[k].map((b: Json) => arbitraryOf(doc, { ...without(s, k), ...resolve(b) }, depth + 1)));
  }
  if (Array.isArray(s.allOf)) {
    // The first pattern is drawn from; ajv keeps the values the others allow too. A rule between
    // an object's fields (required, not, anyOf, ...) is left to ajv as well.
    const RULES = ['required', 'properties', 'not', 'anyOf', 'oneOf', 'allOf'];
    const simple = (m: Json) => Object.fromEntries(Object.entries(resolve(m)).filter(([k]) => !RULES.includes(k)));
    const merged = Object.assign({}, ...s.allOf.map(simple).reverse(), without(s, 'allOf'));
    return arbitraryOf(doc, merged, depth + 1);
  }
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (!types.length) return s.properties ? arbitraryOf(doc, { ...s, type: 'object' }, depth) : anyJson;
  if (types.length > 1) return fc.oneof(...types.map((t) => arbitraryOf(doc, { ...s, type: t }, depth)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer': {
      const min = s.minimum !== undefined ? BigInt(s.minimum) : s.exclusiveMinimum !== undefined ? BigInt(s.exclusiveMinimum) + 1n : -(2n ** 64n);
      const max = s.maximum !== undefined ? BigInt(s.maximum) : s.exclusiveMaximum !== undefined ? BigInt(s.exclusiveMaximum) - 1n : 2n ** 64n;
      const edges = fc.constantFrom(min, max, min + (max > min ? 1n : 0n));
      return fc
        .oneof(edges, fc.bigInt({ min, max }))
        .map((n) => (n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n));
    }
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true, min: s.minimum, max: s.maximum });
    case 'string': {
      const minLength = s.minLength ?? 0;
      const maxLength = Math.min(s.maxLength ?? minLength + 40, minLength + 300);
      if (s.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(Date.UTC(9999, 0)), noInvalidDate: true }).map((d) => d.toISOString());
      if (s.format === 'uri') return anyText(0, 20).map((t) => `https://example.com/${encodeURIComponent(t.replace(/[\ud800-\udfff]/g, ''))}`);
      const edges = fc.constantFrom(...[minLength, maxLength].map((n) => 'a'.repeat(n)));
      if (s.pattern) {
        let re: RegExp;
        try {
          re = new RegExp(s.pattern, 'u');
        } catch {
          return fc.oneof(edges, anyText(minLength, maxLength));
        }
        return fc.oneof({ weight: 4, arbitrary: fc.stringMatching(re, { size: 'small' }) }, edges, anyText(minLength, maxLength));
      }
      return fc.oneof({ weight: 4, arbitrary: anyText(minLength, maxLength) }, edges);
    }
    case 'array': {
      const minLength = s.minItems ?? 0;
      return fc.array(s.items ? arbitraryOf(doc, s.items, depth + 1) : anyJson, { minLength, maxLength: Math.min(s.maxItems ?? minLength + 3, minLength + 3) });
    }
    case 'object': {
      const props = Object.entries((s.properties ?? {}) as Record<string, Json>);
      const record = fc.record(Object.fromEntries(props.map(([k, v]) => [k, arbitraryOf(doc, v, depth + 1)])), {
        requiredKeys: (s.required ?? []).filter((k: string) => s.properties?.[k]),
      });
      if (s.additionalProperties === false) return record;
      const extra = s.additionalProperties && s.additionalProperties !== true ? arbitraryOf(doc, s.additionalProperties, depth + 1) : anyJson;
      return fc.tuple(record, fc.dictionary(anyText(1, 8), extra, { maxKeys: 2 })).map(([r, x]) => ({ ...x, ...r }));
    }
  }
  return anyJson;
}

function without(s: Json, key: string): Json {
  const { [key]: _, ...rest } = s;
  return rest;
}
