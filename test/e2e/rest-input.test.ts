import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestService } from '../support/service.js';
import { dbState, envelope, expectError, RECEIVER, startRestService, STELLAR_RELAYER } from '../support/rest.js';
import { routes } from '../support/families.js';

// Hostile input: text the database cannot store, numbers that are not exact integers, bodies that
// are not JSON or too large. Each is a 4xx in the envelope naming the problem, and changes nothing.

const TX = '/api/v1/relayers/evm-relayer/transactions';
const NUL = 'a\u0000b';
const LONE = 'a\ud800b';

describe('hostile input', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ env: { MAX_BODY_BYTES: '4096' } });
    await svc.request('POST', '/api/v1/notifications', { id: 'hook', url: 'https://example.com/a' });
  });
  afterAll(() => svc?.stop());

  const refused = async (method: string, path: string, body: unknown, status: number, error: RegExp, headers?: Record<string, string>) => {
    const before = await dbState(svc.rt);
    const res = await svc.request(method, path, body, headers);
    const messages: Record<number, string> = { 400: 'Bad Request', 413: 'Payload Too Large', 415: 'Unsupported Media Type' };
    await expectError(res, status, messages[status], error);
    expect(await dbState(svc.rt)).toBe(before);
  };

  const textCases: [string, string, Record<string, unknown>, string][] = [
    ['PATCH', '/api/v1/relayers/evm-relayer', { notification_id: 'x' }, 'notification_id'],
    ['PATCH', '/api/v1/relayers/evm-relayer', { name: 'x' }, 'name'],
    ['PATCH', '/api/v1/relayers/evm-relayer', { policies: { whitelist_receivers: ['x'] } }, 'policies.whitelist_receivers[0]'],
    ['PATCH', '/api/v1/relayers/evm-relayer', { custom_rpc_urls: [{ url: 'x', weight: 1 }] }, 'custom_rpc_urls[0].url'],
    ['POST', '/api/v1/notifications', { url: 'x' }, 'url'],
    ['POST', '/api/v1/notifications', { url: 'https://example.com', signing_key: 'x' }, 'signing_key'],
    ['POST', '/api/v1/notifications', { id: 'x', url: 'https://example.com' }, 'id'],
    ['PATCH', '/api/v1/notifications/hook', { url: 'x' }, 'url'],
    ['PATCH', '/api/v1/notifications/hook', { signing_key: 'x' }, 'signing_key'],
    ['POST', TX, { value: 1, to: 'x' }, 'to'],
    ['POST', TX, { value: 1, to: RECEIVER, data: 'x' }, 'data'],
    ['POST', TX, { value: 1, to: RECEIVER, valid_until: 'x' }, 'valid_until'],
    ['POST', `/api/v1/relayers/${STELLAR_RELAYER}/transactions`, { network: 'testnet', operations: [], memo: { type: 'text', value: 'x' } }, 'memo.value'],
  ];
  for (const [bad, label] of [
    [NUL, 'NUL'],
    [LONE, 'lone surrogate'],
  ]) {
    it.each(textCases)(`%s %s: a ${label} in a text field is a 400 naming it`, async (method, path, body, field) => {
      const put = (v: unknown): unknown =>
        v === 'x' ? bad : Array.isArray(v) ? v.map(put) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, put(x)])) : v;
      // JSON.stringify writes NUL as \u0000 and a lone surrogate as \ud800: the escapes a client sends.
      const text = JSON.stringify(put(body));
      await refused(method, path, text, 400, new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}: must not contain`));
    });
  }

  it('a NUL in a field name or a path parameter is a 400 too', async () => {
    await refused('POST', '/api/v1/notifications', JSON.stringify({ url: 'https://example.com', [NUL]: 1 }), 400, /field name must not contain NUL/);
    await refused('PATCH', '/api/v1/notifications/a%00b', { url: 'https://example.com' }, 400, /^notification_id: must not contain NUL/);
    await refused('GET', '/api/v1/relayers/a%00b', undefined, 400, /^relayer_id: must not contain NUL/);
  });

  it.each(['1e-400', '1.5', '5e-324', '1e400', '1.0000000000000000001', '-1', '340282366920938463463374607431768211456'])(
    'value %s is not a u128 integer: 400',
    async (value) => {
      await refused('POST', TX, `{"to":"${RECEIVER}","value":${value}}`, 400, /^value: must/);
    },
  );

  it('integers in any exact written form are taken, every digit kept', async () => {
    // The send fails later for want of a chain, but the value reaches the service exactly.
    for (const [written, exact] of [
      ['1e3', 1000n],
      ['1.50e2', 150n],
      ['-0.0', 0n],
      ['340282366920938463463374607431768211455', (1n << 128n) - 1n],
    ] as const) {
      const res = await svc.request('POST', TX, `{"to":"${RECEIVER}","value":${written},"gas_limit":21000}`);
      const body = await envelope(res);
      if (res.status === 200) expect(BigInt(body.data.value)).toBe(exact);
      else expect(body.error).not.toMatch(/^value/);
    }
  });

  it.each([
    ['text/plain', 'text/plain'],
    ['octet-stream', 'application/octet-stream'],
    ['form', 'application/x-www-form-urlencoded'],
    ['no content-type', undefined],
  ])('a body sent as %s is a 415', async (_, type) => {
    const body = JSON.stringify({ id: 'by-text', url: 'https://example.com' });
    const before = await dbState(svc.rt);
    const res = await svc.app.fetch(
      new Request('http://relayer.test/api/v1/notifications', {
        method: 'POST',
        headers: { authorization: `Bearer ${svc.apiKey}`, ...(type ? { 'content-type': type } : {}) },
        body: type ? body : new Blob([body]).stream(),
        duplex: 'half',
      } as RequestInit),
    );
    await expectError(res, 415, 'Unsupported Media Type', /application\/json/);
    expect(await dbState(svc.rt)).toBe(before);
  });

  const PAYMENT = { type: 'payment', destination: 'GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7', asset: { type: 'native' }, amount: 1 };
  it.each([
    ['evm', TX, { value: 1, to: RECEIVER }],
    ['stellar', `/api/v1/relayers/${STELLAR_RELAYER}/transactions`, { network: 'testnet', operations: [PAYMENT] }],
  ])('%s: a valid_until without seconds is not RFC 3339: 400 naming it', async (_family, path, body) => {
    for (const at of ['2030-01-01T00:00Z', '2030-01-01T00:00+02:00', '2030-01-01T00:00:00+0200']) {
      await refused('POST', path, { ...body, valid_until: at }, 400, /^valid_until: must be an RFC 3339 timestamp$/);
    }
  });

  it('application/*+json with a charset is JSON', async () => {
    const res = await svc.request(
      'POST',
      '/api/v1/notifications',
      { id: 'plus-json', url: 'https://example.com' },
      { 'content-type': 'application/vnd.api+json; charset=utf-8' },
    );
    expect(res.status).toBe(201);
  });

  it('a body over MAX_BODY_BYTES is a 413, declared or streamed', async () => {
    const big = JSON.stringify({ url: 'https://example.com', id: 'y'.repeat(5000) });
    await refused('POST', '/api/v1/notifications', big, 413, /larger than 4096 bytes/);
    const before = await dbState(svc.rt);
    const res = await svc.app.fetch(
      new Request('http://relayer.test/api/v1/notifications', {
        method: 'POST',
        headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' },
        body: new Blob([big]).stream(),
        duplex: 'half',
      } as RequestInit),
    );
    await expectError(res, 413, 'Payload Too Large', /larger than 4096 bytes/);
    expect(await dbState(svc.rt)).toBe(before);
  });

  it('every route with a body refuses a non-JSON body', async () => {
    for (const r of routes.filter((x) => x.body)) {
      const path = r.path.replace(/\{(\w+)\}/g, (_, p: string) => (p === 'relayer_id' ? 'evm-relayer' : p === 'notification_id' ? 'hook' : 'x'));
      const res = await svc.request(r.method, path, JSON.stringify(r.body!.example), { 'content-type': 'text/plain' });
      expect(res.status, `${r.method} ${r.path}`).toBe(415);
    }
  });

  // Bytes that are not UTF-8 were once replaced by U+FFFD and stored: the key kept was not the one sent.
  it.each([
    ['POST', '/api/v1/notifications', '{"id":"utf8","url":"https://example.com","signing_key":"', '"}', 'signing_key'],
    ['PATCH', '/api/v1/notifications/hook', '{"signing_key":"', '"}', 'signing_key'],
    ['PATCH', '/api/v1/relayers/evm-relayer', '{"name":"', '"}', 'name'],
  ])('%s %s: invalid UTF-8 in a field is a 400 naming it, nothing stored', async (method, path, head, tail, field) => {
    const before = await dbState(svc.rt);
    for (const bad of [[0xff], [0xc3], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0x80]]) {
      const body = Buffer.concat([Buffer.from(`${head}k${'x'.repeat(40)}`), Buffer.from(bad), Buffer.from(tail)]);
      const res = await svc.app.fetch(
        new Request(`http://relayer.test${path}`, {
          method,
          headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' },
          body: new Uint8Array(body),
        }),
      );
      await expectError(res, 400, 'Bad Request', new RegExp(`^${field}: must be valid UTF-8`));
    }
    expect(await dbState(svc.rt)).toBe(before);
  });

  it('invalid UTF-8 outside any string is a 400 naming the body; on /graphql a 400 too', async () => {
    const send = (path: string, body: Buffer) =>
      svc.app.fetch(
        new Request(`http://relayer.test${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${svc.apiKey}`, 'content-type': 'application/json' },
          body: new Uint8Array(body),
        }),
      );
    await expectError(await send('/api/v1/notifications', Buffer.from([0x7b, 0xff, 0x7d])), 400, 'Bad Request', /^body: must be valid UTF-8/);
    const gql = Buffer.concat([Buffer.from('{"query":"{ relayers { items { id } } }","x":"'), Buffer.from([0xff]), Buffer.from('"}')]);
    const res = await send('/graphql', gql);
    expect(res.status).toBe(400);
    expect((await res.json()).errors[0].message).toMatch(/UTF-8/);
  });

  it.each([
    ['POST', '/api/v1/notifications', (u: string) => ({ id: 'ctl', url: u }), 'url'],
    ['PATCH', '/api/v1/notifications/hook', (u: string) => ({ url: u }), 'url'],
    ['PATCH', '/api/v1/relayers/evm-relayer', (u: string) => ({ custom_rpc_urls: [{ url: u }] }), 'custom_rpc_urls[0].url'],
  ])('%s %s: a control character in a URL is a 400 naming the field', async (method, path, body, field) => {
    for (const c of ['\t', '\n', '\r', '\u0001', '\u007f', '\u0085']) {
      await refused(
        method,
        path,
        body(`https://example.com/a${c}b`),
        400,
        new RegExp(`^${field.replace(/[[\].]/g, '\\$&')}: must not contain control characters`),
      );
    }
  });

  it('a nonce past int64 is a 400 naming it, not a 500', async () => {
    for (const nonce of ['9223372036854775808', '340282366920938463463374607431768211456', '-1']) {
      await refused('GET', `/api/v1/relayers/evm-relayer/transactions/by-nonce/${nonce}`, undefined, 400, /^nonce: must/);
    }
    const ok = await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions/by-nonce/9223372036854775807');
    expect(ok.status).toBe(404);
  });

  describe('/graphql', () => {
    const post = (body: string, type?: string) =>
      svc.app.fetch(
        new Request('http://relayer.test/graphql', {
          method: 'POST',
          headers: { authorization: `Bearer ${svc.apiKey}`, ...(type ? { 'content-type': type } : {}) },
          body,
        }),
      );
    const mutation = JSON.stringify({ query: 'mutation { createNotification(input: {id: "csrf", url: "https://example.com"}) { id } }' });

    it('takes no text/plain, form or multipart posts (a cross-site form could send them)', async () => {
      const before = await dbState(svc.rt);
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/graphql']) {
        const res = await post(type.startsWith('application/x-www') ? `query=${encodeURIComponent(JSON.parse(mutation).query)}` : mutation, type);
        expect(res.status, type).toBe(415);
        expect((await res.json()).errors[0].extensions.code).toBe('UNSUPPORTED_MEDIA_TYPE');
      }
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('refuses NUL in a variable or a literal, and inexact integers in variables', async () => {
      const before = await dbState(svc.rt);
      const viaVar = await svc.gql('mutation($u: String!) { createNotification(input: {url: $u}) { id } }', { u: `https://example.com/${NUL}` });
      expect(viaVar.errors?.[0]).toMatchObject({
        message: 'Bad Request',
        extensions: { code: 'BAD_REQUEST', detail: expect.stringMatching(/^u: must not contain NUL/) },
      });
      const viaLiteral = await svc.gql('mutation { createNotification(input: {url: "https://example.com/\\u0000"}) { id } }');
      expect(viaLiteral.errors?.[0].extensions.detail).toMatch(/must not contain NUL/);
      const res = await post(
        `{"query":"mutation($v: BigInt!) { sendTransaction(relayerId: \\"evm-relayer\\", input: {value: $v, to: \\"${RECEIVER}\\"}) { id } }","variables":{"v":1e-400}}`,
        'application/json',
      );
      const out = await res.json();
      expect(out.errors?.[0].message).toMatch(/integer/);
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('refuses a validUntil without seconds, naming valid_until', async () => {
      const before = await dbState(svc.rt);
      const out = await svc.gql(
        `mutation($at: String) { sendTransaction(relayerId: "evm-relayer", input: {value: 1, to: "${RECEIVER}", validUntil: $at}) { id } }`,
        {
          at: '2030-01-01T00:00Z',
        },
      );
      expect(out.errors?.[0]).toMatchObject({
        message: 'Bad Request',
        extensions: { code: 'BAD_REQUEST', detail: 'valid_until: must be an RFC 3339 timestamp' },
      });
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('a body over MAX_BODY_BYTES is a 413', async () => {
      const res = await post(JSON.stringify({ query: `{ relayers { items { id } } } #${'x'.repeat(5000)}` }), 'application/json');
      expect(res.status).toBe(413);
    });
  });
});
