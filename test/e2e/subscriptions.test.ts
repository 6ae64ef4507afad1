import { describe, expect, it } from 'vitest';
import { LIFECYCLE, acceptTransaction, hookedService, statusesFor, subscribe, walk } from '../support/notifications.js';
import { waitFor } from '../support/receiver.js';

const BY_RELAYER = 'subscription($r: ID!) { transactionUpdated(relayerId: $r) { id status relayerId } }';
const BY_TRANSACTION = 'subscription($t: ID!) { transactionUpdated(transactionId: $t) { id status hash } }';

describe('transactionUpdated over server-sent events', () => {
  const env = hookedService();

  it('streams the same status sequence as the webhook, per relayer and per transaction', async () => {
    const relayerStream = subscribe(env.svc.app, BY_RELAYER, { r: 'evm-relayer' });
    expect((await relayerStream.response).headers.get('content-type')).toContain('text/event-stream');
    const tx = await acceptTransaction(env.svc.rt);
    const txStream = subscribe(env.svc.app, BY_TRANSACTION, { t: tx.id });
    await txStream.response;
    await walk(env.svc.rt, tx.id);

    await waitFor(() => statusesFor(env.receiver.received, tx.id).length === 5, 'the webhooks');
    const webhook = statusesFor(env.receiver.received, tx.id);
    await waitFor(() => relayerStream.events.length === 5 && txStream.events.length === 4, 'the streams');
    await relayerStream.close();
    await txStream.close();

    expect(webhook).toEqual(['pending', ...LIFECYCLE]);
    expect(relayerStream.events.map((e) => e.data.transactionUpdated)).toEqual(webhook.map((status) => ({ id: tx.id, status, relayerId: 'evm-relayer' })));
    // Subscribed after the transaction was accepted: every change from then on.
    expect(txStream.events.map((e) => e.data.transactionUpdated.status)).toEqual(webhook.slice(1));
    expect(txStream.events.at(-1).data.transactionUpdated).toEqual({ id: tx.id, status: 'confirmed', hash: `0x${'ab'.repeat(32)}` });
  });

  it('needs the API key', async () => {
    const stream = subscribe(env.svc.app, BY_RELAYER, { r: 'evm-relayer' }, null);
    const res = await stream.response;
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ errors: [{ message: 'Unauthorized', extensions: { code: 'UNAUTHORIZED' } }] });
    const wrong = subscribe(env.svc.app, BY_RELAYER, { r: 'evm-relayer' }, 'not-the-key-0123456789-0123456789-0123456789');
    expect((await wrong.response).status).toBe(401);
  });

  it('answers an unknown transaction or relayer with a not-found error and ends the stream', async () => {
    for (const [query, variables, message] of [
      [BY_TRANSACTION, { t: 'no-such-tx' }, 'Transaction with ID no-such-tx not found'],
      [BY_RELAYER, { r: 'no-such-relayer' }, 'Relayer with ID no-such-relayer not found'],
    ] as const) {
      const stream = subscribe(env.svc.app, query, variables);
      await stream.ended;
      expect(stream.events).toHaveLength(1);
      expect(stream.events[0].errors).toMatchObject([{ message, extensions: { code: 'NOT_FOUND' } }]);
    }
  });
});
