import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES, PostTimeoutError, postJson } from '../../src/lib/post.js';

let server: Server | undefined;
const connections: string[] = [];

async function serve(handle: (req: IncomingMessage, res: ServerResponse, body: string) => void): Promise<URL> {
  server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => handle(req, res, body));
  });
  server.on('connection', (socket) => connections.push(`${socket.remotePort}`));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/rpc?key=secret`);
}

afterEach(async () => {
  const s = server;
  server = undefined;
  if (!s) return;
  s.closeAllConnections();
  await new Promise((r) => s.close(r));
  connections.length = 0;
});

describe('postJson', () => {
  it('posts the body as JSON and reads the whole answer, on one kept-alive connection', async () => {
    const url = await serve((req, res, body) => {
      res.writeHead(req.url === '/rpc?key=secret' && req.headers['content-type'] === 'application/json' ? 200 : 400);
      res.end(`echo ${body}`);
    });
    const first = await postJson(url, '{"a":"é"}', 1000);
    const second = await postJson(url, '[1]', 1000);
    expect(first).toEqual({ ok: true, status: 200, text: 'echo {"a":"é"}' });
    expect(second).toEqual({ ok: true, status: 200, text: 'echo [1]' });
    expect(connections).toHaveLength(1);
  });

  it('gives a status that is not 2xx as it is, without following a redirect', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(307, { location: 'http://127.0.0.1:1/' });
      res.end('moved');
    });
    expect(await postJson(url, '{}', 1000)).toEqual({ ok: false, status: 307, text: 'moved' });
  });

  it('waits past the idle time of kept-alive connections for an answer that comes before the deadline', async () => {
    const url = await serve((_req, res) => setTimeout(() => res.end('late'), 4500));
    expect(await postJson(url, '{}', 10_000)).toEqual({ ok: true, status: 200, text: 'late' });
  }, 15_000);

  it('fails at the deadline when the answer stops half way', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.write('{"partial":');
    });
    const started = performance.now();
    await expect(postJson(url, '{}', 300)).rejects.toBeInstanceOf(PostTimeoutError);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('fails when the connection closes before the whole answer', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'content-length': '100' });
      res.write('{"partial":');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    await expect(postJson(url, '{}', 5000)).rejects.toThrow();
  });

  it('refuses an answer larger than the limit instead of buffering it', async () => {
    const chunk = Buffer.alloc(2 ** 20, 'x');
    const url = await serve((_req, res) => {
      res.writeHead(200);
      const more = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', more);
      };
      more();
      res.on('error', () => {});
    });
    await expect(postJson(url, '{}', 30_000)).rejects.toThrow(`answer larger than ${MAX_ANSWER_BYTES} bytes`);
  });

  it('reports a refused connection and a URL that is not http(s)', async () => {
    await expect(postJson(new URL('http://127.0.0.1:1/'), '{}', 1000)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await expect(postJson(new URL('ws://127.0.0.1:1/'), '{}', 1000)).rejects.toThrow('not an http(s) URL: ws:');
  });
});
