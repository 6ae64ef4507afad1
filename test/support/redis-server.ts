// A private redis-server for tests that kill it and bring it back: a free port on 127.0.0.1, a temp
// dir, no persistence (a restarted server starts empty, as one that lost its memory).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../src/chains/evm/anvil.js';

export interface RedisServer {
  url: string;
  port: number;
  /** SIGKILL: the server is gone at once, its data with it. */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
  destroy(): Promise<void>;
}

export async function startRedisServer(): Promise<RedisServer> {
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-redis-'));
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    child = proc;
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
      const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      client.on('error', () => {});
      const up = await client
        .connect()
        .then(
          () => client.ping(),
          () => '',
        )
        .catch(() => '');
      client.disconnect();
      if (up === 'PONG') return;
      if (Date.now() > deadline) throw new Error('redis-server did not answer in 20 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const kill = async () => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url,
    port,
    kill,
    start,
    async destroy() {
      await kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
