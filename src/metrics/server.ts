import { createServer } from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from '../lib/log.js';

/** The reference system's Prometheus config scrapes the second path. */
export const METRICS_PATHS = ['/metrics', '/debug/metrics/scrape'];

/** The metrics on their own port, without a token: only GET/HEAD of METRICS_PATHS; everything else is a 404. */
export async function startMetricsServer(registry: Registry, host: string, port: number, log: Logger) {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://metrics').pathname;
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !METRICS_PATHS.includes(path)) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not Found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err) => {
        log.error({ err }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  log.info({ host, port: bound }, `metrics on http://${host === '0.0.0.0' ? 'localhost' : host}:${bound}/metrics`);
  return {
    port: bound,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
