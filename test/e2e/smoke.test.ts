import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/postgres.js';
import { startTestService, type TestService } from '../support/service.js';

describe.each(await databaseKinds())('service on %s', (db) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService({ db });
  });
  afterAll(() => svc?.stop());

  it('answers the health check without a token', async () => {
    const res = await svc.request('GET', '/v1/health', undefined, { authorization: '' });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('OK');
  });

  it('lists the relayer from the config through GraphQL', async () => {
    const { data, errors } = await svc.gql('{ relayers { items { id address networkType } pagination { totalItems } } }');
    expect(errors).toBeUndefined();
    expect(data.relayers.items).toEqual([{ id: 'evm-relayer', address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', networkType: 'evm' }]);
    expect(data.relayers.pagination.totalItems).toBe(1);
  });
});
