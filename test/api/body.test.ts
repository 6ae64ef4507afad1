import { Request } from '@whatwg-node/fetch';
import { describe, expect, it } from 'vitest';
import { BodyTooLarge, readBodyText } from '../../src/api/body.js';

// Bodies with a declared length (every request node's HTTP server hands the app that is not chunked)
// are read whole; the limit holds on both paths.
describe('readBodyText', () => {
  const post = (body: string, headers: Record<string, string> = {}) => new Request('http://relayer.test/graphql', { method: 'POST', body, headers });

  it('reads a body with a declared length, bytes as UTF-8', async () => {
    const req = post('{"a":"é€"}');
    expect(req.headers.get('content-length')).toBe(String(Buffer.byteLength('{"a":"é€"}')));
    expect(await readBodyText(req, 100)).toBe('{"a":"é€"}');
  });

  it('keeps a byte order mark (the JSON parser then refuses it) on both paths', async () => {
    expect(await readBodyText(post('\uFEFF{}'), 100)).toBe('\uFEFF{}');
    expect(await readBodyText(new globalThis.Request('http://relayer.test/', { method: 'POST', body: '\uFEFF{}' }), 100)).toBe('\uFEFF{}');
  });

  it('refuses a declared length over the limit before reading', async () => {
    await expect(readBodyText(post('x'.repeat(51)), 50)).rejects.toBeInstanceOf(BodyTooLarge);
  });

  it('refuses a body longer than the limit whatever length it declares', async () => {
    await expect(readBodyText(post('x'.repeat(100), { 'content-length': '10' }), 50)).rejects.toBeInstanceOf(BodyTooLarge);
  });

  it('refuses a streamed body (no declared length) once it passes the limit', async () => {
    const req = new globalThis.Request('http://relayer.test/', { method: 'POST', body: 'x'.repeat(100) });
    expect(req.headers.get('content-length')).toBeNull();
    await expect(readBodyText(req, 50)).rejects.toBeInstanceOf(BodyTooLarge);
    expect(await readBodyText(new globalThis.Request('http://relayer.test/', { method: 'POST', body: 'x'.repeat(50) }), 50)).toBe('x'.repeat(50));
  });
});
