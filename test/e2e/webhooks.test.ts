import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/lib/log.js';
import { databaseKinds } from '../support/postgres.js';
import { ROOT, startTestService, type TestService } from '../support/service.js';
import { LIFECYCLE, SIGNING_KEY, acceptTransaction, hookConfig, signaturesOf, statusesFor, walk } from '../support/notifications.js';
import { startReceiver, waitFor, type Received } from '../support/receiver.js';

/** Fast retries so outages of a second or two are recovered from quickly. */
const FAST_RETRIES = { WEBHOOK_RETRY_BASE_MS: '50', WEBHOOK_RETRY_MAX_DELAY_MS: '400', WEBHOOK_TIMEOUT_MS: '2000' };
const ALL_STATUSES = ['pending', ...LIFECYCLE];

const DELIVERIES = `query($id: ID!, $status: DeliveryStatus) { notification(id: $id) { deliveries(perPage: 100, status: $status) {
  items { id event status attempts lastError lastStatusCode transactionId relayerId body createdAt deliveredAt nextAttemptAt }
  pagination { totalItems } } } }`;

async function deliveriesOf(svc: TestService, notificationId = 'hook', status?: string) {
  const { data, errors } = await svc.gql(DELIVERIES, { id: notificationId, status });
  expect(errors).toBeUndefined();
  return data.notification.deliveries.items as any[];
}

function expectVerifiable(received: Received[]) {
  for (const r of received) {
    const s = signaturesOf(r);
    expect(s.xSignatureValid).toBe(true);
    expect(s.timestampedValid).toBe(true);
    expect(s.skewSeconds).toBeLessThan(5);
  }
}

describe.each(await databaseKinds())('webhooks on %s', (db) => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let svc: TestService;
  beforeAll(async () => {
    receiver = await startReceiver();
    svc = await startTestService({ db, anvil: true, config: hookConfig(receiver.url), env: FAST_RETRIES });
  });
  afterAll(async () => {
    await svc?.stop();
    await receiver?.close();
  });

  it('sends every status change of a transaction, in order, in the reference format, signed both ways', async () => {
    const tx = await acceptTransaction(svc.rt);
    await walk(svc.rt, tx.id);
    await waitFor(() => statusesFor(receiver.received, tx.id).length === 5, 'five events');
    expect(statusesFor(receiver.received, tx.id)).toEqual(ALL_STATUSES);

    const mine = receiver.received.filter((r) => r.body.payload?.id === tx.id);
    expectVerifiable(mine);
    const last = mine[4].body;
    expect(Object.keys(last).sort()).toEqual(['event', 'id', 'payload', 'timestamp']);
    expect(last).toMatchObject({
      event: 'transaction_update',
      payload: { payload_type: 'transaction', id: tx.id, relayer_id: 'evm-relayer', status: 'confirmed' },
    });
    expect(new Date(last.timestamp).toISOString()).toBe(last.timestamp);
    expect(new Set(mine.map((r) => r.body.id)).size).toBe(5);

    // The receiver has answered the last request; its row is marked delivered just after.
    const rows = await waitFor(async () => {
      const r = (await deliveriesOf(svc)).filter((d) => d.transactionId === tx.id);
      return r.every((d) => d.status === 'delivered') && r;
    }, 'all marked delivered');
    expect(rows.map((d) => [d.status, d.attempts, d.lastStatusCode])).toEqual(Array(5).fill(['delivered', 1, 200]));
    expect(rows.map((d) => d.id).reverse()).toEqual(mine.map((r) => r.body.id));
    expect(rows[0].body).toEqual(last);
  });

  it('passes the verification code of docs/webhooks.md, which refuses a tampered body, a wrong key and an old timestamp', async () => {
    const doc = await readFile(path.join(ROOT, 'docs/webhooks.md'), 'utf8');
    const code = /```js\n([\s\S]*?)```/.exec(doc)![1];
    const file = path.join(svc.dir, 'verify.mjs');
    await writeFile(file, code);
    const { verify } = await import(pathToFileURL(file).href);
    const tx = await acceptTransaction(svc.rt);
    const r = await waitFor(() => receiver.received.find((x) => x.body.payload?.id === tx.id), 'the event');
    const raw = Buffer.from(r.raw, 'utf8');
    expect(verify(raw, r.headers, SIGNING_KEY)).toBe(true);
    expect(verify(Buffer.from(r.raw.replace('pending', 'failed!'), 'utf8'), r.headers, SIGNING_KEY)).toBe(false);
    expect(verify(raw, r.headers, 'another key')).toBe(false);
    expect(verify(raw, r.headers, SIGNING_KEY, -1)).toBe(false);
  });

  it('keeps each transaction in order when several change at once', async () => {
    const txs = await Promise.all([1, 2, 3].map(() => acceptTransaction(svc.rt)));
    await Promise.all(txs.map((tx) => walk(svc.rt, tx.id)));
    for (const tx of txs) {
      await waitFor(() => statusesFor(receiver.received, tx.id).length === 5, `five events of ${tx.id}`);
      expect(statusesFor(receiver.received, tx.id)).toEqual(ALL_STATUSES);
    }
  });

  it('retries 503 and 429, holding later events of the transaction back meanwhile', async () => {
    const tx = await acceptTransaction(svc.rt);
    let refusals = 0;
    receiver.answer((r) => (r.body.payload?.id === tx.id && refusals < 3 ? [503, 429, 503][refusals++] : 200));
    await walk(svc.rt, tx.id);
    await waitFor(() => statusesFor(receiver.received, tx.id).at(-1) === 'confirmed', 'the last event');
    // Four answers to the first event (three refusals, then 200), then one each for the rest.
    expect(statusesFor(receiver.received, tx.id)).toEqual(['pending', 'pending', 'pending', 'pending', ...LIFECYCLE]);
    const first = (await deliveriesOf(svc)).find((d) => d.transactionId === tx.id && d.body.payload.status === 'pending');
    expect(first).toMatchObject({ status: 'delivered', attempts: 4, lastStatusCode: 200, lastError: 'HTTP 503' });
    receiver.answer(() => 200);
  });

  it('a 4xx is final, does not hold later events back, and can be redelivered', async () => {
    const tx = await acceptTransaction(svc.rt);
    receiver.answer((r) => (r.body.payload?.id === tx.id && r.body.payload.status === 'pending' ? 400 : 200));
    await walk(svc.rt, tx.id);
    await waitFor(() => statusesFor(receiver.received, tx.id).at(-1) === 'confirmed', 'the last event');
    expect(statusesFor(receiver.received, tx.id)).toEqual(['pending', ...LIFECYCLE]);
    const failed = (await deliveriesOf(svc, 'hook', 'failed')).filter((d) => d.transactionId === tx.id);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ status: 'failed', attempts: 1, lastStatusCode: 400, lastError: 'HTTP 400', nextAttemptAt: null });

    receiver.answer(() => 200);
    const again = await svc.gql('mutation($id: ID!) { redeliver(id: $id) { id status attempts } }', { id: failed[0].id });
    expect(again).toEqual({ data: { redeliver: { id: failed[0].id, status: 'pending', attempts: 0 } } });
    await waitFor(() => statusesFor(receiver.received, tx.id).length === 6, 'the redelivery');
    const repeat = receiver.received.filter((r) => r.body.payload?.id === tx.id).at(-1)!;
    expect(repeat.body.id).toBe(failed[0].id);
    expectVerifiable([repeat]);
    const row = await waitFor(async () => (await deliveriesOf(svc)).find((d) => d.id === failed[0].id && d.status === 'delivered'), 'delivered');
    expect(row).toMatchObject({ attempts: 1, lastStatusCode: 200 });

    const unknown = await svc.gql('mutation { redeliver(id: "no-such-delivery") { id } }');
    expect(unknown.errors?.[0]).toMatchObject({ message: 'Delivery with ID no-such-delivery not found', extensions: { code: 'NOT_FOUND' } });
    const later = await acceptTransaction(svc.rt);
    receiver.answer((r) => (r.body.payload?.id === later.id ? 503 : 200));
    const queued = await waitFor(async () => (await deliveriesOf(svc)).find((d) => d.transactionId === later.id && d.attempts > 0), 'a retried delivery');
    const refused = await svc.gql('mutation($id: ID!) { redeliver(id: $id) { id } }', { id: queued.id });
    expect(refused.errors?.[0]).toMatchObject({
      message: 'Bad Request',
      extensions: { code: 'BAD_REQUEST', detail: `delivery ${queued.id} is already queued` },
    });
    receiver.answer(() => 200);
    await waitFor(async () => (await deliveriesOf(svc)).find((d) => d.id === queued.id)?.status === 'delivered', 'its delivery');
  });

  it('announces a relayer paused and resumed with relayer_state_update', async () => {
    const before = receiver.received.length;
    for (const paused of [true, false]) {
      const { errors } = await svc.gql('mutation($p: Boolean!) { updateRelayer(id: "evm-relayer", input: { paused: $p }) { id paused } }', { p: paused });
      expect(errors).toBeUndefined();
    }
    const events = await waitFor(() => {
      const e = receiver.received.slice(before).filter((r) => r.body.event === 'relayer_state_update');
      return e.length === 2 && e;
    }, 'two relayer events');
    expect(events.map((r) => r.body.payload)).toMatchObject([
      { payload_type: 'relayer', id: 'evm-relayer', paused: true, system_disabled: false },
      { payload_type: 'relayer', id: 'evm-relayer', paused: false, system_disabled: false },
    ]);
    expectVerifiable(events);
  });

  it('never puts the signing key in a delivery, an error, a response or a log line', async () => {
    const lines: string[] = [];
    const log = svc.rt.log;
    svc.rt.log = createLogger('debug', new Writable({ write: (chunk, _e, cb) => (lines.push(String(chunk)), cb()) }));
    try {
      const tx = await acceptTransaction(svc.rt);
      let refused = false;
      receiver.answer((r) => (r.body.payload?.id === tx.id && !refused ? ((refused = true), 500) : 200));
      await walk(svc.rt, tx.id, ['sent']);
      await waitFor(() => statusesFor(receiver.received, tx.id).length === 3, 'three requests');
    } finally {
      svc.rt.log = log;
      receiver.answer(() => 200);
    }
    expect(lines.join('')).toContain('will retry');
    expect(lines.join('')).not.toContain(SIGNING_KEY);
    const rows = await svc.rt.db.prisma.delivery.findMany();
    expect(JSON.stringify(rows, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(SIGNING_KEY);
    const res = await svc.request('POST', '/graphql', { query: DELIVERIES, variables: { id: 'hook' } });
    const text = await res.text();
    expect(text).toContain('HTTP 500');
    expect(text).not.toContain(SIGNING_KEY);
    const n = await svc.gql('{ notification(id: "hook") { hasSigningKey } }');
    expect(n.data.notification.hasSigningKey).toBe(true);
  });

  it('sends no signature headers for a notification without a key', async () => {
    const created = await svc.gql('mutation($url: String!) { createNotification(input: { id: "plain", url: $url }) { id hasSigningKey } }', {
      url: receiver.url,
    });
    expect(created.data.createNotification).toEqual({ id: 'plain', hasSigningKey: false });
    await svc.gql('mutation { updateRelayer(id: "evm-relayer", input: { notificationId: "plain" }) { id } }');
    try {
      const tx = await acceptTransaction(svc.rt);
      await waitFor(() => statusesFor(receiver.received, tx.id).length === 1, 'the event');
      const r = receiver.received.find((x) => x.body.payload?.id === tx.id)!;
      expect(r.headers['x-signature']).toBeUndefined();
      expect(r.headers['x-relayer-signature']).toBeUndefined();
      await waitFor(async () => (await deliveriesOf(svc, 'plain'))[0]?.status === 'delivered', 'marked delivered');
      expect((await deliveriesOf(svc, 'plain'))[0]).toMatchObject({ transactionId: tx.id, status: 'delivered', lastStatusCode: 200 });
    } finally {
      await svc.gql('mutation { updateRelayer(id: "evm-relayer", input: { notificationId: "hook" }) { id } }');
    }
  });
});

describe.each(await databaseKinds())('receiver outages on %s', (db) => {
  it('a receiver down for a while gets everything, in order, once it is up', async () => {
    const receiver = await startReceiver({ down: true });
    const svc = await startTestService({ db, anvil: true, config: hookConfig(receiver.url), env: FAST_RETRIES });
    try {
      const txs = [await acceptTransaction(svc.rt), await acceptTransaction(svc.rt)];
      for (const tx of txs) await walk(svc.rt, tx.id);
      // While it is down only the oldest event of each transaction is tried; the rest wait their turn.
      const rows = await waitFor(async () => {
        const r = await deliveriesOf(svc);
        return r.filter((d) => d.attempts >= 3).length === 2 && r;
      }, 'repeated attempts');
      for (const tx of txs) {
        const mine = rows.filter((d) => d.transactionId === tx.id).reverse();
        expect(mine.map((d) => d.body.payload.status)).toEqual(ALL_STATUSES);
        expect(mine[0]).toMatchObject({ status: 'pending', lastStatusCode: null });
        expect(mine[0].lastError).toContain('ECONNREFUSED');
        expect(mine.slice(1).every((d) => d.attempts === 0)).toBe(true);
      }

      await receiver.up();
      for (const tx of txs) await waitFor(() => statusesFor(receiver.received, tx.id).length === 5, 'all events');
      for (const tx of txs) expect(statusesFor(receiver.received, tx.id)).toEqual(ALL_STATUSES);
      expectVerifiable(receiver.received);
      await waitFor(async () => (await deliveriesOf(svc)).every((d) => d.status === 'delivered'), 'all delivered');
    } finally {
      await svc.stop();
      await receiver.close();
    }
  });

  it('a restart of the service in the middle of an outage loses nothing', async () => {
    const receiver = await startReceiver({ down: true });
    const first = await startTestService({ db, anvil: true, config: hookConfig(receiver.url), env: FAST_RETRIES });
    let svc = first;
    try {
      const tx = await acceptTransaction(svc.rt);
      await walk(svc.rt, tx.id, ['sent', 'submitted']);
      await waitFor(async () => (await deliveriesOf(svc)).some((d) => d.attempts >= 2), 'attempts while down');

      svc = await first.restart();
      await walk(svc.rt, tx.id, ['mined', 'confirmed']);
      const queued = (await deliveriesOf(svc)).filter((d) => d.transactionId === tx.id);
      expect(queued.map((d) => [d.body.payload.status, d.status])).toEqual([...ALL_STATUSES].reverse().map((s) => [s, 'pending']));

      await receiver.up();
      await waitFor(() => statusesFor(receiver.received, tx.id).length === 5, 'all events after the restart');
      expect(statusesFor(receiver.received, tx.id)).toEqual(ALL_STATUSES);
      expectVerifiable(receiver.received);
      expect(receiver.received.filter((r) => r.body.event === 'transaction_update')).toHaveLength(5);
    } finally {
      await svc.stop();
      await receiver.close();
    }
  });
});

describe('webhook URLs', () => {
  it('must be http(s); private targets are accepted unless WEBHOOK_BLOCK_PRIVATE_TARGETS is on', async () => {
    const svc = await startTestService({ workers: false });
    try {
      const create = (id: string, url: string) =>
        svc.gql('mutation($id: String!, $url: String!) { createNotification(input: { id: $id, url: $url }) { id } }', { id, url });
      const ftp = await create('ftp', 'ftp://example.com/hook');
      expect(ftp.errors?.[0]).toMatchObject({ message: 'Bad Request', extensions: { code: 'BAD_REQUEST', detail: 'url: must be an http(s) URL' } });
      expect((await create('local', 'http://127.0.0.1:9/hook')).data).toEqual({ createNotification: { id: 'local' } });
    } finally {
      await svc.stop();
    }
  });

  it('with WEBHOOK_BLOCK_PRIVATE_TARGETS, refuses private targets when set and again when sending', async () => {
    const receiver = await startReceiver();
    // The config file is trusted and not checked on load; the delivery-time check still applies.
    const svc = await startTestService({ config: hookConfig(receiver.url), env: { ...FAST_RETRIES, WEBHOOK_BLOCK_PRIVATE_TARGETS: 'true' } });
    try {
      for (const url of ['http://127.0.0.1:9/hook', 'http://localhost:9/hook', 'http://[::1]:9/hook', 'http://169.254.169.254/latest']) {
        const res = await svc.gql('mutation($url: String!) { createNotification(input: { url: $url }) { id } }', { url });
        expect(res.errors?.[0]?.extensions, url).toMatchObject({
          code: 'BAD_REQUEST',
          detail: 'url: private, loopback and link-local targets are not allowed',
        });
      }
      const tx = await acceptTransaction(svc.rt);
      const row = await waitFor(async () => (await deliveriesOf(svc)).find((d) => d.transactionId === tx.id && d.status === 'failed'), 'a refused delivery');
      expect(row.lastError).toContain('private, loopback and link-local targets are not allowed');
      expect(row.attempts).toBe(1);
      expect(receiver.received).toHaveLength(0);
    } finally {
      await svc.stop();
      await receiver.close();
    }
  });
});
