import { createServer } from 'node:http';
import { createServerAdapter } from '@whatwg-node/server';
import { ConfigError } from './config/load.js';
import { EnvError, parseEnv } from './config/env.js';
import { createLogger } from './lib/log.js';
import { startService, StartupError } from './service.js';

async function main() {
  const env = parseEnv();
  const log = createLogger(env.logLevel);
  const service = await startService(env, { log });
  let stopping = false;
  // Requests being answered, so a drain waits for them (live-update streams are not waited for).
  let answering = 0;
  let drained: (() => void) | undefined;
  const adapter = createServerAdapter((request: Request) => service.app.fetch(request));
  const server = createServer((req, res) => {
    const streaming = (req.headers.accept ?? '').includes('text/event-stream');
    if (!streaming) {
      answering++;
      res.once('close', () => {
        if (--answering === 0) drained?.();
        if (stopping) server.closeIdleConnections();
      });
    }
    adapter(req, res);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(env.port, env.host, resolve);
  });
  log.info(
    { host: env.host, port: env.port, node: process.version },
    `listening on http://${env.host === '0.0.0.0' ? 'localhost' : env.host}:${env.port} (Node.js ${process.version})`,
  );

  const stop = async (signal: string) => {
    if (stopping) return log.warn({ signal }, 'already shutting down');
    stopping = true;
    const started = Date.now();
    setTimeout(() => {
      log.error(
        { signal, timeoutMs: env.shutdownTimeoutMs },
        `shutdown did not finish within ${env.shutdownTimeoutMs} ms (SHUTDOWN_TIMEOUT_MS); exiting with status 1`,
      );
      service.abandon();
      process.exit(1);
    }, env.shutdownTimeoutMs);
    log.info({ signal, requests: answering }, 'shutting down: no new connections; finishing the requests in progress');
    server.close();
    server.closeIdleConnections();
    if (answering > 0) await new Promise<void>((resolve) => (drained = resolve));
    server.closeAllConnections();
    log.info('requests finished');
    try {
      await service.stop();
    } catch (err) {
      log.error({ err }, 'shutdown failed; exiting with status 1');
      process.exit(1);
    }
    log.info({ ms: Date.now() - started }, 'shut down cleanly');
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((e) => {
  if (e instanceof ConfigError || e instanceof EnvError || e instanceof StartupError) {
    process.stderr.write(`relayer: cannot start: ${e.message}\n`);
  } else {
    process.stderr.write(`relayer: cannot start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  }
  process.exit(1);
});
