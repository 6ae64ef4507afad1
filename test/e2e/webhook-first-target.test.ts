import { afterAll, beforeAll, expect, it } from 'vitest';
import { evmConfig, startTestService, type TestService } from '../support/service.js';
import { statusesFor } from '../support/notifications.js';
import { startReceiver, waitFor } from '../support/receiver.js';

// A service started without any notification skips its webhook claims until one exists; the
// first notification created and linked through the API must still get every event that follows.

let svc: TestService;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
  svc = await startTestService({ anvil: true, config: ({ rpcUrl }) => evmConfig(rpcUrl) });
});
afterAll(async () => {
  await svc?.stop();
  await receiver?.close();
});

it('a service with no notification at start delivers once one is created and linked', async () => {
  // Several idle polls of the delivery worker find no target first.
  await new Promise((r) => setTimeout(r, 600));
  expect(receiver.received).toHaveLength(0);

  const created = await svc.request('POST', '/api/v1/notifications', { id: 'late', url: receiver.url });
  expect(created.status).toBe(201);
  const linked = await svc.request('PATCH', '/api/v1/relayers/evm-relayer', { notification_id: 'late' });
  expect(linked.status).toBe(200);

  const sent = await svc.request('POST', '/api/v1/relayers/evm-relayer/transactions', {
    to: '0x000000000000000000000000000000000000dEaD',
    value: 1,
    speed: 'fast',
  });
  expect(sent.status).toBe(200);
  const { data } = (await sent.json()) as { data: { id: string } };
  const statuses = () => statusesFor(receiver.received, data.id);
  await waitFor(() => statuses().includes('confirmed'), 'the confirmed webhook', 30_000);
  expect(statuses()[0]).toBe('pending');
  expect(new Set(statuses()).size).toBe(statuses().length);
});
