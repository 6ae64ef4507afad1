import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transactionUpdates } from '../../../src/core/notifications/events.js';
import { transactionRecord } from '../../../src/core/transactions/record.js';
import { parseJson } from '../../../src/lib/json.js';
import { databaseKinds } from '../../support/postgres.js';
import { API_KEY, type TestService } from '../../support/service.js';
import { dbState, envelope, expectError, RECEIVER, seedTransaction, SOLANA_RELAYER, startRestService, STELLAR_RELAYER } from '../../support/rest.js';
import { families, routes } from '../../support/families.js';

const TX = '/api/v1/relayers/evm-relayer/transactions';
const U128_MAX = '340282366920938463463374607431768211455';

describe.each(await databaseKinds())('REST routes on %s', (db) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ db });
  });
  afterAll(() => svc?.stop());

  const send = (path: string, body: unknown, headers?: Record<string, string>) => svc.request('POST', path, body, headers);

  describe('health', () => {
    it('GET /v1/health answers OK in plain text, without a token', async () => {
      const res = await svc.request('GET', '/v1/health', undefined, { authorization: '' });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('OK');
    });
  });

  describe('GET /api/v1/relayers and /api/v1/relayers/{id}', () => {
    it('lists relayers in pages', async () => {
      const all = await envelope(await svc.request('GET', '/api/v1/relayers'));
      expect(all.data.map((r: { id: string }) => r.id)).toEqual(['evm-relayer', SOLANA_RELAYER, STELLAR_RELAYER]);
      expect(all.pagination).toEqual({ current_page: 1, per_page: 10, total_items: 3 });
      const page2 = await envelope(await svc.request('GET', '/api/v1/relayers?page=2&per_page=2'));
      expect(page2.data.map((r: { id: string }) => r.id)).toEqual([STELLAR_RELAYER]);
      expect(page2.pagination).toEqual({ current_page: 2, per_page: 2, total_items: 3 });
    });

    it('gives the relayer record of spec 2.3', async () => {
      const res = await svc.request('GET', '/api/v1/relayers/evm-relayer');
      expect(res.status).toBe(200);
      const body = await envelope(res);
      expect(body.data).toEqual({
        id: 'evm-relayer',
        name: 'EVM relayer',
        network: 'localnet',
        network_type: 'evm',
        address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
        paused: false,
        system_disabled: false,
        disabled_reason: null,
        signer_id: 'dev-signer',
        notification_id: null,
        custom_rpc_urls: null,
        policies: {},
      });
      expect(body).not.toHaveProperty('pagination');
    });

    it('answers 404 naming an unknown relayer', async () => {
      await expectError(await svc.request('GET', '/api/v1/relayers/no-such'), 404, 'Relayer with ID no-such not found');
    });
  });

  describe('PATCH /api/v1/relayers/{id} (4.3)', () => {
    it('updates the fields given and returns the relayer', async () => {
      await envelope(await send('/api/v1/notifications', { id: 'relayer-hook', url: 'https://example.com/relayer' }));
      const res = await svc.request('PATCH', '/api/v1/relayers/evm-relayer', {
        name: 'Renamed',
        paused: true,
        notification_id: 'relayer-hook',
        custom_rpc_urls: [{ url: 'https://rpc.example.com', weight: 50 }],
        policies: { gas_price_cap: 100000000000, whitelist_receivers: [RECEIVER] },
      });
      expect(res.status).toBe(200);
      const body = await envelope(res);
      expect(body.data).toMatchObject({
        name: 'Renamed',
        paused: true,
        notification_id: 'relayer-hook',
        custom_rpc_urls: [{ url: 'https://rpc.example.com', weight: 50 }],
        policies: { gas_price_cap: 100000000000, whitelist_receivers: [RECEIVER] },
      });
      const again = await envelope(await svc.request('GET', '/api/v1/relayers/evm-relayer'));
      expect(again.data).toEqual(body.data);
    });

    it('keeps every digit of policy integers beyond 2^53, as JSON numbers', async () => {
      const res = await svc.request('PATCH', '/api/v1/relayers/evm-relayer', '{"policies": {"gas_price_cap": 1180591620717411303424, "min_balance": 0}}');
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('"gas_price_cap":1180591620717411303424');
      expect(text).toContain('"min_balance":0');
    });

    it('null detaches the notification and clears the custom RPC URLs; an empty body changes nothing', async () => {
      const res = await svc.request('PATCH', '/api/v1/relayers/evm-relayer', { notification_id: null, custom_rpc_urls: null, paused: false });
      const body = await envelope(res);
      expect(body.data).toMatchObject({ notification_id: null, custom_rpc_urls: null, paused: false });
      const before = await dbState(svc.rt);
      expect((await svc.request('PATCH', '/api/v1/relayers/evm-relayer', {})).status).toBe(200);
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('applies none of the changes when one field is invalid', async () => {
      const before = await dbState(svc.rt);
      const cases: [unknown, RegExp][] = [
        [{ name: 'Other', paused: 'yes' }, /^paused: must be a boolean/],
        [{ name: 'Other', policies: { gas_price_cap: -1 } }, /^policies\.gas_price_cap: must be >= 0/],
        [{ name: 'Other', policies: { gas_price_cap: '100' } }, /^policies\.gas_price_cap: must be an integer/],
        [{ name: 'Other', policies: { whitelist_receivers: ['0x1234'] } }, /^policies\.whitelist_receivers\[0\]: must be a 0x-prefixed 20-byte hex address/],
        [{ name: 'Other', policies: { allowed_programs: [] } }, /policies/],
        [{ name: 'Other', notification_id: 'missing-hook' }, /^notification_id: notification "missing-hook" does not exist/],
        [{ name: 'Other', custom_rpc_urls: [{ url: 'ftp://x' }] }, /^custom_rpc_urls\[0\]\.url: must be an http\(s\) URL/],
        [{ name: 'Other', custom_rpc_urls: [{ weight: 1 }] }, /^custom_rpc_urls\[0\]\.url: required/],
        [{ name: 'Other', custom_rpc_urls: [{ url: 'https://x.example', weight: 1.5 }] }, /^custom_rpc_urls\[0\]\.weight: must be an integer/],
        [{ name: 'Other', paused: null }, /^paused: must not be null/],
        [{ name: 'Other', policies: [] }, /^policies: must be an object/],
        [{ name: 'Other', unknown_field: 1 }, /^unknown_field: unknown field/],
        [{ name: 42 }, /^name: must be a string/],
        [[{ name: 'Other' }], /^body: must be a JSON object/],
        ['{"name": "Other",', /^body: invalid JSON/],
        ['', /^body: required/],
      ];
      for (const [body, error] of cases) {
        await expectError(await svc.request('PATCH', '/api/v1/relayers/evm-relayer', body), 400, 'Bad Request', error);
      }
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('answers 404 for an unknown relayer', async () => {
      await expectError(await svc.request('PATCH', '/api/v1/relayers/no-such', { paused: true }), 404, 'Relayer with ID no-such not found');
    });
  });

  describe('GET /api/v1/relayers/{id}/transactions (4.2)', () => {
    let rows: Awaited<ReturnType<typeof seedTransaction>>[];
    beforeAll(async () => {
      rows = [];
      for (let i = 0; i < 23; i++)
        rows.push(await seedTransaction(svc.rt, i === 5 ? { status: 'confirmed', hash: '0xabc', sentAt: new Date(), confirmedAt: new Date() } : {}));
    });
    const newestFirst = () => [...rows].reverse().map((r) => r.id);

    it('answers the same with and without the trailing slash, newest first, 10 per page by default', async () => {
      const a = await envelope(await svc.request('GET', `${TX}/`));
      const b = await envelope(await svc.request('GET', TX));
      expect(a).toEqual(b);
      expect(a.data.map((t: { id: string }) => t.id)).toEqual(newestFirst().slice(0, 10));
      expect(a.pagination).toEqual({ current_page: 1, per_page: 10, total_items: 23 });
    });

    it('pages exactly', async () => {
      const last = await envelope(await svc.request('GET', `${TX}/?page=3&per_page=10`));
      expect(last.data.map((t: { id: string }) => t.id)).toEqual(newestFirst().slice(20));
      expect(last.pagination).toEqual({ current_page: 3, per_page: 10, total_items: 23 });
      const beyond = await envelope(await svc.request('GET', `${TX}?page=9`));
      expect(beyond.data).toEqual([]);
      expect(beyond.pagination!.total_items).toBe(23);
      const big = await envelope(await svc.request('GET', `${TX}?per_page=100`));
      expect(big.data).toHaveLength(23);
    });

    it('filters by status', async () => {
      const body = await envelope(await svc.request('GET', `${TX}?status=confirmed`));
      expect(body.data.map((t: { id: string }) => t.id)).toEqual([rows[5].id]);
      expect(body.pagination!.total_items).toBe(1);
    });

    it('reads only what a GraphQL list selects, and names an unknown relayer whatever it selects', async () => {
      const list = (relayer: string, selection: string, args = '') => svc.gql(`{ relayerTransactions(relayerId: "${relayer}"${args}) { ${selection} } }`);
      for (const selection of ['items { id }', 'pagination { totalItems }', 'pagination { currentPage }', 'items { id } pagination { totalItems }']) {
        const { data, errors } = await list('no-such', selection);
        expect(data).toBeNull();
        expect(errors?.map((e) => [e.message, e.extensions?.code])).toEqual([['Relayer with ID no-such not found', 'NOT_FOUND']]);
      }
      const counted = await list('evm-relayer', 'pagination { totalItems }');
      expect(counted).toEqual({ data: { relayerTransactions: { pagination: { totalItems: 23 } } } });
      // An existing relayer with nothing to show: an empty page, not an error.
      const none = await list('evm-relayer', 'items { id } pagination { totalItems }', ', status: canceled');
      expect(none).toEqual({ data: { relayerTransactions: { items: [], pagination: { totalItems: 0 } } } });
      const beyond = await list('evm-relayer', 'pagination { totalItems } items { id }', ', page: 9');
      expect(beyond).toEqual({ data: { relayerTransactions: { pagination: { totalItems: 23 }, items: [] } } });
    });

    it('gives each record exactly as webhooks carry it (transactionRecord)', async () => {
      const body = await envelope(await svc.request('GET', `${TX}?per_page=100`));
      for (const row of rows) {
        const rest = body.data.find((t: { id: string }) => t.id === row.id);
        expect(rest).toEqual(JSON.parse(JSON.stringify(transactionRecord(families, row))));
      }
      expect(Object.keys(body.data[0])).toEqual(Object.keys(transactionRecord(families, rows[0])));
      expect(body.data.find((t: { id: string }) => t.id === rows[5].id)).toMatchObject({
        status: 'confirmed',
        hash: '0xabc',
        nonce: rows[5].nonce === null ? null : Number(rows[5].nonce),
        gas_limit: 21000,
        value: '1000000000000000000',
      });
    });

    it('gives Solana and Stellar records with their network data, as transactionRecord does', async () => {
      const stellar = await seedTransaction(svc.rt, {
        relayerId: STELLAR_RELAYER,
        networkType: 'stellar',
        from: 'GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7',
        to: null,
        value: '0',
        data: null,
        nonce: 7n,
        gasLimit: null,
        maxFeePerGas: null,
        maxPriorityFeePerGas: null,
        speed: null,
        chainState: { public: { network: 'testnet', fee: 100, memo: { type: 'text', value: 'hi' } }, secret: 'not shown' },
      });
      const body = await envelope(await svc.request('GET', `/api/v1/relayers/${STELLAR_RELAYER}/transactions`));
      expect(body.data).toEqual([JSON.parse(JSON.stringify(transactionRecord(families, stellar)))]);
      expect(body.data[0]).toMatchObject({ network_type: 'stellar', network: 'testnet', fee: 100 });
      expect(body.data[0]).not.toHaveProperty('secret');
    });

    it('refuses bad page and per_page values', async () => {
      const before = await dbState(svc.rt);
      const cases: [string, RegExp][] = [
        ['page=0', /^page: must be an integer >= 1/],
        ['page=-1', /^page: must be an integer >= 1/],
        ['page=abc', /^page: must be an integer/],
        ['page=1.5', /^page: must be an integer/],
        ['page=', /^page: must be an integer/],
        ['page=1&page=2', /^page: given more than once/],
        ['page=99999999999', /^page: must be an integer from/],
        ['per_page=0', /^per_page: must be an integer from 1 to 100/],
        ['per_page=101', /^per_page: must be an integer from 1 to 100/],
        ['per_page=1e3', /^per_page: must be an integer/],
        ['status=lost', /^status: must be one of canceled, confirmed, expired, failed, mined, pending, sent, submitted/],
      ];
      for (const [query, error] of cases) {
        await expectError(await svc.request('GET', `${TX}?${query}`), 400, 'Bad Request', error);
      }
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('answers 404 for an unknown relayer', async () => {
      await expectError(await svc.request('GET', '/api/v1/relayers/no-such/transactions/'), 404, 'Relayer with ID no-such not found');
    });
  });

  describe('GET /api/v1/relayers/{id}/transactions/{tx_id}', () => {
    it('gives one transaction record', async () => {
      const row = await seedTransaction(svc.rt);
      const body = await envelope(await svc.request('GET', `${TX}/${row.id}`));
      expect(body.data).toEqual(JSON.parse(JSON.stringify(transactionRecord(families, row))));
    });

    it('gives integers past 2^53 with every digit, as webhooks carry them', async () => {
      const row = await seedTransaction(svc.rt, { gasLimit: 2n ** 53n + 1n });
      const res = await svc.request('GET', `${TX}/${row.id}`);
      const text = await res.text();
      expect(text).toContain('"gas_limit":9007199254740993,');
      expect((parseJson(text) as { data: unknown }).data).toEqual(transactionRecord(families, row));
      const webhook = transactionUpdates(families, [{ relayer: { id: 'evm-relayer', notificationId: 'n' }, transaction: row }]);
      const [delivery] = JSON.parse(webhook!.params![0] as string) as { body: string }[];
      expect(delivery.body).toContain('"gas_limit":9007199254740993,');
    });

    it('answers 404 for an unknown transaction, one of another relayer, or an unknown relayer', async () => {
      const row = await seedTransaction(svc.rt);
      await expectError(
        await svc.request('GET', `${TX}/00000000-0000-0000-0000-000000000000`),
        404,
        'Transaction with ID 00000000-0000-0000-0000-000000000000 not found',
      );
      await expectError(await svc.request('GET', `/api/v1/relayers/${SOLANA_RELAYER}/transactions/${row.id}`), 404, `Transaction with ID ${row.id} not found`);
      await expectError(await svc.request('GET', `/api/v1/relayers/no-such/transactions/${row.id}`), 404, 'Relayer with ID no-such not found');
    });
  });

  describe('POST /api/v1/relayers/{id}/transactions (4.1)', () => {
    it('refuses malformed EVM bodies (Shape A) field by field and stores nothing', async () => {
      const before = await dbState(svc.rt);
      const to = RECEIVER;
      const cases: [unknown, RegExp][] = [
        [{ to }, /^value: /],
        [{ value: '1000', to }, /^value: must be an integer, got a string/],
        [{ value: 1.5, to }, /^value: must be an integer/],
        [{ value: -1, to }, /^value: must be >= 0/],
        [`{"value": 340282366920938463463374607431768211456, "to": "${to}"}`, /^value: must fit in u128/],
        [`{"value": 1e40, "to": "${to}"}`, /^value: must fit in u128/],
        [`{"value": 1e-400, "to": "${to}"}`, /^value: must be an integer/],
        [{ value: 1, to: '0x1234' }, /^to: must be a 0x-prefixed 20-byte hex address/],
        [{ value: 1, to, data: 'zz' }, /^data: must be 0x-prefixed hex/],
        [{ value: 1, to, gas_limit: -5 }, /^gas_limit: must be >= 0/],
        [`{"value": 1, "to": "${to}", "gas_limit": 9223372036854775808}`, /^gas_limit: must fit in int64/],
        [{ value: 1, to, gas_limit: '21000' }, /^gas_limit: must be an integer, got a string/],
        [{ value: 1, to, gas_price: -1 }, /^gas_price: must be >= 0/],
        [{ value: 1, to, max_fee_per_gas: 10 }, /max_priority_fee_per_gas/],
        [{ value: 1, to, gas_price: 1, max_fee_per_gas: 2, max_priority_fee_per_gas: 1 }, /^gas_price: cannot be combined/],
        [{ value: 1, to, speed: 'slow' }, /^speed: must be one of average, fast, fastest, safeLow/],
        [{ value: 1, to, valid_until: 'tomorrow' }, /^valid_until: must be an RFC 3339 timestamp/],
        [{ value: 1, to, valid_until: 12 }, /^valid_until: must be a string/],
        [{ value: 1 }, /^data: required when to is absent/],
        [{ value: 1, to, transaction: 'AAAA' }, /^transaction: not a field of evm transactions/],
        [{ value: 1, to, network: 'testnet' }, /^network: not a field of evm transactions/],
        [{ value: 1, to, nonce: 3 }, /^nonce: unknown field/],
        [[], /^body: must be a JSON object/],
        ['null', /^body: must be a JSON object/],
        ['{"value": 1', /^body: invalid JSON/],
        ['not json', /^body: invalid JSON/],
        ['', /^body: required/],
      ];
      for (const [body, error] of cases) {
        await expectError(await send(TX, body), 400, 'Bad Request', error);
      }
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('keeps the detail short for a body full of unknown fields', async () => {
      const body = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`${'k'.repeat(100)}${i}`, i]));
      const err = await expectError(await send(TX, { value: 1, ...body }), 400, 'Bad Request');
      expect(err.error).toMatch(/^k{64}…: unknown field; /);
      expect(err.error).toMatch(/; and 30 more$/);
    });

    it('reads u128 values without rounding: 2^128 - 1 passes the value check', async () => {
      const res = await send(TX, `{"value": ${U128_MAX}}`);
      const body = await expectError(res, 400, 'Bad Request');
      expect(body.error).toMatch(/^data: required when to is absent/);
      expect(body.error).not.toMatch(/value/);
    });

    // Solana and Stellar field rules belong to their chain modules: these cases check that each
    // refusal is a 400 naming the field, whatever the module's wording.
    it('refuses malformed Solana bodies (Shape B)', async () => {
      const before = await dbState(svc.rt);
      const path = `/api/v1/relayers/${SOLANA_RELAYER}/transactions`;
      const cases: [unknown, RegExp][] = [
        [{}, /transaction/],
        [{ transaction: '' }, /transaction/],
        [{ transaction: 5 }, /^transaction: must be a string/],
        [{ transaction: null }, /^transaction: must not be null/],
        [{ transaction: 'AAAA', value: 1 }, /^value: not a field of solana transactions/],
      ];
      for (const [body, error] of cases) await expectError(await send(path, body), 400, 'Bad Request', error);
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('refuses malformed Stellar bodies (Shape C), memo variants included', async () => {
      const before = await dbState(svc.rt);
      const path = `/api/v1/relayers/${STELLAR_RELAYER}/transactions`;
      const op = { type: 'payment', destination: 'GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7', asset: { type: 'native' }, amount: 1 };
      const memo = (m: unknown) => ({ network: 'testnet', operations: [op], memo: m });
      const cases: [unknown, RegExp][] = [
        [{ operations: [op] }, /network/],
        [{ network: 'testnet' }, /operations|transaction_xdr/],
        [{ network: 'testnet', operations: [op], transaction_xdr: 'AAAA' }, /operations|transaction_xdr/],
        [{ network: 'testnet', operations: [] }, /operations/],
        [{ network: 'testnet', operations: [1] }, /^operations\[0\]: must be an object/],
        [{ network: 'testnet', operations: [null] }, /^operations\[0\]: must not be null/],
        [{ network: 'testnet', operations: {} }, /^operations: must be an array/],
        [{ network: 'testnet', operations: [op], fee_bump: true }, /fee_bump/],
        [{ network: 'testnet', transaction_xdr: 'AAAA', fee_bump: 'yes' }, /^fee_bump: must be a boolean/],
        [{ network: 'testnet', operations: [op], max_fee: -1 }, /max_fee/],
        [{ network: 'testnet', operations: [op], max_fee: '100' }, /^max_fee: must be an integer, got a string/],
        [`{"network": "testnet", "operations": [{}], "max_fee": 9223372036854775808}`, /max_fee/],
        [memo({ type: 'text', value: 'x'.repeat(29) }), /memo/],
        [memo({ type: 'id', value: -1 }), /memo/],
        [`{"network": "testnet", "operations": [{}], "memo": {"type": "id", "value": 18446744073709551616}}`, /memo/],
        [memo({ type: 'hash', value: [1, 2, 3] }), /memo/],
        [memo({ type: 'return', value: Array(32).fill(256) }), /memo/],
        [memo({ type: 'none', value: 'x' }), /memo/],
        [memo({ type: 'emoji' }), /memo/],
        [memo({ value: 'x' }), /^memo\.type: required/],
        [memo('hello'), /^memo: must be an object/],
        [memo({ type: 'text', value: 'hi', extra: 1 }), /^memo\.extra: unknown field/],
        [{ network: 'testnet', operations: [op], value: 1 }, /^value: not a field of stellar transactions/],
      ];
      for (const [body, error] of cases) await expectError(await send(path, body), 400, 'Bad Request', error);
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('maps the Idempotency-Key header to the operation', async () => {
      await expectError(await send(TX, { value: 1, to: RECEIVER }, { 'idempotency-key': 'x'.repeat(300) }), 400, 'Bad Request', /^Idempotency-Key: /);
    });

    it('answers 404 naming an unknown relayer', async () => {
      await expectError(await send('/api/v1/relayers/no-such/transactions', { value: 1, to: RECEIVER }), 404, 'Relayer with ID no-such not found');
    });
  });

  describe('notifications (4.4, 4.5, 4.6 and delete)', () => {
    const key = 'k'.repeat(40);

    it('creates a notification (201) and never returns the signing key', async () => {
      const res = await send('/api/v1/notifications', { id: 'hook-1', type: 'webhook', url: 'https://example.com/a', signing_key: key });
      expect(res.status).toBe(201);
      const text = await res.clone().text();
      expect(text).not.toContain(key);
      expect(text).not.toContain('"signing_key"');
      const body = await envelope(res);
      expect(body.data).toEqual({ id: 'hook-1', type: 'webhook', url: 'https://example.com/a', has_signing_key: true });
    });

    it('gives a new notification an id when none is sent', async () => {
      const body = await envelope(await send('/api/v1/notifications', { url: 'https://example.com/b' }));
      expect(body.data).toMatchObject({ type: 'webhook', url: 'https://example.com/b', has_signing_key: false });
      expect(body.data.id).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('answers 409 for an id that exists', async () => {
      await expectError(await send('/api/v1/notifications', { id: 'hook-1', url: 'https://example.com/c' }), 409, 'Notification with this ID already exists');
    });

    it('refuses malformed notifications and stores nothing', async () => {
      const before = await dbState(svc.rt);
      const cases: [unknown, RegExp][] = [
        [{}, /^url: required/],
        [{ url: 5 }, /^url: must be a string/],
        [{ url: 'not a url' }, /^url: must be a valid URL/],
        [{ url: 'ftp://example.com' }, /^url: must be an http\(s\) URL/],
        [{ url: 'https://example.com', type: 'email' }, /^type: must be one of webhook/],
        [{ url: 'https://example.com', id: 'bad id!' }, /^id: may contain only/],
        [{ url: 'https://example.com', signing_key: 12 }, /^signing_key: must be a string/],
        [{ url: 'https://example.com', extra: true }, /^extra: unknown field/],
      ];
      for (const [body, error] of cases) await expectError(await send('/api/v1/notifications', body), 400, 'Bad Request', error);
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('signing_key: absent or null keeps the key, "" removes it, a value sets it', async () => {
      const stored = async () => (await svc.rt.db.prisma.notification.findUniqueOrThrow({ where: { id: 'hook-1' } })).signingKey;
      const patch = (body: unknown) => svc.request('PATCH', '/api/v1/notifications/hook-1', body);

      let body = await envelope(await patch({ url: 'https://example.com/a2' }));
      expect(body.data).toEqual({ id: 'hook-1', type: 'webhook', url: 'https://example.com/a2', has_signing_key: true });
      expect(await stored()).toBe(key);

      body = await envelope(await patch({ signing_key: null }));
      expect(body.data.has_signing_key).toBe(true);
      expect(await stored()).toBe(key);

      body = await envelope(await patch({ signing_key: '' }));
      expect(body.data.has_signing_key).toBe(false);
      expect(await stored()).toBeNull();

      const other = 'o'.repeat(40);
      const res = await patch({ signing_key: other });
      expect(await res.clone().text()).not.toContain(other);
      body = await envelope(res);
      expect(body.data.has_signing_key).toBe(true);
      expect(await stored()).toBe(other);
    });

    it('refuses a malformed update and changes nothing', async () => {
      const before = await dbState(svc.rt);
      for (const [body, error] of [
        [{ url: 'https://example.com/new', type: 'sms' }, /^type: must be one of webhook/],
        [{ url: 'https://example.com/new', signing_key: false }, /^signing_key: must be a string/],
        [{ url: 'nope', signing_key: 'x'.repeat(40) }, /^url: must be a valid URL/],
        [{ id: 'renamed' }, /^id: unknown field/],
      ] as [unknown, RegExp][]) {
        await expectError(await svc.request('PATCH', '/api/v1/notifications/hook-1', body), 400, 'Bad Request', error);
      }
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('answers 404 "Notification not found" for an unknown notification', async () => {
      await expectError(await svc.request('PATCH', '/api/v1/notifications/no-such', { url: 'https://example.com' }), 404, 'Notification not found');
      await expectError(await svc.request('GET', '/api/v1/notifications/no-such'), 404, 'Notification not found');
      await expectError(await svc.request('DELETE', '/api/v1/notifications/no-such'), 404, 'Notification not found');
    });

    it('lists notifications in pages and reads one', async () => {
      const all = await envelope(await svc.request('GET', '/api/v1/notifications'));
      const total = all.pagination!.total_items;
      expect(total).toBe(all.data.length);
      expect(all.data.map((n: { id: string }) => n.id)).toContain('hook-1');
      for (const n of all.data) expect(Object.keys(n).sort()).toEqual(['has_signing_key', 'id', 'type', 'url']);
      const one = await envelope(await svc.request('GET', '/api/v1/notifications?page=2&per_page=1'));
      expect(one.data).toEqual([all.data[1]]);
      expect(one.pagination).toEqual({ current_page: 2, per_page: 1, total_items: total });
      const single = await envelope(await svc.request('GET', '/api/v1/notifications/hook-1'));
      expect(single.data).toEqual(all.data.find((n: { id: string }) => n.id === 'hook-1'));
      await expectError(await svc.request('GET', '/api/v1/notifications?per_page=abc'), 400, 'Bad Request', /^per_page: must be an integer/);
    });

    it('deletes a notification, but not while a relayer uses it', async () => {
      await envelope(await svc.request('PATCH', `/api/v1/relayers/${SOLANA_RELAYER}`, { notification_id: 'hook-1' }));
      await expectError(await svc.request('DELETE', '/api/v1/notifications/hook-1'), 400, 'Bad Request', new RegExp(SOLANA_RELAYER));
      expect(await svc.rt.db.prisma.notification.count({ where: { id: 'hook-1' } })).toBe(1);
      await envelope(await svc.request('PATCH', `/api/v1/relayers/${SOLANA_RELAYER}`, { notification_id: null }));
      const body = await envelope(await svc.request('DELETE', '/api/v1/notifications/hook-1'));
      expect(body.data).toBe('Notification deleted successfully');
      await expectError(await svc.request('GET', '/api/v1/notifications/hook-1'), 404, 'Notification not found');
    });
  });

  describe('authentication (5) and routing', () => {
    const example = (path: string) => path.replace('{relayer_id}', 'evm-relayer').replace('{transaction_id}', 'x').replace('{notification_id}', 'x');

    it('answers 401 to a missing, malformed or wrong token on every route and on /graphql', async () => {
      const before = await dbState(svc.rt);
      const bad = [
        { authorization: '' },
        { authorization: `Token ${API_KEY}` },
        { authorization: 'Bearer' },
        { authorization: `Bearer ${API_KEY}x` },
        { authorization: `Bearer  ${API_KEY.slice(1)}` },
      ];
      for (const r of routes.filter((x) => !x.public)) {
        for (const headers of bad) {
          await expectError(await svc.request(r.method, example(r.path), r.body ? r.body.example : undefined, headers), 401, 'Unauthorized');
        }
      }
      for (const headers of bad) {
        const res = await svc.request('POST', '/graphql', { query: '{ relayers { pagination { totalItems } } }' }, headers);
        expect(res.status).toBe(401);
        expect((await res.json()).errors[0].extensions.code).toBe('UNAUTHORIZED');
      }
      expect(await dbState(svc.rt)).toBe(before);
    });

    it('answers 404 in the envelope for an unknown path and 405 with Allow for a wrong method', async () => {
      await expectError(await svc.request('GET', '/api/v1/nothing-here'), 404, 'Not Found');
      await expectError(await svc.request('GET', '/api/v1/relayers/evm-relayer/transactions/x/y'), 404, 'Not Found');
      const res = await svc.request('PUT', '/api/v1/relayers/evm-relayer');
      await expectError(res, 405, 'Method Not Allowed');
      expect(res.headers.get('allow')).toBe('GET, PATCH, DELETE');
      const res2 = await svc.request('PUT', '/api/v1/notifications');
      expect(res2.status).toBe(405);
      expect(res2.headers.get('allow')).toBe('GET, POST');
    });

    it('decodes path parameters and refuses broken percent-encoding', async () => {
      await expectError(await svc.request('GET', '/api/v1/relayers/evm%2Drelayer%2F'), 404, 'Relayer with ID evm-relayer/ not found');
      await expectError(await svc.request('GET', '/api/v1/relayers/%E0%A4%A'), 400, 'Bad Request', /^relayer_id: invalid percent-encoding/);
    });

    it('serves the OpenAPI document and the reference page without a token', async () => {
      const res = await svc.request('GET', '/api/v1/openapi.json', undefined, { authorization: '' });
      expect(res.status).toBe(200);
      const doc = await res.json();
      expect(doc.openapi).toBe('3.1.0');
      const page = await svc.request('GET', '/api/v1/docs', undefined, { authorization: '' });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      const html = await page.text();
      for (const r of routes.filter((x) => doc.paths[x.path]?.[x.method.toLowerCase()])) expect(html).toContain(`<code>${r.path}</code>`);
    });
  });
});

describe('server failure', () => {
  it('answers 500 "Internal Server Error" in the envelope, without internals', async () => {
    const svc = await startRestService();
    try {
      await svc.rt.db.close();
      for (const [method, path, body] of [
        ['GET', '/api/v1/relayers/evm-relayer/transactions'],
        ['PATCH', '/api/v1/relayers/evm-relayer', { paused: true }],
        ['GET', '/api/v1/notifications'],
        ['POST', '/api/v1/notifications', { url: 'https://example.com' }],
      ] as [string, string, unknown][]) {
        const res = await svc.request(method, path, body);
        const err = await expectError(res, 500, 'Internal Server Error');
        expect(err.error).toBe('Internal Server Error');
      }
    } finally {
      await svc.stop().catch(() => {});
    }
  });
});
