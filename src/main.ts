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
  const server = createServer(createServerAdapter((request: Request) => service.app.fetch(request)));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(env.port, env.host, resolve);
  });
  log.info({ host: env.host, port: env.port }, `listening on http://${env.host === '0.0.0.0' ? 'localhost' : env.host}:${env.port}`);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    server.close();
    server.closeAllConnections();
    await service.stop();
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
