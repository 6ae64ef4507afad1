import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type App, createApp } from '../../../src/app.js';
import { API_KEY, type TestService } from '../../support/service.js';
import { seedTransaction, startRestService } from '../../support/rest.js';

// /graphql answers JSON posts of queries and mutations on a direct path (src/api/graphql/post.ts)
// and everything else through yoga. Each request below goes to the service's app and to an app on
// the same runtime that sends every request through yoga: the two answers must be the same bytes.

interface Ask {
  name: string;
  body: string;
  headers?: Record<string, string>;
  /** Which path the service's app takes. */
  path: 'direct' | 'yoga';
}

const post = (query: string, variables?: unknown, operationName?: string) => JSON.stringify({ query, variables, operationName });
const TX_FIELDS = 'id relayerId status createdAt hash nonce value gasLimit maxFeePerGas networkData';

function asks(txId: string): Ask[] {
  const byId = `query Tx($r: ID!, $id: ID!) { transaction(relayerId: $r, id: $id) { ${TX_FIELDS} } }`;
  return [
    { name: 'a read by id', body: post(byId, { r: 'evm-relayer', id: txId }), path: 'direct' },
    {
      name: 'a list with its total',
      body: post(`{ relayerTransactions(relayerId: "evm-relayer", perPage: 2) { items { ${TX_FIELDS} } pagination { totalItems currentPage } } }`),
      path: 'direct',
    },
    {
      name: 'nested relayer data',
      body: post('{ relayers { items { id network address paused transactions(perPage: 2) { items { id status } } } } }'),
      path: 'direct',
    },
    { name: 'a transaction that is not there', body: post(byId, { r: 'evm-relayer', id: 'nope' }), path: 'direct' },
    { name: 'a relayer that is not there', body: post(byId, { r: 'nope', id: txId }), path: 'direct' },
    {
      name: 'a variable of the wrong type',
      body: post('query ($p: Int) { relayerTransactions(relayerId: "evm-relayer", perPage: $p) { items { id } } }', { p: 'ten' }),
      path: 'direct',
    },
    { name: 'a required variable missing', body: post(byId, { r: 'evm-relayer' }), path: 'direct' },
    { name: 'a NUL byte in a variable', body: post(byId, { r: 'evm-relayer', id: 'a\u0000b' }), path: 'direct' },
    {
      name: 'an exact integer past 2^53',
      body: post('query ($p: Int) { relayerTransactions(relayerId: "evm-relayer", perPage: $p) { items { id } } }', { p: 0 }).replace(
        '"p":0',
        '"p":9007199254740993',
      ),
      path: 'direct',
    },
    {
      name: 'operationName picking one of two',
      body: post(`query A { relayers { items { id } } } query B { relayer(id: "evm-relayer") { id name } }`, undefined, 'B'),
      path: 'direct',
    },
    { name: '__typename', body: post('{ __typename }'), path: 'direct' },
    { name: 'introspection', body: post('{ __schema { queryType { name } } }'), path: 'direct' },
    { name: 'a mutation that fails', body: post('mutation { deleteRelayer(id: "nope") }'), path: 'direct' },
    {
      name: 'Accept: application/graphql-response+json',
      body: post(byId, { r: 'evm-relayer', id: 'nope' }),
      headers: { accept: 'application/graphql-response+json' },
      path: 'direct',
    },
    { name: 'Accept: */*', body: post('{ __typename }'), headers: { accept: '*/*' }, path: 'direct' },
    {
      name: 'Accept listing both',
      body: post('{ __typename }'),
      headers: { accept: 'application/graphql-response+json, application/json;q=0.9' },
      path: 'direct',
    },
    { name: 'Accept: application/json; charset=latin1', body: post('{ __typename }'), headers: { accept: 'application/json; charset=latin1' }, path: 'yoga' },
    { name: 'Accept: text/event-stream', body: post('{ __typename }'), headers: { accept: 'text/event-stream' }, path: 'yoga' },
    { name: 'Accept: application/xml', body: post('{ __typename }'), headers: { accept: 'application/xml' }, path: 'yoga' },
    { name: 'a cross-origin request', body: post('{ __typename }'), headers: { origin: 'https://elsewhere.example' }, path: 'yoga' },
    { name: 'a syntax error', body: post('{ relayers { '), path: 'yoga' },
    { name: 'an unknown field', body: post('{ relayerz { id } }'), path: 'yoga' },
    {
      name: 'a document over the depth limit',
      body: post(`{ relayer(id: "evm-relayer") { ${'notification { relayers { '.repeat(8)} id ${'} } '.repeat(8)} } }`),
      path: 'yoga',
    },
    { name: 'an unknown operationName', body: post('query A { __typename }', undefined, 'B'), path: 'yoga' },
    { name: 'two operations, no name', body: post('query A { __typename } query B { __typename }'), path: 'yoga' },
    // (Accept: */* would open an event stream that never ends.)
    {
      name: 'a subscription',
      body: post('subscription { transactionUpdated(relayerId: "evm-relayer") { id } }'),
      headers: { accept: 'application/json' },
      path: 'yoga',
    },
    { name: 'an unknown parameter', body: JSON.stringify({ query: '{ __typename }', foo: 1 }), path: 'yoga' },
    { name: 'extensions', body: JSON.stringify({ query: '{ __typename }', extensions: { persistedQuery: { version: 1, sha256Hash: 'ab' } } }), path: 'yoga' },
    { name: 'query not a string', body: JSON.stringify({ query: 12 }), path: 'yoga' },
    { name: 'no query', body: JSON.stringify({ variables: {} }), path: 'yoga' },
    { name: 'variables an array', body: JSON.stringify({ query: '{ __typename }', variables: [1] }), path: 'yoga' },
    { name: 'invalid JSON', body: '{"query": ', path: 'direct' },
    { name: 'an array body', body: '[{"query": "{ __typename }"}]', path: 'direct' },
    { name: 'text/plain', body: post('{ __typename }'), headers: { 'content-type': 'text/plain' }, path: 'direct' },
  ];
}

// Headers that differ between any two responses.
const VARYING = new Set(['x-request-id', 'date']);
const headersOf = (res: Response) => [...res.headers].filter(([k]) => !VARYING.has(k)).sort(([a], [b]) => a.localeCompare(b));

async function answer(app: App, ask: Ask) {
  const res = await app.fetch(
    new Request('http://relayer.test/graphql', {
      method: 'POST',
      body: ask.body,
      headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...ask.headers },
    }),
  );
  return { status: res.status, headers: headersOf(res), body: await res.text() };
}

describe('the direct /graphql path answers as yoga does', () => {
  let svc: TestService;
  let yogaApp: App;
  let txId: string;

  beforeAll(async () => {
    svc = await startRestService({ env: { RATE_LIMIT_BURST_SIZE: '100000', RATE_LIMIT_REQUESTS_PER_SECOND: '100000' } });
    yogaApp = createApp(svc.rt, API_KEY, { yogaOnly: true });
    for (let i = 0; i < 3; i++) txId = (await seedTransaction(svc.rt)).id;
  });
  afterAll(() => svc?.stop());

  it('for every request of the list, on the path the list names', async () => {
    for (const ask of asks(txId)) {
      const before = { ...svc.app.graphqlAnswered };
      const direct = await answer(svc.app, ask);
      const viaYoga = await answer(yogaApp, ask);
      expect(direct, ask.name).toEqual(viaYoga);
      const took = svc.app.graphqlAnswered.direct > before.direct ? 'direct' : svc.app.graphqlAnswered.yoga > before.yoga ? 'yoga' : 'neither';
      expect(took, ask.name).toBe(ask.path === 'direct' && /JSON|array body|text\/plain/.test(ask.name) ? 'neither' : ask.path);
    }
    expect(yogaApp.graphqlAnswered.direct).toBe(0);
  });

  it('reads of a cached document see new data', async () => {
    const query = post('{ relayerTransactions(relayerId: "evm-relayer") { pagination { totalItems } } }');
    const total = async () =>
      JSON.parse((await answer(svc.app, { name: 'total', body: query, path: 'direct' })).body).data.relayerTransactions.pagination.totalItems;
    const before = await total();
    await seedTransaction(svc.rt);
    expect(await total()).toBe(before + 1);
  });
});

describe('the rate limit on the direct path', () => {
  let svc: TestService;
  let yogaApp: App;
  beforeAll(async () => {
    svc = await startRestService({ env: { RATE_LIMIT_BURST_SIZE: '2', RATE_LIMIT_REQUESTS_PER_SECOND: '0.01' } });
    yogaApp = createApp(svc.rt, API_KEY, { yogaOnly: true });
  });
  afterAll(() => svc?.stop());

  it('spends the same budget and refuses as yoga does, 429 with Retry-After', async () => {
    const list = { name: 'list', body: post('{ relayerTransactions(relayerId: "evm-relayer") { items { id } } }'), path: 'direct' as const };
    expect((await answer(svc.app, list)).status).toBe(200);
    expect((await answer(yogaApp, list)).status).toBe(200);
    const direct = await answer(svc.app, list);
    const viaYoga = await answer(yogaApp, list);
    expect(direct.status, JSON.stringify(direct)).toBe(429);
    expect(direct).toEqual(viaYoga);
    expect(direct.headers.find(([k]) => k.toLowerCase() === 'retry-after')?.[1], JSON.stringify(direct.headers)).toMatch(/^\d+$/);
  });
});
