// Plugin calls (issue #77): how long a plugin takes to compile and get its first process ready, one
// call with a warm pool (calls apart), and calls back to back with 4 in flight, against the targets
// (single call at most 1.5x the worker-thread figure, back to back median at most 20 ms), beside a
// plain REST read for scale. In process, no HTTP: the service on PGlite with an empty config and one
// trivial plugin. The same script runs on the worker-thread tree (before #77) for the comparison;
// --base-single gives its single-call median for the ratio.
//
//   npx tsx bench/plugins.ts [--calls 100] [--in-flight 4] [--base-single 10.2] [--json]

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { parseEnv } from '../src/config/env.js';
import { loadPlugins, stopPlugins } from '../src/core/plugins/pool.js';
import type { PluginConfig } from '../src/core/plugins/settings.js';
import { createLogger } from '../src/lib/log.js';
import { startService } from '../src/service.js';
import { median, pct } from './stats.js';

const { values: a } = parseArgs({
  options: {
    calls: { type: 'string', default: '100' },
    'in-flight': { type: 'string', default: '4' },
    // The worker-thread single-call median measured on the tree before #77 (issue #77: 10.2 ms).
    'base-single': { type: 'string', default: '10.2' },
    json: { type: 'boolean', default: false },
  },
});
const calls = Number(a.calls);
const inFlight = Number(a['in-flight']);
const baseSingle = Number(a['base-single']);
const API_KEY = 'bench-api-key-0123456789abcdef-0123456789';
const dir = await mkdtemp(path.join(tmpdir(), 'relayer-bench-plugins-'));
const pluginDir = path.join(dir, 'plugins');
const dataDir = path.join(dir, 'data');
const plugin = path.join(pluginDir, 'echo.ts');
await mkdir(pluginDir, { recursive: true });
await writeFile(plugin, 'export async function handler(ctx: { params: unknown }) { return ctx.params; }\n');
const configPath = path.join(dir, 'config.json');
await writeFile(configPath, JSON.stringify({ relayers: [], signers: [], notifications: [], networks: [], plugins: [{ id: 'echo', path: plugin }] }));

const figures = (ms: number[]) => ({ p50: median(ms), p99: pct(ms, 99), max: Math.max(...ms) });
const show = (label: string, f: { p50: number; p99: number; max: number }) =>
  console.log(`${label.padEnd(56)} median ${f.p50.toFixed(2)} ms, p99 ${f.p99.toFixed(2)} ms, max ${f.max.toFixed(1)} ms`);

// Start-up per plugin: esbuild compile, then its first process (or worker) started with the plugin loaded.
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
  const { plugins, problems } = await loadPlugins([config], { concurrency: 1, queue: 0, memoryMb: 128, poolSize: 1 });
  if (problems.length) throw new Error(problems.join('\n'));
  starts.push(performance.now() - t);
  await stopPlugins(plugins);
}

const env = parseEnv({
  API_KEY,
  CONFIG_PATH: configPath,
  DATA_DIR: dataDir,
  DEVNET: 'false',
  LOG_LEVEL: 'silent',
  RATE_LIMIT_BURST_SIZE: '100000',
  RATE_LIMIT_REQUESTS_PER_SECOND: '100000',
  PLUGIN_MAX_CONCURRENCY: String(Math.max(4, inFlight)),
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
/** `n` calls, `width` at a time, each timed from its own start. */
async function backToBack(n: number, width: number): Promise<number[]> {
  const out: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++;
        out.push(await timed('POST', '/api/v1/plugins/echo/call', { params: { i } }));
      }
    }),
  );
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const single: number[] = [];
const read: number[] = [];
for (let i = 0; i < 10; i++) await timed('GET', '/api/v1/plugins/echo');
// The pool warmed by a first burst as wide as the measured one.
const firstBurst = figures(await backToBack(inFlight * 2, inFlight));
for (let i = 0; i < calls; i++) {
  await sleep(100); // apart: a spare (or idle) process is ready again
  single.push(await timed('POST', '/api/v1/plugins/echo/call', { params: { i } }));
  read.push(await timed('GET', '/api/v1/plugins/echo'));
}
const burst = await backToBack(calls, inFlight);
await svc.stop();
await rm(dir, { recursive: true, force: true });

const result = { start: figures(starts.slice(1)), single: figures(single), firstBurst, backToBack: figures(burst), read: figures(read) };
show('compile and first process ready (one plugin)', result.start);
show(`one call, pool warm (${calls} calls, 100 ms apart)`, result.single);
show(`first ${inFlight * 2} calls, ${inFlight} in flight (pool growing)`, result.firstBurst);
show(`${calls} calls back to back, ${inFlight} in flight`, result.backToBack);
show('REST read of the plugin (GET /api/v1/plugins/echo)', result.read);
const targets = {
  single: { ratio: result.single.p50 / baseSingle, met: result.single.p50 <= 1.5 * baseSingle },
  backToBack: { met: result.backToBack.p50 <= 20 },
};
console.log(
  `targets: single ${result.single.p50.toFixed(2)} ms = ${targets.single.ratio.toFixed(2)}x the worker threads' ${baseSingle} ms (<= 1.5: ${targets.single.met ? 'met' : 'NOT met'}); back to back median ${result.backToBack.p50.toFixed(2)} ms (<= 20: ${targets.backToBack.met ? 'met' : 'NOT met'})`,
);
if (a.json) console.log(JSON.stringify({ figures: result, targets }));
