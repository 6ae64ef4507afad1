import { describe, expect, it } from 'vitest';
import { freePort, startAnvil } from '../../src/chains/evm/anvil.js';
import { startTestService } from '../support/service.js';
import { hookConfig, hookedService, signaturesOf, statusesFor, subscribe } from '../support/notifications.js';
import { startReceiver, waitFor } from '../support/receiver.js';

const BY_RELAYER = 'subscription($r: ID!) { transactionUpdated(relayerId: $r) { id status hash } }';

describe('webhooks and subscriptions from the EVM pipeline on anvil', () => {
  const env = hookedService();

  it('a transaction sent through REST is reported, change by change, identically by webhook and by subscription', async () => {
    const stream = subscribe(env.svc.app, BY_RELAYER, { r: 'evm-relayer' });
    await stream.response;
    const res = await env.svc.request('POST', '/api/v1/relayers/evm-relayer/transactions', { value: 1, to: '0x000000000000000000000000000000000000dEaD' });
    expect(res.status).toBe(200);
    const { data } = await res.json();

    await waitFor(() => statusesFor(env.receiver.received, data.id).at(-1) === 'confirmed', 'the confirmed event', 30_000);
    const webhook = statusesFor(env.receiver.received, data.id);
    await waitFor(() => stream.events.filter((e) => e.data.transactionUpdated.id === data.id).length === webhook.length, 'the stream');
    await stream.close();

    expect(webhook[0]).toBe('pending');
    expect(webhook).toContain('submitted');
    expect(new Set(webhook).size).toBe(webhook.length);
    expect(
      stream.events
        .map((e) => e.data.transactionUpdated)
        .filter((t) => t.id === data.id)
        .map((t) => t.status),
    ).toEqual(webhook);

    const mine = env.receiver.received.filter((r) => r.body.payload?.id === data.id);
    for (const r of mine) expect(signaturesOf(r)).toMatchObject({ xSignatureValid: true, timestampedValid: true });
    const confirmed = mine.at(-1)!.body.payload;
    expect(confirmed).toMatchObject({ relayer_id: 'evm-relayer', to: '0x000000000000000000000000000000000000dEaD', value: '1', status: 'confirmed' });
    expect(confirmed.hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(stream.events.at(-1).data.transactionUpdated.hash).toBe(confirmed.hash);
  });
});

describe('relayer_state_update from the start-up check', () => {
  it('is sent when the relayer is disabled (chain unreachable) and again when it is re-enabled', async () => {
    const receiver = await startReceiver();
    const port = await freePort();
    const svc = await startTestService({ config: () => hookConfig(receiver.url)({ rpcUrl: `http://127.0.0.1:${port}` }) });
    let anvil: Awaited<ReturnType<typeof startAnvil>> | undefined;
    try {
      const disabled = await waitFor(() => receiver.received.find((r) => r.body.event === 'relayer_state_update'), 'the disabled event', 30_000);
      expect(disabled.body.payload).toMatchObject({
        payload_type: 'relayer',
        id: 'evm-relayer',
        system_disabled: true,
        disabled_reason: { type: 'RpcUnavailable' },
      });
      expect(signaturesOf(disabled)).toMatchObject({ xSignatureValid: true, timestampedValid: true });

      anvil = await startAnvil({ port });
      const events = await waitFor(
        () => {
          const e = receiver.received.filter((r) => r.body.event === 'relayer_state_update');
          return e.length >= 2 && e;
        },
        'the re-enabled event',
        30_000,
      );
      expect(events[1].body.payload).toMatchObject({ id: 'evm-relayer', system_disabled: false, disabled_reason: null });
    } finally {
      await svc.stop();
      await anvil?.stop();
      await receiver.close();
    }
  });
});
