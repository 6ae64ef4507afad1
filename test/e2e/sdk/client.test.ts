// OpenZeppelin Relayer's own client, as a team moving to this service would call it: every method of
// the client that this service offered before the signing and RPC routes (relayers, transactions,
// notifications), its plugins with none configured, and the routes left for later, which answer 404 in the envelope.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECEIVER } from '../../support/rest.js';
import { evmConfig, startTestService, type TestService } from '../../support/service.js';
import { sdkClient, sdkError, type Client } from '../../support/sdk.js';

describe('@openzeppelin/relayer-sdk against this service', () => {
  let svc: TestService;
  let client: Client;

  beforeAll(async () => {
    // Blocks only once an hour: sent transactions stay in the mempool, so they can be canceled and replaced.
    svc = await startTestService({ anvil: { blockTime: 3600 }, config: ({ rpcUrl }) => evmConfig(rpcUrl) });
    client = await sdkClient(svc);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await svc?.stop();
  });

  it('lists, reads and updates relayers', async () => {
    const list = await client.relayers.listRelayers(1, 10);
    expect(list.data).toMatchObject({ success: true, pagination: { current_page: 1, per_page: 10, total_items: 1 } });
    expect(list.data.data!.map((r) => r.id)).toEqual(['evm-relayer']);
    const one = await client.relayers.getRelayer('evm-relayer');
    expect(one.data.data).toMatchObject({ id: 'evm-relayer', network: 'localnet', network_type: 'evm', paused: false });
    const updated = await client.relayers.updateRelayer('evm-relayer', { name: 'Renamed', policies: { gas_price_cap: 500_000_000_000 } as never });
    expect(updated.data.data).toMatchObject({ name: 'Renamed', policies: { gas_price_cap: 500_000_000_000 } });
    expect((await client.relayers.getRelayer('evm-relayer')).data.data!.name).toBe('Renamed');
  });

  it('sends, reads, lists, cancels and replaces transactions', async () => {
    const send = () => client.relayers.sendTransaction('evm-relayer', { to: RECEIVER, value: 1_000, data: '0x', gas_limit: 21_000, speed: 'fast' } as never);
    const [a, b, c] = [await send(), await send(), await send()];
    for (const r of [a, b, c]) expect(r.data.data).toMatchObject({ status: 'pending', to: RECEIVER, value: '1000' });
    const ids = [a, b, c].map((r) => (r.data.data as { id: string }).id);

    const got = await client.relayers.getTransactionById('evm-relayer', ids[0]);
    expect(got.data.data).toMatchObject({ id: ids[0], relayer_id: 'evm-relayer' });
    const page = await client.relayers.listTransactions('evm-relayer', 1, 2);
    expect(page.data.pagination).toEqual({ current_page: 1, per_page: 2, total_items: 3 });
    expect(page.data.data!.map((t) => (t as { id: string }).id)).toEqual([ids[2], ids[1]]);

    // Wait until the workers have broadcast them and recorded it (no block comes to mine them);
    // 'sent' is the moment between the write of what will be sent and the broadcast's answer.
    const deadline = Date.now() + 60_000;
    let statuses: string[] = [];
    while (Date.now() < deadline) {
      statuses = await Promise.all(
        ids.map(async (id) => ((await client.relayers.getTransactionById('evm-relayer', id)).data.data as { status: string }).status),
      );
      if (statuses.every((s) => s === 'submitted')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(statuses).toEqual(['submitted', 'submitted', 'submitted']);

    const canceled = await client.relayers.cancelTransaction('evm-relayer', ids[0]);
    expect(canceled.status).toBe(200);
    expect(canceled.data.data).toMatchObject({ id: ids[0] });
    const replaced = await client.relayers.replaceTransaction('evm-relayer', ids[1], {
      to: RECEIVER,
      value: 2_000,
      data: '0x',
      gas_limit: 21_000,
      speed: 'fastest',
    } as never);
    expect(replaced.data.data).toMatchObject({ id: ids[1], value: '2000', speed: 'fastest' });

    const unknown = await sdkError(client.relayers.getTransactionById('evm-relayer', 'no-such-id'));
    expect(unknown.status).toBe(404);
  });

  it('creates, reads, lists, updates and deletes notifications, never returning the signing key', async () => {
    const key = 'a-signing-key-of-at-least-32-characters!';
    const created = await client.notifications.createNotification({ id: 'sdk-hook', url: 'https://example.com/hook', signing_key: key } as never);
    expect(created.status).toBe(201);
    expect(created.data.data).toEqual({ id: 'sdk-hook', type: 'webhook', url: 'https://example.com/hook', has_signing_key: true });
    expect(JSON.stringify(created.data)).not.toContain(key);
    expect((await client.notifications.getNotification('sdk-hook')).data.data).toMatchObject({ id: 'sdk-hook' });
    expect((await client.notifications.listNotifications(1, 10)).data.data!.map((n) => n.id)).toContain('sdk-hook');
    const updated = await client.notifications.updateNotification('sdk-hook', { url: 'https://example.com/hook2', signing_key: '' });
    expect(updated.data.data).toMatchObject({ url: 'https://example.com/hook2', has_signing_key: false });
    expect((await client.notifications.deleteNotification('sdk-hook')).data.data).toBe('Notification deleted successfully');
    const gone = await sdkError(client.notifications.getNotification('sdk-hook'));
    expect({ status: gone.status, message: gone.body.message }).toEqual({ status: 404, message: 'Notification not found' });
    const duplicate = async () => client.notifications.createNotification({ id: 'dup', url: 'https://example.com/x' } as never);
    await duplicate();
    const conflict = await sdkError(duplicate());
    expect({ status: conflict.status, message: conflict.body.message }).toEqual({ status: 409, message: 'Notification with this ID already exists' });
  });

  it('answers no plugins when none are configured, and sponsored transactions with 404 in the envelope', async () => {
    const list = await client.plugins.listPlugins(1, 10);
    expect(list.data).toMatchObject({ success: true, data: [], pagination: { current_page: 1, per_page: 10, total_items: 0 } });
    const plugin = 'Plugin with id p1 not found';
    const cases: [() => Promise<unknown>, string, string][] = [
      [() => client.plugins.getPlugin('p1'), plugin, plugin],
      [() => client.plugins.callPlugin('p1', { params: {} } as never), plugin, plugin],
      [() => client.plugins.callPluginGet('p1'), plugin, plugin],
      [() => client.plugins.updatePlugin('p1', {} as never), plugin, plugin],
      [
        () => client.relayers.quoteSponsoredTransaction('evm-relayer', {} as never),
        'Not Found',
        'Sponsored (gasless) transactions: not available on this service yet',
      ],
      [
        () => client.relayers.buildSponsoredTransaction('evm-relayer', {} as never),
        'Not Found',
        'Sponsored (gasless) transactions: not available on this service yet',
      ],
    ];
    for (const [call, message, error] of cases) {
      const res = await sdkError(call(), error);
      expect({ status: res.status, message: res.body.message, error: res.body.error }).toEqual({ status: 404, message, error });
    }
    // Behind the token, like every other route.
    const anonymous = await svc.request('GET', '/api/v1/plugins', undefined, { authorization: '' });
    expect(anonymous.status).toBe(401);
  });

  it('a wrong token is refused with 401 through the client', async () => {
    const other = await sdkClient(svc, 'not-the-key-not-the-key-not-the-key-0');
    try {
      const res = await sdkError(other.relayers.listRelayers());
      expect({ status: res.status, message: res.body.message }).toEqual({ status: 401, message: 'Unauthorized' });
    } finally {
      await other.close();
    }
  });
});
