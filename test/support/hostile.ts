import fc from 'fast-check';
import type { App } from '../../src/app.js';
import type { Route } from '../../src/api/rest/route.js';
import type { Runtime } from '../../src/core/runtime.js';
import type { z } from 'zod';
import { isInteger } from '../../src/api/rest/fields.js';

// Hostile requests for every REST route, each invalid by construction: text the database cannot
// store (NUL, lone surrogates) in a field, a field name, a path or a query parameter; numbers that
// are not exact integers in their written form; bodies that are not JSON (wrong or no content
// type), too large, or nested thousands deep. Every one must be refused (400, 413 or 415) in the
// envelope, and change nothing. Used by test/api/rest/fuzz.test.ts and bench/fuzz.ts.

export interface Hostile {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
  kind: string;
  /** A JSON-RPC route (the bundler): it refuses what the body says in JSON-RPC, not in the envelope. */
  jsonRpc?: boolean;
}

/** The body limit the fuzzed service runs with (MAX_BODY_BYTES), so "too large" bodies stay cheap. */
export const FUZZ_MAX_BODY_BYTES = 16_384;

const BAD_TEXT = ['\u0000', 'a\u0000', '\ud800', 'x\udfff', '\udc00\ud800', 'ok\u0000\ud83d'];
const BAD_NUMBERS = ['1e-400', '5e-324', '1.5', '1e400', '-1e400', '1.0000000000000000001', '0.1', '-0.5e-1', '123456789012345678901234567890.5'];
const WRONG_TYPES = [
  'text/plain',
  'text/plain; charset=utf-8',
  'application/octet-stream',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'application/jsonx',
  '',
];

const ids: Record<string, string> = { relayer_id: 'evm-relayer', notification_id: 'hook-a', transaction_id: 'x' };
/** Body fields whose JSON is a plugin's to read (its params, its config): any number is valid there. */
const OPAQUE: Record<string, string> = { callPlugin: 'params', updatePlugin: 'config' };
const fill = (r: Route, params: Record<string, string> = {}) => r.path.replace(/\{(\w+)\}/g, (_, p: string) => params[p] ?? ids[p] ?? 'x');

/** The JSON text of `value` with the string "\u0001N\u0001" (a marker) replaced by raw number text. */
const withRaw = (value: unknown, raw: string) => JSON.stringify(value).replace('"\\u0001N\\u0001"', raw);

/** Paths to the string and integer leaves of an example, as [keys]. */
function leaves(
  v: unknown,
  path: (string | number)[] = [],
  out: { strings: (string | number)[][]; numbers: (string | number)[][] } = { strings: [], numbers: [] },
) {
  if (typeof v === 'string') out.strings.push(path);
  else if (typeof v === 'number') out.numbers.push(path);
  else if (Array.isArray(v)) v.forEach((x, i) => leaves(x, [...path, i], out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) leaves(x, [...path, k], out);
  return out;
}

function setAt(v: unknown, path: (string | number)[], to: unknown): unknown {
  if (!path.length) return to;
  const [k, ...rest] = path;
  const copy: any = Array.isArray(v) ? [...v] : { ...(v as object) };
  copy[k] = setAt(copy[k], rest, to);
  return copy;
}

const deep = (n: number, open: string, close: string, inner: string) => open.repeat(n) + inner + close.repeat(n);

/** Hostile requests for one route; null for a route that takes no input (nothing to make hostile). */
export function hostileFor(r: Route): fc.Arbitrary<Hostile> | null {
  const json = { 'content-type': 'application/json' };
  const bad = fc.constantFrom(...BAD_TEXT);
  const kinds: fc.Arbitrary<Hostile>[] = [];
  const params = Object.keys(r.pathParams);
  if (params.length) {
    kinds.push(
      fc.tuple(fc.constantFrom(...params), fc.constantFrom('%00', 'a%00b', '%ED%A0%80', '%C0%80', '%')).map(([p, v]) => ({
        method: r.method,
        path: fill(r, { [p]: v }),
        headers: r.body ? json : {},
        body: r.body ? JSON.stringify(r.body.example) : undefined,
        kind: 'path parameter',
      })),
    );
  }
  for (const q of Object.keys(r.query?.shape ?? {})) {
    const integer = isInteger(r.query!.shape[q] as z.ZodType);
    const values = integer ? ['1e-400', '1.5', '1e3', '%00', '5e-324'] : ['%00', 'a%00', '%ED%A0%80'];
    kinds.push(fc.constantFrom(...values).map((v) => ({ method: r.method, path: `${fill(r)}?${q}=${v}`, headers: {}, kind: 'query parameter' })));
  }
  if (r.body) {
    const example = r.body.example;
    const { strings, numbers: all } = leaves(example);
    const numbers = all.filter((at) => at[0] !== OPAQUE[r.id]);
    const body = (text: string, kind: string, headers: Record<string, string> = json): Hostile => ({
      method: r.method,
      path: fill(r),
      headers,
      body: text,
      kind,
      ...(r.body?.text ? { jsonRpc: true } : {}),
    });
    if (strings.length) {
      kinds.push(fc.tuple(fc.constantFrom(...strings), bad).map(([at, b]) => body(JSON.stringify(setAt(example, at, b)), 'text field')));
    }
    kinds.push(fc.tuple(bad, fc.string({ maxLength: 5 })).map(([b, s]) => body(JSON.stringify({ ...example, [s + b]: 1 }), 'field name')));
    if (numbers.length) {
      kinds.push(
        fc
          .tuple(fc.constantFrom(...numbers), fc.constantFrom(...BAD_NUMBERS))
          .map(([at, n]) => body(withRaw(setAt(example, at, '\u0001N\u0001'), n), 'number')),
      );
    }
    kinds.push(fc.constantFrom(...WRONG_TYPES).map((t) => body(JSON.stringify(example), 'content type', t ? { 'content-type': t } : {})));
    kinds.push(
      fc
        .tuple(fc.integer({ min: 2_000, max: 6_000 }), fc.constantFrom(['[', ']', '1'], ['{"a":', '}', '1'], ['[{"x":', '}]', 'null']))
        .map(([n, [o, c, i]]) => body(deep(n, o, c, i), 'deep JSON')),
    );
    kinds.push(fc.constant(body(JSON.stringify({ ...example, pad: 'x'.repeat(FUZZ_MAX_BODY_BYTES) }), 'too large')));
  }
  return kinds.length ? fc.oneof(...kinds) : null;
}

/**
 * How a refusal must look: 400/413/415 in the error envelope; on a JSON-RPC route, a body it
 * reads is refused by a 200 whose every answer is a JSON-RPC error. Returns the problem, or null.
 */
export function refusalProblem(status: number, contentType: string | null, text: string, jsonRpc = false): string | null {
  if (jsonRpc && status === 200) {
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      return 'not JSON';
    }
    const answers = Array.isArray(body) ? body : [body];
    const refused = answers.every((a) => a?.jsonrpc === '2.0' && typeof a.error?.code === 'number' && typeof a.error.message === 'string' && !('result' in a));
    return refused ? null : 'not a JSON-RPC error';
  }
  if (![400, 413, 415].includes(status)) return `status ${status}`;
  if (!contentType?.startsWith('application/json')) return `content type ${contentType}`;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  if (body.success !== false || body.data !== null || typeof body.message !== 'string' || typeof body.error !== 'string') return 'not the error envelope';
  if (JSON.stringify(body.metadata) !== '{"logs":[],"traces":[]}') return 'no metadata';
  return null;
}

/** Row counts and a digest of every table the routes write. */
export async function storedState(rt: Pick<Runtime, 'db'>): Promise<string> {
  const rows = await rt.db.prisma.$queryRawUnsafe<{ f: string }[]>(`
    SELECT concat_ws('|',
      (SELECT count(*) || ':' || md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM relayers t),
      (SELECT count(*) || ':' || md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM transactions t),
      (SELECT count(*) || ':' || md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM notifications t),
      (SELECT count(*) || ':' || md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM deliveries t)) AS f`);
  return rows[0].f;
}

/**
 * Sends `cases` hostile requests (batches of `concurrency` at once, in process) and checks each
 * answer and, after each batch, that nothing was stored. Returns the failures (at most 20).
 */
export async function runHostile(o: {
  app: App;
  rt: Pick<Runtime, 'db'>;
  apiKey: string;
  routes: Route[];
  cases: number;
  concurrency?: number;
  seed?: number;
}): Promise<{ failures: string[]; byKind: Record<string, number>; seed: number }> {
  const concurrency = o.concurrency ?? 25;
  const arb = fc.oneof(...o.routes.flatMap((r) => hostileFor(r) ?? []));
  const failures: string[] = [];
  const byKind: Record<string, number> = {};
  let before = await storedState(o.rt);
  const batches = Math.ceil(o.cases / concurrency);
  const seed = o.seed ?? Date.now() % 1_000_000;
  for (let i = 0; i < batches; i++) {
    // Drawn batch by batch (deep and large bodies are tens of KB each).
    const batch = fc.sample(arb, { numRuns: concurrency, seed: seed + i });
    await Promise.all(
      batch.map(async (h) => {
        byKind[h.kind] = (byKind[h.kind] ?? 0) + 1;
        const res = await o.app.fetch(
          new Request(`http://relayer.test${h.path}`, { method: h.method, headers: { authorization: `Bearer ${o.apiKey}`, ...h.headers }, body: h.body }),
        );
        const text = await res.text();
        const problem = refusalProblem(res.status, res.headers.get('content-type'), text, h.jsonRpc);
        if (problem && failures.length < 20)
          failures.push(`${h.kind}: ${h.method} ${h.path} -> ${problem}: ${text.slice(0, 200)} (body ${JSON.stringify(h.body?.slice(0, 120))})`);
      }),
    );
    const after = await storedState(o.rt);
    if (after !== before && failures.length < 20) failures.push(`a batch of refused requests changed the database`);
    before = after;
  }
  return { failures, byKind, seed };
}
