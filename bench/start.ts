// CPU and wall time of a start of the built service (dist/main.js), from spawn to a healthy answer,
// on PGlite with one EVM relayer: what every start in production, a restart and a test pays.
//
//   npx tsx bench/start.ts [--runs 9] [--flags "--liftoff-only"] [--json]
//
// The first start creates and migrates the database; each measured start opens a copy of it.
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, startAnvil } from '../src/chains/evm/anvil.js';
import { evmConfig } from '../test/support/service.js';
import { cpuMs, ROOT } from './chain.js';
import { startFlags } from './flags.js';
import { median, spread } from './stats.js';

const { values: a } = parseArgs({ options: { runs: { type: 'string', default: '9' }, flags: { type: 'string' }, json: { type: 'boolean', default: false } } });
const flags = a.flags === undefined ? startFlags() : a.flags.split(/\s+/).filter(Boolean);

const anvil = await startAnvil();
const dir = mkdtempSync(path.join(tmpdir(), 'relayer-bench-start-'));
const config = path.join(dir, 'config.json');
writeFileSync(config, JSON.stringify(evmConfig(anvil.url)));

/** Starts the service on `dataDir`; answers its CPU (ms) and wall time (ms) once healthy, then stops it. */
async function start(dataDir: string): Promise<{ cpuMs: number; wallMs: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [...flags, path.join(ROOT, 'dist/main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      CONFIG_PATH: config,
      DATA_DIR: dataDir,
      API_KEY: 'bench-start-key-0123456789abcdef0123',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
    },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    if (
      await fetch(`http://127.0.0.1:${port}/api/v1/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const wallMs = performance.now() - started;
  const cpu = cpuMs(child.pid);
  child.kill('SIGTERM');
  await exited;
  return { cpuMs: cpu, wallMs };
}

try {
  const base = path.join(dir, 'base');
  await start(base);
  const runs: { cpuMs: number; wallMs: number }[] = [];
  for (let i = 0; i < Number(a.runs); i++) {
    const data = path.join(dir, `run-${i}`);
    cpSync(base, data, { recursive: true });
    runs.push(await start(data));
    rmSync(data, { recursive: true, force: true });
  }
  const cpu = runs.map((r) => r.cpuMs);
  const wall = runs.map((r) => r.wallMs);
  console.log(`start to healthy (dist/main.js ${flags.join(' ')}, PGlite, ${runs.length} runs)`);
  console.log(`  CPU  median ${median(cpu).toFixed(0)} ms (${spread(cpu, 0)})`);
  console.log(`  wall median ${median(wall).toFixed(0)} ms (${spread(wall, 0)})`);
  if (a.json) console.log(JSON.stringify({ bench: 'start', flags, cpuMs: median(cpu), wallMs: median(wall) }));
} finally {
  await anvil.stop();
  rmSync(dir, { recursive: true, force: true });
}
