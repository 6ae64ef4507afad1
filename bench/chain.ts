// What the relaying benches (bench/evm.ts, bench/many.ts) share: a JSON client for anvil and the
// service, waits, the service as its own process, and CPU time read from /proc.

import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/chains/evm/anvil.js';
import { startFlags } from './flags.js';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const API_KEY = 'bench-api-key-0123456789abcdef-0123456789';
export const RECEIVER = '0x000000000000000000000000000000000000dEaD';
export const auth = { authorization: `Bearer ${API_KEY}` };

export type Client = ReturnType<typeof jsonClient>;

/**
 * POSTs JSON over a pool of keep-alive connections. `fresh()` starts a new pool: anvil closes idle
 * connections early, and a request sent on one it closed meanwhile fails (a raw transaction must
 * not be sent twice blindly), so each phase of a bench starts on fresh ones.
 */
export function jsonClient(maxSockets: number) {
  let agent = new Agent({ keepAlive: true, maxSockets });
  const once = (url: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: any }> => {
    const u = new URL(url);
    const payload = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  };
  /** POST JSON. With `retry` (reads only), a connection reset is retried once. */
  const post = async (url: string, body: unknown, headers: Record<string, string> = {}, retry = true) => {
    try {
      return await once(url, body, headers);
    } catch (e) {
      if (!retry || (e as NodeJS.ErrnoException).code !== 'ECONNRESET') throw e;
      return once(url, body, headers);
    }
  };
  const rpc = async <T = any>(url: string, method: string, params: unknown[] = []): Promise<T> => {
    const { body } = await post(url, { jsonrpc: '2.0', id: 1, method, params }, {}, method !== 'eth_sendRawTransaction');
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result as T;
  };
  return {
    post,
    rpc,
    /** A JSON-RPC batch; the results in order (fails on the first error). */
    async batch<T = any>(url: string, calls: { method: string; params: unknown[] }[], retry = true): Promise<T[]> {
      const { body } = await post(
        url,
        calls.map((c, id) => ({ jsonrpc: '2.0', id, ...c })),
        {},
        retry,
      );
      const answers = (body as { id: number; result?: T; error?: { message: string } }[]).sort((a, b) => a.id - b.id);
      const failed = answers.find((r) => r.error);
      if (failed) throw new Error(`${calls[failed.id].method}: ${failed.error!.message}`);
      return answers.map((r) => r.result as T);
    },
    fresh() {
      agent.destroy();
      agent = new Agent({ keepAlive: true, maxSockets });
    },
    destroy: () => agent.destroy(),
  };
}

export async function waitUntil(check: () => Promise<boolean>, pollMs = 25) {
  while (!(await check())) await new Promise((r) => setTimeout(r, pollMs));
}

/** Waits until `read()` reaches `target`; fails when it stops moving for a minute. */
export async function waitProgress(what: string, read: () => Promise<number>, target: number, pollMs: number) {
  let last = -1;
  let lastAt = performance.now();
  await waitUntil(async () => {
    const now = await read();
    if (now !== last) [last, lastAt] = [now, performance.now()];
    else if (performance.now() - lastAt > 60_000) throw new Error(`no progress for a minute: ${what} at ${now} of ${target}`);
    return now >= target;
  }, pollMs);
}

// Every block of a round is full, and each full block raises the base fee by an eighth: over a run
// of several rounds it would grow without bound (to about 40,000 gwei by a third round) until the
// accounts can no longer pay. Each phase starts again from anvil's initial base fee, so rounds
// compare alike and never run out of funds; within a round the fee still rises as on a busy chain.
const INITIAL_BASE_FEE = '0x3b9aca00'; // 1 gwei

export const blockNumber = async (c: Client, anvilUrl: string) => Number(await c.rpc(anvilUrl, 'eth_blockNumber'));

/**
 * Waits for a new block, mined at the initial base fee. Measurements start just after one: with a
 * block a second, where in the second a run starts would otherwise swing its figure by up to a block.
 */
export async function nextBlock(c: Client, anvilUrl: string) {
  await c.rpc(anvilUrl, 'anvil_setNextBlockBaseFeePerGas', [INITIAL_BASE_FEE]);
  const now = await c.rpc(anvilUrl, 'eth_blockNumber');
  await waitUntil(async () => (await c.rpc(anvilUrl, 'eth_blockNumber')) !== now, 5);
}

/**
 * Sends signed transactions straight to anvil: in nonce order, 100 to a JSON-RPC batch, one batch
 * after the other (the fastest way in; anvil's pool can lose track of one account's transactions
 * that arrive out of order).
 */
export async function sendRaw(c: Client, anvilUrl: string, signed: string[]) {
  for (let i = 0; i < signed.length; i += 100) {
    await c.batch(
      anvilUrl,
      signed.slice(i, i + 100).map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] })),
      false,
    );
  }
}

/** Starts the service (`src/main.ts`, with `npm start`'s flags) on `config`, in `dir`; PGlite there unless `postgres` is given. */
export async function startRelayer(
  config: object,
  dir: string,
  postgres?: string,
): Promise<{ url: string; metricsUrl: string; child: ChildProcess; stop(): Promise<void> }> {
  await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
  const port = await freePort();
  const metricsPort = await freePort();
  const profile = process.env.BENCH_CPU_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, ...startFlags(), '--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      API_KEY,
      HOST: '127.0.0.1',
      PORT: String(port),
      CONFIG_PATH: path.join(dir, 'config.json'),
      DATA_DIR: dir,
      DEVNET: 'false',
      LOG_LEVEL: 'warn',
      METRICS_ENABLED: 'true',
      METRICS_PORT: String(metricsPort),
      RATE_LIMIT_REQUESTS_PER_SECOND: '1000000',
      RATE_LIMIT_BURST_SIZE: '1000000',
      ...(postgres ? { DATABASE_URL: postgres } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitUntil(
    async () =>
      fetch(`${url}/v1/health`).then(
        (r) => r.ok,
        () => false,
      ),
    200,
  );
  return {
    url,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    child,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, process.env.BENCH_CPU_PROFILE ? 5000 : 500));
      child.kill('SIGKILL');
    },
  };
}

/** A process's name and its /proc stat fields from its state on (field 3 is [0]); null when it is gone or not Linux. */
function statOf(pid: number | string | undefined): { comm: string; fields: string[] } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(') ');
    return { comm: stat.slice(stat.indexOf('(') + 1, close), fields: stat.slice(close + 2).split(' ') };
  } catch {
    return null;
  }
}
/** ms of CPU from two /proc tick counters (ticks of 1/100 s): utime + stime at 11, cutime + cstime at 13. */
const ticksMs = (f: string[], at: 11 | 13) => (Number(f[at]) + Number(f[at + 1])) * 10;

/** CPU time a process has used so far, in ms (Linux /proc; 0 elsewhere). */
export function cpuMs(pid: number | undefined): number {
  const s = statOf(pid);
  return s ? ticksMs(s.fields, 11) : 0;
}

/**
 * CPU time this machine's PostgreSQL servers have used so far, in ms: every postgres process's
 * own, and the postmasters' reaped children's (backends that ended); null when there is no
 * `postgres` server URL or the server is not on this machine.
 */
export function postgresCpuMs(url: string | undefined): number | null {
  if (!url || !['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) return null;
  const postgres = new Map<string, string[]>();
  for (const pid of readdirSync('/proc')) {
    const s = /^\d+$/.test(pid) ? statOf(pid) : null; // null too when it ended meanwhile
    if (s?.comm === 'postgres') postgres.set(pid, s.fields);
  }
  let ms = 0;
  for (const f of postgres.values()) ms += ticksMs(f, 11) + (postgres.has(f[1]) ? 0 : ticksMs(f, 13)); // a postmaster: its reaped children too
  return postgres.size > 0 ? ms : null;
}
