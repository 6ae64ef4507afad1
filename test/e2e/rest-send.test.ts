import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transactionRecord } from '../../src/core/transactions/record.js';
import { families, schema } from '../support/families.js';
import { DEV_ADDRESS, type TestService } from '../support/service.js';
import { envelope, expectError, RECEIVER, startRestService } from '../support/rest.js';

// The success path of the send route needs the EVM chain family and a chain (anvil).
const TX = '/api/v1/relayers/evm-relayer/transactions';
const mutations = schema.getMutationType()!.getFields();
const cancelAndReplace = !!mutations.cancelTransaction && !!mutations.replaceTransaction;

describe.runIf(families.has('evm'))('sending through the REST routes (EVM, anvil)', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startRestService({ anvil: true });
  });
  afterAll(() => svc?.stop());

  const row = (id: string) => svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id } });

  it('accepts a Shape A body: 200 with the transaction record, as stored', async () => {
    const res = await svc.request('POST', TX, `{"value": 9007199254740993, "to": "${RECEIVER}", "speed": "fast"}`);
    expect(res.status).toBe(200);
    const body = await envelope(res);
    expect(body.data).toMatchObject({ relayer_id: 'evm-relayer', status: 'pending', from: DEV_ADDRESS, to: RECEIVER, value: '9007199254740993' });
    expect(typeof body.data.nonce).toBe('number');
    expect(body.data).toEqual(JSON.parse(JSON.stringify(transactionRecord(families, await row(body.data.id)))));
    const one = await envelope(await svc.request('GET', `${TX}/${body.data.id}`));
    expect(one.data.id).toBe(body.data.id);
  });

  it('Idempotency-Key: a retry returns the first transaction; another body under the key is a 409', async () => {
    const send = (value: number) => svc.request('POST', TX, { value, to: RECEIVER }, { 'idempotency-key': 'order-42' });
    const first = await envelope(await send(5));
    const count = await svc.rt.db.prisma.transaction.count();
    const again = await envelope(await send(5));
    expect(again.data.id).toBe(first.data.id);
    expect(await svc.rt.db.prisma.transaction.count()).toBe(count);
    await expectError(await send(6), 409, 'Conflict', /Idempotency-Key "order-42"/);
    expect(await svc.rt.db.prisma.transaction.count()).toBe(count);
  });

  it.runIf(cancelAndReplace)('cancels (DELETE) and replaces (PUT) a pending transaction', async () => {
    const a = await envelope(await svc.request('POST', TX, { value: 1, to: RECEIVER }));
    const replaced = await svc.request('PUT', `${TX}/${a.data.id}`, { value: 2, to: RECEIVER });
    expect(replaced.status).toBe(200);
    const rb = await envelope(replaced);
    expect(rb.data).toMatchObject({ id: a.data.id, value: '2', nonce: a.data.nonce });
    await expectError(await svc.request('PUT', `${TX}/${a.data.id}`, { value: 'two', to: RECEIVER }), 400, 'Bad Request', /^value: must be an integer/);
    const canceled = await svc.request('DELETE', `${TX}/${a.data.id}`);
    expect(canceled.status).toBe(200);
    const cb = await envelope(canceled);
    expect(cb.data.id).toBe(a.data.id);
    expect(cb.data).toEqual(JSON.parse(JSON.stringify(transactionRecord(families, await row(a.data.id)))));
    await expectError(
      await svc.request('DELETE', `${TX}/00000000-0000-0000-0000-000000000000`),
      404,
      'Transaction with ID 00000000-0000-0000-0000-000000000000 not found',
    );
  });
});
