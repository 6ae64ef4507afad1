import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringifyJson } from '../../src/lib/json.js';
import type { z } from 'zod';
import { jsonSchemaOf } from '../../src/api/rest/openapi.js';
import type { Route } from '../../src/api/rest/route.js';
import { FUZZ_MAX_BODY_BYTES, runHostile } from '../support/hostile.js';
import type { TestService } from '../support/service.js';
import { seedTransaction, SOLANA_RELAYER, startRestService, STELLAR_RELAYER } from '../support/rest.js';
import { routes } from '../support/families.js';

// Thousands of random and malformed requests at every route: never a 5xx, always the envelope,
// and a refused request (4xx) changes nothing in the database.

const RUNS_PER_ROUTE = 250;
/** Hostile cases (test/support/hostile.ts); with the random ones above, over 10,000 per run. */
const HOSTILE_CASES = 10_000;

/** One fingerprint of every row the routes can touch (a single query). */
async function fingerprint(svc: TestService): Promise<string> {
  const rows = await svc.rt.db.prisma.$queryRawUnsafe<{ f: string }[]>(`
    SELECT concat_ws('|',
      (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM relayers t),
      (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM transactions t),
      (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM notifications t),
      (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t.id), '')) FROM deliveries t)) AS f`);
  return rows[0].f;
}

function checkEnvelope(status: number, text: string) {
  const body = JSON.parse(text);
  expect(body.metadata).toEqual({ logs: [], traces: [] });
  if (status >= 400) {
    expect(body).toMatchObject({ success: false, data: null });
    expect(typeof body.message).toBe('string');
    expect(typeof body.error).toBe('string');
  } else {
    expect(body.success).toBe(true);
    expect(body.error).toBeNull();
    expect('data' in body).toBe(true);
  }
}

const scalar = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.bigInt({ min: -(1n << 140n), max: 1n << 140n }),
);
const jsonish: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    scalar,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 12 }), tie('value'), { maxKeys: 4 }),
  ),
})).value;

type Json = Record<string, any>;
/** A body field's JSON Schema as the document shows it. */
const fieldSchema = (r: Route, name: string): Json => jsonSchemaOf(r.body!.schema.shape[name] as z.ZodType, {});
const kindOf = (j: Json): string => {
  const t = (Array.isArray(j.type) ? j.type : j.type ? [j.type] : []).filter((x: string) => x !== 'null');
  return j.$ref ? 'enum' : (t[0] ?? 'any');
};
const nullable = (j: Json) => (Array.isArray(j.type) && j.type.includes('null')) || (j.oneOf ?? []).some((x: Json) => x.type === 'null');

/** A value of the wrong JSON type for a field, so a body carrying it is invalid by construction. */
function wrongFor(f: Json): fc.Arbitrary<unknown> {
  const str = fc.string({ maxLength: 10 });
  const obj = fc.dictionary(fc.string({ maxLength: 5 }), scalar, { maxKeys: 2 });
  const arr = fc.array(scalar, { maxLength: 3 });
  const nul = nullable(f) ? [] : [fc.constant(null)];
  switch (kindOf(f)) {
    case 'integer':
      return fc.oneof(
        str,
        fc.double().filter((d) => !Number.isInteger(d)),
        fc.boolean(),
        arr,
        obj,
        ...nul,
      );
    case 'enum':
      return fc.oneof(fc.integer(), fc.boolean(), arr, obj, fc.constant('not-a-member'), ...nul);
    case 'string':
      return fc.oneof(fc.integer(), fc.boolean(), arr, obj, ...nul);
    case 'boolean':
      return fc.oneof(str, fc.integer(), arr, obj, ...nul);
    case 'object':
      return fc.oneof(str, fc.integer(), fc.boolean(), arr, ...nul);
    case 'array':
      return fc.oneof(str, fc.integer(), fc.boolean(), obj, ...nul);
    default:
      return fc.constant(undefined);
  }
}

const ids = (_r: Route, name: string) => {
  const known: Record<string, string[]> = {
    relayer_id: ['evm-relayer', SOLANA_RELAYER, STELLAR_RELAYER],
    notification_id: ['hook-a', 'hook-b'],
    transaction_id: [],
    signer_id: ['dev-signer'],
    network_id: ['evm:localnet', 'solana:devnet'],
    nonce: ['1', '2', '-1', 'abc'],
    api_key_id: [],
    plugin_id: [],
  };
  return fc.oneof(
    fc.constantFrom(...(known[name].length ? known[name] : ['x'])),
    fc.string({ maxLength: 12 }).map(encodeURIComponent),
    fc.constantFrom('%', '%E0%A4%A', '..', 'a b'),
  );
};

const examples = (r: Route): Record<string, unknown>[] =>
  r.body ? [r.body.example, ...(r.id === 'sendTransaction' ? [{ transaction: 'AAAA' }, { network: 'testnet', operations: [{ type: 'payment' }] }] : [])] : [];

/** Requests for one route: raw text, random JSON, and valid examples with one field made invalid. */
function requests(r: Route) {
  const path = fc
    .record(Object.fromEntries(Object.keys(r.pathParams).map((p) => [p, ids(r, p)])))
    .map((params) => r.path.replace(/\{(\w+)\}/g, (_, p: string) => String((params as Record<string, string>)[p])));
  const queryKeys = [...Object.keys(r.query ?? {}), 'extra'];
  const queryValue = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.integer({ min: -5, max: 200 }).map(String),
    fc.constantFrom('1e3', '1.0', '99999999999999999999', 'pending', 'lost', ''),
  );
  const query = fc
    .array(fc.tuple(fc.constantFrom(...queryKeys), queryValue), { maxLength: 3 })
    .map((pairs) => (pairs.length ? `?${new URLSearchParams(pairs).toString()}` : ''));
  const slash = fc.boolean().map((b) => (b ? '/' : ''));

  const fieldNames = Object.keys(r.body?.json ? {} : (r.body?.schema.shape ?? {})).filter((n) => kindOf(fieldSchema(r, n)) !== 'any');
  const broken: fc.Arbitrary<{ body: string; invalid: boolean }>[] = [
    fc.string({ maxLength: 40 }).map((s) => ({ body: s, invalid: true })),
    jsonish.map((v) => ({ body: stringifyJson(v), invalid: false })),
  ];
  if (r.body) {
    if (fieldNames.length) {
      broken.push(
        fc
          .tuple(fc.constantFrom(...examples(r)), fc.constantFrom(...fieldNames))
          .chain(([ex, name]) => wrongFor(fieldSchema(r, name)).map((bad) => ({ body: stringifyJson({ ...ex, [name]: bad }), invalid: true }))),
      );
    }
    broken.push(
      fc
        .tuple(
          fc.constantFrom(...examples(r)),
          fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !(k in r.body!.schema.shape)),
          scalar,
        )
        .map(([ex, key, v]) => ({ body: stringifyJson({ ...ex, [key]: v }), invalid: true })),
    );
  }
  const body = r.body ? fc.oneof(...broken) : fc.constant({ body: '', invalid: false });
  const headers = fc.option(
    fc.string({ unit: 'binary-ascii', maxLength: 300 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
    { nil: undefined },
  );
  return fc.record({ path, query, slash, body, idempotencyKey: headers });
}

// Readiness answers its own document (503 when not ready): test/e2e/sdk/entities.test.ts covers it.
const fuzzed = routes.filter((x) => !x.respond);

describe('REST surface under random and malformed requests', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({
      env: { RATE_LIMIT_BURST_SIZE: '1000000', RATE_LIMIT_REQUESTS_PER_SECOND: '1000000', MAX_BODY_BYTES: String(FUZZ_MAX_BODY_BYTES) },
    });
    await svc.request('POST', '/api/v1/notifications', { id: 'hook-a', url: 'https://example.com/a', signing_key: 'k'.repeat(40) });
    await svc.request('POST', '/api/v1/notifications', { id: 'hook-b', url: 'https://example.com/b' });
    for (let i = 0; i < 3; i++) await seedTransaction(svc.rt);
  });
  afterAll(() => svc?.stop());

  it.each(fuzzed.map((r) => [`${r.method} ${r.path}`, r] as const))('%s: never a 5xx, always the envelope, a refusal changes nothing', async (_, r) => {
    let before = await fingerprint(svc);
    await fc.assert(
      fc.asyncProperty(requests(r), async (req) => {
        const headers: Record<string, string> = {};
        if (req.idempotencyKey !== undefined && r.headers) headers['idempotency-key'] = req.idempotencyKey;
        const res = await svc.request(r.method, `${req.path}${req.slash}${req.query}`, r.body ? req.body.body : undefined, headers);
        const text = await res.text();
        expect(res.status, text).toBeLessThan(500);
        // The JSON-RPC passthrough answers the JSON-RPC response itself.
        if (r.raw && res.status === 200) JSON.parse(text);
        else checkEnvelope(res.status, text);
        const after = await fingerprint(svc);
        if (res.status >= 400) expect(after, `${res.status} ${text}`).toBe(before);
        // A body made invalid on purpose is refused (a 404 for an unknown id may come first); a
        // JSON-RPC route (the bundler) refuses what its body says with JSON-RPC errors.
        if (req.body.invalid && r.body?.text && res.status === 200) {
          const answers = [JSON.parse(text)].flat();
          expect(
            answers.every((a) => typeof a.error?.code === 'number'),
            text,
          ).toBe(true);
          expect(after, text).toBe(before);
        } else if (req.body.invalid && r.body) expect([400, 404, 405]).toContain(res.status);
        before = after;
      }),
      { numRuns: RUNS_PER_ROUTE },
    );
  });

  // NUL bytes, lone surrogates, inexact numbers, wrong content types, deep and large bodies at every
  // route, fired 25 at a time: all refused in the envelope, nothing stored (checked per batch).
  it(`${HOSTILE_CASES} hostile requests over every route: all refused (400, 413, 415) in the envelope, nothing stored`, async () => {
    const { failures, byKind, seed } = await runHostile({ app: svc.app, rt: svc.rt, apiKey: svc.apiKey, routes, cases: HOSTILE_CASES });
    expect(failures, `seed ${seed}`).toEqual([]);
    expect(Object.keys(byKind).sort()).toEqual([
      'content type',
      'deep JSON',
      'field name',
      'number',
      'path parameter',
      'query parameter',
      'text field',
      'too large',
    ]);
  }, 600_000);

  it('unknown paths and methods under /api/v1 answer 404 or 405 in the envelope', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
        fc.array(
          fc.oneof(fc.constantFrom('relayers', 'transactions', 'notifications', 'evm-relayer', ''), fc.string({ maxLength: 6 }).map(encodeURIComponent)),
          { maxLength: 5 },
        ),
        async (method, segments) => {
          const res = await svc.request(method, `/api/v1/${segments.join('/')}`, method === 'GET' || method === 'DELETE' ? undefined : '{}');
          const text = await res.text();
          expect(res.status, text).toBeLessThan(500);
          checkEnvelope(res.status, text);
        },
      ),
      { numRuns: 300 },
    );
  });
});
