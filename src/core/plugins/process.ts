import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Thrown } from './outcome.js';
import { keepLine } from './outcome.js';
import type { LoadedPlugin, PluginLimits, Plugins, Started } from './loaded.js';

// A plugin's process: Node with its permission model on (--permission), reading only the plugin's
// folder, the node_modules folders its imports resolve from and the child script; no writes, no
// child processes, workers, addons, WASI or inspector; the network only with allow_network. Its
// environment is empty, and it speaks to the service over IPC only (core/plugins/child.mjs).

export const CHILD = fileURLToPath(new URL('./child.mjs', import.meta.url));

/** The flags this service relies on: the permission model, and its network control (Node 25 and later). */
const NEEDED = ['--permission', '--allow-fs-read', '--allow-net'];

/** Why plugins cannot run on this Node (its version, the flags it takes), or undefined. Pure. */
export function permissionProblem(version: string, flags: { has(flag: string): boolean }): string | undefined {
  const missing = NEEDED.filter((f) => !flags.has(f));
  if (!missing.length) return undefined;
  return `plugins run under Node's permission model with network control (${NEEDED.join(', ')}: Node 25 or later), which Node ${version} lacks (${missing.join(', ')}): run the service on Node 26, or remove the plugins from the config file`;
}

/** What the plugin's process may read: the child script, the plugin's folder and each node_modules folder a bare import would look in. */
export function readsOf(file: string, exists: (p: string) => boolean = existsSync): string[] {
  const dir = path.dirname(file);
  const reads = [CHILD, dir];
  for (let d = dir; ; d = path.dirname(d)) {
    const modules = path.join(d, 'node_modules');
    if (path.basename(d) !== 'node_modules' && exists(modules) && !reads.includes(modules)) reads.push(modules);
    if (path.dirname(d) === d) break;
  }
  return reads;
}

/** A service file (config, data folder, keystore) a plugin's process could read; undefined when none. Pure. */
export function exposed(reads: string[], guarded: string[]): { read: string; file: string } | undefined {
  for (const file of guarded) {
    const abs = path.resolve(file);
    for (const read of reads) {
      const rel = path.relative(read, abs);
      if (rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))) return { read, file: abs };
    }
  }
  return undefined;
}

/** Node's arguments for a plugin's process. Pure. */
export function childArgs(reads: string[], limits: Pick<PluginLimits, 'memoryMb'>, allowNetwork: boolean): string[] {
  return [
    '--permission',
    ...reads.map((r) => `--allow-fs-read=${r}`),
    ...(allowNetwork ? ['--allow-net'] : []),
    `--max-old-space-size=${limits.memoryMb}`,
    CHILD,
  ];
}

const OOM = /JavaScript heap out of memory|Reached heap limit/;

/** Starts a process of the plugin and loads its code there; `ready` says when it is loaded. */
export function startProcess(plugins: Plugins, p: LoadedPlugin): Started {
  // The same Node as the service's; the service's environment (API_KEY, DATABASE_URL, ...) is not the plugin's.
  const child = spawn(process.execPath, childArgs(p.reads, plugins.limits, p.config.allowNetwork), {
    cwd: path.dirname(p.config.file),
    env: {},
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'json',
  });
  const started: Started = { child, ready: Promise.resolve(), output: [], outOfMemory: false, calls: 0 };
  plugins.workers.add(child);
  p.procs.add(started);
  child.once('exit', () => {
    plugins.workers.delete(child);
    p.procs.delete(started);
    const i = p.idle.indexOf(started);
    if (i >= 0) p.idle.splice(i, 1);
  });
  const line = (level: string, text: string) => (started.sink ? started.sink(level, text) : keepLine(started.output, level, text));
  child.stdout?.on('data', (b: Buffer) => line('log', b.toString().trimEnd()));
  child.stderr?.on('data', (b: Buffer) => {
    const text = b.toString();
    if (OOM.test(text)) started.outOfMemory = true;
    line('error', text.trimEnd());
  });
  started.ready = new Promise<void>((resolve, reject) => {
    const onMessage = (m: { type?: string; error?: Thrown }) => {
      if (m?.type === 'ready') resolve();
      else if (m?.type === 'failed') reject(new Error(m.error?.message ?? 'the plugin failed to load'));
      else return;
      child.off('message', onMessage);
    };
    child.on('message', onMessage);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      const last = started.output.filter((l) => l.level === 'error').at(-1)?.message;
      reject(new Error(`the plugin's process exited (${signal ?? `code ${code}`}) while loading${last ? `: ${last}` : ''}`));
    });
  });
  started.ready.catch(() => child.kill('SIGKILL'));
  child.send({ type: 'load', file: p.config.file, code: p.code });
  return started;
}

export function stopProcess(s: Started) {
  if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
}
