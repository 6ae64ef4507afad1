import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../src/chains/evm/anvil.js';
import path from 'node:path';
import { seedPglite } from './pglite.js';
import { API_KEY, ROOT } from './service.js';

/** The compiled service the global setup builds (test/support/global-setup.ts). */
export const MAIN = path.join(ROOT, 'dist/main.js');
/**
 * Node flags of a spawned service. --liftoff-only: V8 runs WebAssembly (PGlite's PostgreSQL,
 * Prisma's query compiler) from its baseline compiler only, without recompiling hot functions with
 * TurboFan. The same code runs; a process that lives seconds starts on a third less CPU (4.3 s to
 * 2.9 s on PGlite, 3.0 s to 2.4 s on PostgreSQL, on the 2-core CI machine), and the suite starts
 * hundreds of them.
 */
export const NODE_FLAGS = ['--liftoff-only'];

export interface Instance {
  url: string;
  process: ChildProcess;
  /** Output so far (stdout and stderr), for failure messages. */
  output(): string;
  /** An HTTP request to this instance with the API key. */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** SIGKILL: no shutdown code runs, as when a machine dies. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** The real service as its own process (compiled `src/main.ts`), listening on a free port. */
export async function startInstance(env: Record<string, string>): Promise<Instance> {
  const port = await freePort();
  if (env.DATA_DIR && !env.DATABASE_URL) await seedPglite(env.DATA_DIR);
  const child = spawn(process.execPath, [...NODE_FLAGS, MAIN], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, API_KEY, HOST: '127.0.0.1', PORT: String(port), DEVNET: 'false', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`instance exited with ${child.exitCode}:\n${output}`);
    const ok = await fetch(`${url}/v1/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`instance did not become healthy:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    process: child,
    output: () => output,
    request: (method, path, body, headers = {}) =>
      fetch(url + path, {
        method,
        headers: { authorization: `Bearer ${API_KEY}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    async kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

const LIST = `query L($relayerId: ID!, $page: Int) { relayerTransactions(relayerId: $relayerId, page: $page, perPage: 100) {
  items { id status statusReason nonce hash value to } pagination { totalItems } } }`;

/** Every transaction of the relayer, read page by page through GraphQL (the order the list gives). */
export async function allTransactions(instance: Instance, relayerId = 'evm-relayer'): Promise<any[]> {
  const out: any[] = [];
  for (let page = 1; page <= 10_000; page++) {
    const res = await instance.request('POST', '/graphql', { query: LIST, variables: { relayerId, page } });
    const body = (await res.json()) as any;
    if (body.errors) throw new Error(JSON.stringify(body.errors));
    const { items, pagination } = body.data.relayerTransactions;
    out.push(...items);
    if (out.length >= pagination.totalItems || items.length === 0) break;
  }
  return out;
}
