// Plugin calls: how long a worker thread takes to start with a plugin loaded, and a call's latency
// with the spare worker ready (calls apart) and without (calls back to back, each waiting for a new
// worker), beside a plain REST read for scale. In process, no HTTP: the service on PGlite with an
// empty config and one trivial plugin.
//
//   npx tsx bench/plugins.ts [--calls 200] [--json]

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseEnv } from '../src/config/env.js';
import { loadPlugins, stopPlugins } from '../src/core/plugins/pool.js';
import type { PluginConfig } from '../src/core/plugins/settings.js';
import { createLogger } from '../src/lib/log.js';
import { startService } from '../src/service.js';
import { median, pct } from './stats.js';

const { values: a } = parseArgs({ options: { calls: { type: 'string', default: '200' }, json: { type: 'boolean', default: false } } });
const calls = Number(a.calls);
const API_KEY = 'bench-api-key-0123456789abcdef-0123456789';
const dir = await mkdtemp(path.join(tmpdir(), 'relayer-bench-plugins-'));
const plugin = path.join(dir, 'echo.ts');
await writeFile(plugin, 'export async function handler(ctx: { params: unknown }) { return ctx.params; }\n');
const configPath = path.join(dir, 'config.json');
await writeFile(configPath, JSON.stringify({ relayers: [], signers: [], notifications: [], networks: [], plugins: [{ id: 'echo', path: plugin }] }));

const figures = (ms: number[]) => ({ p50: median(ms), p99: pct(ms, 99), max: Math.max(...ms) });
const show = (label: string, f: { p50: number; p99: number; max: number }) =>
  console.log(`${label.padEnd(52)} median ${f.p50.toFixed(2)} ms, p99 ${f.p99.toFixed(2)} ms, max ${f.max.toFixed(1)} ms`);

// Start-up per plugin: esbuild compile, then its first worker started with the plugin loaded.
const config: PluginConfig = {
  id: 'echo',
  path: plugin,
  file: plugin,
  where: 'plugins[0]',
  timeout: 30,
  emitLogs: false,
  emitTraces: false,
  forwardLogs: false,
  rawResponse: false,
  allowGetInvocation: false,
  config: null,
  allowNetwork: false,
  freshProcess: false,
};
const starts: number[] = [];
for (let i = 0; i < 20; i++) {
  const t = performance.now();
  const { plugins } = await loadPlugins([config], { concurrency: 1, queue: 0, memoryMb: 128, poolSize: 1 });
  starts.push(performance.now() - t);
  await stopPlugins(plugins);
}

const env = parseEnv({
  API_KEY,
  CONFIG_PATH: configPath,
  DATA_DIR: dir,
  DEVNET: 'false',
  LOG_LEVEL: 'silent',
  RATE_LIMIT_BURST_SIZE: '100000',
  RATE_LIMIT_REQUESTS_PER_SECOND: '100000',
});
const svc = await startService(env, { log: createLogger('silent'), workers: false });
const request = (method: string, p: string, body?: unknown) =>
  svc.app.fetch(
    new Request(`http://bench${p}`, {
      method,
      headers: { authorization: `Bearer ${API_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    }),
  );
async function timed(method: string, p: string, body?: unknown): Promise<number> {
  const t = performance.now();
  const res = await request(method, p, body);
  await res.text();
  if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status}`);
  return performance.now() - t;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const spare: number[] = [];
const backToBack: number[] = [];
const read: number[] = [];
for (let i = 0; i < 10; i++) await timed('GET', '/api/v1/plugins/echo');
for (let i = 0; i < calls; i++) {
  await sleep(250); // the spare worker is ready again
  spare.push(await timed('POST', '/api/v1/plugins/echo/call', { params: { i } }));
  read.push(await timed('GET', '/api/v1/plugins/echo'));
}
for (let i = 0; i < calls; i++) backToBack.push(await timed('POST', '/api/v1/plugins/echo/call', { params: { i } }));
await svc.stop();
await rm(dir, { recursive: true, force: true });

const result = { start: figures(starts.slice(1)), spare: figures(spare), backToBack: figures(backToBack), read: figures(read) };
show('compile and first worker ready (one plugin)', result.start);
show(`call, spare worker ready (${calls} calls, 250 ms apart)`, result.spare);
show(`call, back to back (${calls} calls)`, result.backToBack);
show('REST read of the plugin (GET /api/v1/plugins/echo)', result.read);
if (a.json) console.log(JSON.stringify({ figures: result }));
