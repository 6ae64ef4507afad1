import { getIntrospectionQuery, parse, print, specifiedRules, validate } from 'graphql';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives';
import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rateLimitedRootFields } from '../../../src/api/graphql/rate-limit.js';
import { parseEnv } from '../../../src/config/env.js';
import type { TestService } from '../../support/service.js';
import { RECEIVER, startRestService } from '../../support/rest.js';
import { routes, schema } from '../../support/families.js';

const limits = parseEnv({}).graphqlLimits;

/** `{ relayer { notification { relayers { notification { … { id } } } } } }`, `levels` fields between relayer and id: depth levels + 2. */
const nested = (levels: number) =>
  `{ relayer(id: "evm-relayer") { ${Array.from({ length: levels }, (_, i) => (i % 2 ? 'relayers {' : 'notification {')).join(' ')} id ${'}'.repeat(levels)} } }`;
const README_QUERY = `{
  relayer(id: "devnet-relayer") {
    id address paused systemDisabled
    notification { id url hasSigningKey }
    transactions(perPage: 5) { items { id status hash nonce } pagination { totalItems } }
  }
}`;

async function refused(svc: TestService, query: string, limit: RegExp) {
  const res = await svc.request('POST', '/graphql', { query });
  const body = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(400);
  expect(body.data).toBeUndefined();
  expect(body.errors.map((e: { message: string }) => e.message).join('\n')).toMatch(limit);
  expect(body.errors[0].extensions.code).toBe('BAD_REQUEST');
}

describe('default limits admit every document the service itself uses', () => {
  const documents: [string, string][] = [
    ...routes.map((r): [string, string] => [`REST ${r.method} ${r.path}`, print(r.document)]),
    ['README query', README_QUERY],
    [
      'introspection',
      getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true }),
    ],
  ];
  it.each(documents)('%s', (_name, source) => {
    const parser = new MaxTokensParserWLexer(source, { n: limits.tokens });
    const document = parser.parseDocument();
    expect(Buffer.byteLength(source)).toBeLessThanOrEqual(limits.bytes);
    const errors = validate(schema, document, [
      ...specifiedRules,
      maxDepthRule({ n: limits.depth }),
      maxAliasesRule({ n: limits.aliases }),
      maxDirectivesRule({ n: limits.directives }),
      costLimitRule({ maxCost: limits.cost }),
    ]);
    expect(errors.map((e) => e.message)).toEqual([]);
  });
});

describe('rateLimitedRootFields', () => {
  it('counts each alias of a rate-limited root field, follows fragments and @skip, ignores unmarked fields', () => {
    const doc = parse(`mutation M($no: Boolean!) {
      a: sendTransaction(relayerId: "r", input: {}) { id }
      b: sendTransaction(relayerId: "r", input: {}) { id }
      ...More
      c: sendTransaction(relayerId: "r", input: {}) @skip(if: $no) { id }
      deleteNotification(id: "n") { id }
    }
    fragment More on Mutation { d: updateRelayer(id: "r", input: {}) { id } }`);
    expect(rateLimitedRootFields(schema, doc, 'M', { no: true })).toBe(3);
    expect(rateLimitedRootFields(schema, doc, 'M', { no: false })).toBe(4);
    expect(rateLimitedRootFields(schema, parse('{ relayers { items { id } } relayerTransactions(relayerId: "r") { items { id } } }'))).toBe(1);
  });
});

describe('GraphQL cost limits over HTTP', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService();
  });
  afterAll(() => svc?.stop());

  it('refuses a deep document (the nested relayer/notification loop) with a 400 naming the depth limit', async () => {
    await refused(svc, nested(limits.depth), /^Syntax Error: Query depth limit of 8 exceeded, found 10\.$/m);
    // The deepest the limit allows still runs, its answer bounded: with the three relayers on one
    // notification, relayers³ = 27 relayers at the bottom (the loop grew without bound).
    const created = await svc.gql('mutation { createNotification(input: { id: "hook", url: "https://example.com/hook" }) { id } }');
    expect(created.errors).toBeUndefined();
    for (const id of ['evm-relayer', 'solana-relayer', 'stellar-relayer']) {
      expect((await svc.gql(`mutation { updateRelayer(id: "${id}", input: { notificationId: "hook" }) { id } }`)).errors).toBeUndefined();
    }
    const res = await svc.request('POST', '/graphql', { query: nested(limits.depth - 2) });
    const text = await res.text();
    expect(res.status).toBe(200);
    const { data } = JSON.parse(text);
    const bottom = data.relayer.notification.relayers.flatMap((r: any) => r.notification.relayers).flatMap((r: any) => r.notification.relayers);
    expect(bottom).toHaveLength(27);
    expect(new Set(bottom.map((r: { id: string }) => r.id))).toEqual(new Set(['evm-relayer', 'solana-relayer', 'stellar-relayer']));
    expect(text.length).toBeLessThan(5_000);
  });

  it('refuses many aliases (aliased list reads) with a 400 naming the alias limit', async () => {
    const wide = Array.from({ length: 5000 }, (_, i) => `r${i}: relayers { items { id } }`).join(' ');
    // 5,000 aliases are over the size limit before they are parsed.
    await refused(svc, `{ ${wide} }`, /^Syntax Error: Document size limit of 65536 bytes exceeded, found 163893\.$/m);
    const sixteen = Array.from({ length: 16 }, (_, i) => `r${i}: relayers { items { id } }`).join(' ');
    await refused(svc, `{ ${sixteen} }`, /^Syntax Error: Aliases limit of 15 exceeded, found 16\.$/m);
  });

  it('refuses a wide, costly document with a 400 naming the cost limit', async () => {
    const fields = 'id name network address paused systemDisabled signerId notificationId createdAt updatedAt';
    const tx = 'id status hash nonce from to value gasPrice createdAt sentAt confirmedAt statusReason';
    const wide = Array.from({ length: 12 }, (_, i) => `r${i}: relayers { items { ${fields} transactions { items { ${tx} } } } }`).join(' ');
    await refused(svc, `{ ${wide} }`, /^Syntax Error: Query Cost limit of 1000 exceeded, found \d+/m);
  });

  it('refuses many directives with a 400 naming the directive limit', async () => {
    const fields = Array.from({ length: 51 }, (_, i) => `f${i}: id @include(if: true)`).join(' ');
    const res = await svc.request('POST', '/graphql', { query: `{ relayer(id: "evm-relayer") { ${fields} } }` });
    expect(res.status).toBe(400);
    const messages = (await res.json()).errors.map((e: { message: string }) => e.message);
    expect(messages).toContain('Syntax Error: Directives limit of 50 exceeded, found 51.');
  });

  it('refuses an oversized document: tokens, bytes of the document, bytes of the body', async () => {
    await refused(svc, `{ relayers { items { ${'id '.repeat(1000)} } } }`, /^Syntax Error: Token limit of 1000 exceeded\.$/m);
    const padded = `{ relayers { items { id } } } # ${'x'.repeat(limits.bytes)}`;
    await refused(svc, padded, new RegExp(`^Syntax Error: Document size limit of 65536 bytes exceeded, found ${Buffer.byteLength(padded)}\\.$`, 'm'));
    const big = await svc.request('POST', '/graphql', { query: '{ relayers { items { id } } }', variables: { pad: 'x'.repeat(1 << 20) } });
    expect(big.status).toBe(413);
    expect((await big.json()).errors[0].message).toBe('Payload Too Large: the body is larger than 1048576 bytes');
    // Chunked, without a Content-Length.
    const chunks = new ReadableStream({
      start(c) {
        for (let i = 0; i < 20; i++) c.enqueue(new TextEncoder().encode(i === 0 ? '{"query":"{ relayers { items { id } } }","pad":"' : 'x'.repeat(100_000)));
        c.close();
      },
    });
    const chunked = await svc.app.fetch(
      new Request('http://relayer.test/graphql', {
        method: 'POST',
        headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' },
        body: chunks,
        duplex: 'half',
      } as RequestInit),
    );
    expect(chunked.status).toBe(413);
  });

  it('answers a refused document with 400 whatever the Accept header says', async () => {
    const query = nested(limits.depth);
    for (const accept of ['application/json', 'application/graphql-response+json', '*/*']) {
      const res = await svc.request('POST', '/graphql', { query }, { accept });
      expect(res.status, accept).toBe(400);
    }
    const get = await svc.request('GET', `/graphql?query=${encodeURIComponent(query)}`, undefined, { accept: 'application/json' });
    expect(get.status).toBe(400);
  });

  it('lets introspection (what GraphiQL sends) and the README query through with the token', async () => {
    const introspection = await svc.gql(
      getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, schemaDescription: true, inputValueDeprecation: true }),
    );
    expect(introspection.errors).toBeUndefined();
    expect(introspection.data.__schema.queryType.name).toBe('Query');
    const readme = await svc.gql(README_QUERY.replace('devnet-relayer', 'evm-relayer'));
    expect(readme.errors).toBeUndefined();
    expect(readme.data.relayer.transactions.pagination.totalItems).toBe(0);
  });

  it('runs every REST read route as before', async () => {
    for (const path of ['/api/v1/relayers', '/api/v1/relayers/evm-relayer', '/api/v1/relayers/evm-relayer/transactions', '/api/v1/notifications']) {
      expect((await svc.request('GET', path)).status, path).toBe(200);
    }
  });
});

describe('aliases against the rate limit', () => {
  let svc: TestService;
  const BURST = 40;
  beforeAll(async () => {
    // Nothing refills during the test; the alias limit is raised so the rate limit is what answers.
    svc = await startRestService({
      env: {
        RATE_LIMIT_BURST_SIZE: String(BURST),
        RATE_LIMIT_REQUESTS_PER_SECOND: '0.01',
        GRAPHQL_MAX_ALIASES: '200',
        GRAPHQL_MAX_TOKENS: '5000',
        GRAPHQL_MAX_COST: '100000',
      },
    });
  });
  afterAll(() => svc?.stop());

  const sends = (n: number) =>
    `mutation { ${Array.from({ length: n }, (_, i) => `s${i}: sendTransaction(relayerId: "evm-relayer", input: { to: "${RECEIVER}", value: "${i + 1}", gasLimit: 21000 }) { id }`).join(' ')} }`;
  const list = (n: number) =>
    `{ ${Array.from({ length: n }, (_, i) => `l${i}: relayerTransactions(relayerId: "evm-relayer") { pagination { totalItems } }`).join(' ')} }`;
  const stored = () => svc.rt.db.prisma.transaction.count();

  it('counts each aliased list read: 30 aliases take 30 of the 40 tokens, then 11 are refused whole', async () => {
    const first = await svc.gql(list(30));
    expect(first.errors).toBeUndefined();
    expect(Object.keys(first.data)).toHaveLength(30);
    const res = await svc.request('POST', '/graphql', { query: list(11) });
    expect(res.status).toBe(429);
    const body = await res.json();
    expect(body.errors).toEqual([expect.objectContaining({ message: 'Too Many Requests', extensions: { code: 'RATE_LIMITED' } })]);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    // 10 tokens are left: 10 aliases pass, then a single read is refused.
    expect((await svc.gql(list(10))).errors).toBeUndefined();
    expect((await svc.request('POST', '/graphql', { query: list(1) })).status).toBe(429);
  });

  it('refuses an operation with more rate-limited fields than the bucket holds with a 400: waiting would not help', async () => {
    const res = await svc.request('POST', '/graphql', { query: list(BURST + 1) });
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].extensions).toEqual({
      code: 'BAD_REQUEST',
      detail: `the operation runs 41 rate-limited fields; at most 40 (RATE_LIMIT_BURST_SIZE) fit in one operation`,
    });
  });

  it('aliased sendTransaction with a spent budget: refused with the envelope, nothing stored', async () => {
    const before = await stored();
    const res = await svc.request('POST', '/graphql', { query: sends(20) });
    expect(res.status).toBe(429);
    const body = await res.json();
    expect(body.data).toBeUndefined();
    expect(body.errors).toEqual([expect.objectContaining({ message: 'Too Many Requests', extensions: { code: 'RATE_LIMITED' } })]);
    // 150 aliases could never fit in this bucket of 40.
    const many = await svc.request('POST', '/graphql', { query: sends(150) });
    expect(many.status).toBe(400);
    expect((await many.json()).errors[0].extensions.detail).toMatch(/runs 150 rate-limited fields; at most 40/);
    expect(await stored()).toBe(before);
    // The REST send route shares the budget.
    const rest = await svc.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 1 });
    expect(rest.status).toBe(429);
    expect((await rest.json()).message).toBe('Too Many Requests');
  });
});

describe('a rate-limited field below the root', () => {
  let svc: TestService;
  const BURST = 20;
  beforeAll(async () => {
    svc = await startRestService({ env: { RATE_LIMIT_BURST_SIZE: String(BURST), RATE_LIMIT_REQUESTS_PER_SECOND: '0.01' } });
  });
  afterAll(() => svc?.stop());

  it('takes a token each time it resolves: a list of relayers with their transactions costs one a relayer', async () => {
    const nestedList = '{ relayers { items { id transactions(perPage: 1) { pagination { totalItems } } } } }';
    const first = await svc.gql(nestedList);
    expect(first.errors).toBeUndefined();
    const relayers = first.data.relayers.items.length;
    expect(relayers).toBeGreaterThan(1);
    const root = rateLimitedRootFields(schema, parse(nestedList));
    // What is left, spent one root read at a time: a token each until the bucket is empty.
    const oneRead = '{ relayerTransactions(relayerId: "evm-relayer") { pagination { totalItems } } }';
    let reads = 0;
    while ((await svc.request('POST', '/graphql', { query: oneRead })).status === 200) reads++;
    expect(reads).toBe(BURST - root - relayers);
  });
});

describe('150 aliased sendTransaction draw 150 tokens', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({
      anvil: true,
      env: {
        RATE_LIMIT_BURST_SIZE: '200',
        RATE_LIMIT_REQUESTS_PER_SECOND: '0.01',
        GRAPHQL_MAX_ALIASES: '200',
        GRAPHQL_MAX_TOKENS: '5000',
        GRAPHQL_MAX_COST: '100000',
      },
    });
  });
  afterAll(() => svc?.stop());

  const sends = (n: number, from = 0) =>
    `mutation { ${Array.from({ length: n }, (_, i) => `s${i}: sendTransaction(relayerId: "evm-relayer", input: { to: "${RECEIVER}", value: "${from + i + 1}", gasLimit: 21000 }) { id }`).join(' ')} }`;

  it('sends 150 in one request out of a budget of 200, then refuses the next 51 whole and takes 50', async () => {
    const first = await svc.gql(sends(150));
    expect(first.errors).toBeUndefined();
    expect(Object.keys(first.data)).toHaveLength(150);
    expect(await svc.rt.db.prisma.transaction.count()).toBe(150);
    const over = await svc.request('POST', '/graphql', { query: sends(51, 150) });
    expect(over.status).toBe(429);
    expect(await svc.rt.db.prisma.transaction.count()).toBe(150);
    const rest = await svc.gql(sends(50, 150));
    expect(rest.errors).toBeUndefined();
    expect(await svc.rt.db.prisma.transaction.count()).toBe(200);
  });
});
