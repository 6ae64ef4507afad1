import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPoster } from '../../../src/core/notifications/send.js';
import { startReceiver } from '../../support/receiver.js';

describe('webhook POSTs', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let other: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
    other = await startReceiver();
  });
  afterAll(async () => {
    await receiver.close();
    await other.close();
  });

  it('sends the exact body with the given headers and reports the status', async () => {
    const poster = createPoster({ timeoutMs: 2000, blockPrivate: false });
    receiver.answer(() => 202);
    const n = receiver.received.length;
    const r = await poster.post(receiver.url, '{"a": 1}', { 'X-Signature': 'sig' });
    expect(r).toEqual({ ok: true, status: 202, retryAfter: null });
    expect(receiver.received[n].raw).toBe('{"a": 1}');
    expect(receiver.received[n].headers).toMatchObject({ 'content-type': 'application/json', 'x-signature': 'sig' });
    poster.close();
  });

  it('does not follow redirects', async () => {
    const poster = createPoster({ timeoutMs: 2000, blockPrivate: false });
    receiver.answer(() => ({ status: 307, headers: { location: other.url } }));
    const r = await poster.post(receiver.url, '{}', {});
    expect(r).toMatchObject({ ok: true, status: 307 });
    expect(other.received).toHaveLength(0);
    poster.close();
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    const poster = createPoster({ timeoutMs: 300, blockPrivate: false });
    receiver.answer(() => 'hang');
    const started = Date.now();
    const r = await poster.post(receiver.url, '{}', {});
    expect(r).toEqual({ ok: false, error: 'no response within 300 ms', blocked: false });
    expect(Date.now() - started).toBeLessThan(2000);
    poster.close();
  });

  it('reports a refused connection as a (retryable) network error', async () => {
    const closed = await startReceiver({ down: true });
    const poster = createPoster({ timeoutMs: 2000, blockPrivate: false });
    const r = await poster.post(closed.url, '{}', {});
    expect(r).toMatchObject({ ok: false, blocked: false });
    expect(r.ok === false && r.error).toContain('ECONNREFUSED');
    poster.close();
  });

  it('with SSRF protection, refuses loopback by IP, by IPv4-mapped IPv6 and by names that resolve to it (checked at connection time)', async () => {
    const poster = createPoster({ timeoutMs: 2000, blockPrivate: true });
    receiver.answer(() => 200);
    const n = receiver.received.length;
    const port = receiver.port;
    for (const url of [`http://127.0.0.1:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://localhost:${port}/`]) {
      const r = await poster.post(url, '{}', {});
      expect(r, url).toMatchObject({ ok: false, blocked: true });
    }
    expect(receiver.received.length).toBe(n);
    poster.close();
  });

  it('refuses non-http(s) URLs', async () => {
    const poster = createPoster({ timeoutMs: 2000, blockPrivate: false });
    expect(await poster.post('ftp://example.com/x', '{}', {})).toMatchObject({ ok: false, blocked: true });
    poster.close();
  });
});
