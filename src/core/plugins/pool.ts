import { randomUUID } from 'node:crypto';
import { build } from 'esbuild';
import type { Logger } from '../../lib/log.js';
import type { Runtime } from '../runtime.js';
import { keyProblem, MAX_VALUE_BYTES, pluginKv } from './kv.js';
import { type CallResult, deniedOf, deniedResult, ended, keepLine, type LogEntry, MAX_ENTRIES, succeeded, threw, type Thrown, WAIT_DONE } from './outcome.js';
import type { LoadedPlugin, PluginLimits, Plugins, Started } from './loaded.js';
import { exposed, permissionProblem, readsOf, startProcess, stopProcess } from './process.js';
import type { PluginConfig, PluginSettings } from './settings.js';

// Plugins run in processes of their own under Node's permission model (core/plugins/process.ts,
// core/plugins/child.mjs), one call at a time per process. Each plugin keeps up to PLUGIN_POOL_SIZE
// started processes between calls, so calls back to back do not wait for a start; one with
// `fresh_process` gets a new process for every call, a spare started ahead. A process that timed
// out, ran out of memory or exited is stopped and, when none is left, replaced at once. A plugin
// runs at most `concurrency` calls at once and keeps at most `queue` waiting; past that a call is
// answered 429.

/** The context a call gives the handler, besides api and kv. */
export interface CallContext {
  params: unknown;
  headers: Record<string, string[]>;
  route: string;
  method: string;
  query: Record<string, string[]>;
}

/** Runs one of ctx.api's operations as the caller, through the service's own API; rejects with the Thrown fields. */
export type PluginApi = (op: ApiOp, relayerId: string, payload: unknown) => Promise<unknown>;
export const API_OPS = ['sendTransaction', 'getTransaction', 'getRelayer', 'getRelayerStatus', 'signTransaction', 'rpc'] as const;
export type ApiOp = (typeof API_OPS)[number];

/** A plugin's source as one CommonJS module: its own files bundled, package imports left to resolve from its folder. */
export async function compile(file: string): Promise<string> {
  const out = await build({
    entryPoints: [file],
    bundle: true,
    packages: 'external',
    platform: 'node',
    format: 'cjs',
    target: 'node22',
    write: false,
    logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

/**
 * Compiles each plugin and loads it in a first process: a plugin that does not compile or load, or
 * whose process could read one of `guarded` (the config file, the data folder, keystores), is a
 * problem named by its config entry, all of them listed at once. No plugin runs on a Node without
 * the permission model's network control.
 */
export async function loadPlugins(configs: PluginConfig[], limits: PluginLimits, guarded: string[] = []): Promise<{ plugins: Plugins; problems: string[] }> {
  const plugins: Plugins = { byId: new Map(), limits, workers: new Set(), stopped: false };
  if (!configs.length) return { plugins, problems: [] };
  const unsupported = permissionProblem(process.version, process.allowedNodeEnvironmentFlags);
  if (unsupported) return { plugins, problems: [`plugins: ${unsupported}`] };
  const loaded = await Promise.all(
    configs.map(async (config): Promise<LoadedPlugin | string> => {
      const reads = readsOf(config.file);
      const seen = exposed(reads, guarded);
      if (seen)
        return `${config.where}.path: its process could read ${seen.file} (it reads ${seen.read}): put the plugin in a folder that holds none of the service's files`;
      let code: string;
      try {
        code = await compile(config.file);
      } catch (e) {
        const errors = (e as { errors?: { text: string; location?: { file: string; line: number } | null }[] }).errors;
        const why = errors?.length
          ? errors.map((x) => (x.location ? `${x.location.file}:${x.location.line}: ${x.text}` : x.text)).join('; ')
          : (e as Error).message;
        return `${config.where}.path: does not compile: ${why}`;
      }
      const p: LoadedPlugin = { config, code, reads, idle: [], procs: new Set(), running: 0, waiting: [] };
      const first = startProcess(plugins, p);
      try {
        await first.ready;
      } catch (e) {
        return `${config.where}.path: does not load: ${(e as Error).message}`;
      }
      p.idle.push(first);
      return p;
    }),
  );
  const problems = loaded.filter((p): p is string => typeof p === 'string');
  for (const p of loaded) if (typeof p !== 'string') plugins.byId.set(p.config.id, p);
  if (problems.length) await stopPlugins(plugins);
  return { plugins, problems };
}

export async function stopPlugins(plugins: Plugins) {
  plugins.stopped = true;
  const all = [...plugins.workers];
  await Promise.all(
    all.map((child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGKILL');
      return gone;
    }),
  );
}

/** A started process for a call: an idle one of the pool (the most recently used), else a new one. */
function take(plugins: Plugins, p: LoadedPlugin): Started {
  if (!p.config.freshProcess) return p.idle.pop() ?? startProcess(plugins, p);
  const taken = p.idle.shift() ?? startProcess(plugins, p);
  if (!plugins.stopped) p.idle.push(startProcess(plugins, p));
  return taken;
}

/** After a call: a sound process back to the pool while it has room, else stopped; a pool left empty by a stopped one is refilled. */
function giveBack(plugins: Plugins, p: LoadedPlugin, s: Started, sound: boolean) {
  s.sink = undefined;
  s.output.length = 0;
  const keep = sound && !p.config.freshProcess && !plugins.stopped && p.idle.length < plugins.limits.poolSize;
  if (keep) p.idle.push(s);
  else stopProcess(s);
  if (!sound && !plugins.stopped && !p.idle.length) p.idle.push(startProcess(plugins, p));
}

/** Waits for a slot of the plugin's; false when its queue is full. The slot is given back with `leave`. */
export async function enter(plugins: Plugins, p: LoadedPlugin): Promise<boolean> {
  if (p.running < plugins.limits.concurrency) {
    p.running++;
    return true;
  }
  if (p.waiting.length >= plugins.limits.queue) return false;
  // The slot is handed over by `leave`, so no call can take it in between.
  await new Promise<void>((resolve) => p.waiting.push(resolve));
  return true;
}

export function leave(p: LoadedPlugin) {
  const next = p.waiting.shift();
  if (next) next();
  else p.running--;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const apiError = (message: string, status: number, code: string): Thrown => ({ message, status, code });

/** The Thrown fields of an error answered to the plugin's process. */
function asThrown(e: unknown): Thrown {
  const o = (e ?? {}) as Thrown;
  return { message: typeof o.message === 'string' ? o.message : String(e), status: o.status, code: o.code, details: o.details };
}

/** Runs one call in a process of the plugin, under its settings; never rejects. */
export async function runCall(rt: Runtime, p: LoadedPlugin, settings: PluginSettings, ctx: CallContext, api: PluginApi, log: Logger): Promise<CallResult> {
  const plugins = rt.plugins;
  const { id } = p.config;
  const proc = take(plugins, p);
  const { child } = proc;
  try {
    await proc.ready;
  } catch (e) {
    return ended('exited', 500, `plugin ${id} could not start: ${(e as Error).message}`);
  }
  const call = ++proc.calls;
  const logs: LogEntry[] = [...proc.output];
  const traces: unknown[] = [];
  const kv = pluginKv(rt.db.prisma, id);
  const locks = new Map<string, string>();
  let settled = false;
  let sound = true;

  const forward = (entry: LogEntry) => {
    if (!settings.forwardLogs) return;
    const level = entry.level === 'error' ? 'error' : entry.level === 'warn' ? 'warn' : entry.level === 'debug' || entry.level === 'trace' ? 'debug' : 'info';
    log[level]({ plugin: id }, entry.message);
  };
  proc.output.forEach(forward);
  const line = (level: string, message: string) => {
    if (keepLine(logs, level, message)) forward(logs[logs.length - 1]);
  };
  proc.sink = line;
  const tell = (m: object) => {
    if (child.connected) child.send(m, () => {});
  };

  async function kvOp(m: Record<string, unknown>): Promise<unknown> {
    const op = m.op;
    if (op === 'listKeys') return kv.listKeys(typeof m.pattern === 'string' ? m.pattern : '*');
    if (op === 'clear') return kv.clear();
    const problem = keyProblem(m.key);
    if (problem) throw apiError(problem, 400, 'INVALID_KEY');
    const key = m.key as string;
    if (op === 'get') return kv.get(key);
    if (op === 'del') return kv.del(key);
    if (op === 'exists') return kv.exists(key);
    if (op === 'set') {
      if (typeof m.value !== 'string') throw apiError('value must be JSON', 400, 'INVALID_VALUE');
      if (Buffer.byteLength(m.value) > MAX_VALUE_BYTES) throw apiError(`value is larger than ${MAX_VALUE_BYTES} bytes of JSON`, 400, 'VALUE_TOO_LARGE');
      const ttl = typeof m.ttlSec === 'number' && Number.isFinite(m.ttlSec) && m.ttlSec > 0 ? Math.min(m.ttlSec, 10 * 365 * 86400) : undefined;
      return kv.set(key, m.value, ttl);
    }
    throw apiError(`unknown kv operation ${String(op)}`, 400, 'INVALID_OPERATION');
  }

  async function lock(m: Record<string, unknown>): Promise<string | null> {
    const problem = keyProblem(m.key);
    if (problem) throw apiError(problem, 400, 'INVALID_KEY');
    const key = m.key as string;
    const ttl = typeof m.ttlSec === 'number' && m.ttlSec > 0 ? Math.min(m.ttlSec, 3600) : 30;
    const owner = randomUUID();
    for (let wait = 25; !settled; wait = Math.min(wait * 2, 250)) {
      if (await kv.lock(key, owner, ttl)) {
        // Taken after the call ended: give it back at once.
        if (settled) await kv.unlock(key, owner);
        else locks.set(owner, key);
        return owner;
      }
      if (m.onBusy === 'skip') return null;
      if (m.onBusy !== 'wait') throw apiError('lock busy', 409, 'LOCK_BUSY');
      await sleep(wait);
    }
    return null;
  }

  async function waitFor(m: Record<string, unknown>): Promise<unknown> {
    const options = (m.options ?? {}) as { interval?: unknown; timeout?: unknown };
    const interval = typeof options.interval === 'number' && options.interval > 0 ? Math.max(50, options.interval) : 5000;
    const timeout = typeof options.timeout === 'number' && options.timeout > 0 ? options.timeout : 60_000;
    const relayerId = String(m.relayerId);
    const transactionId = String(m.transactionId);
    const until = Date.now() + timeout;
    const events = rt.notifications.events.subscribe('transaction:id', transactionId)[Symbol.asyncIterator]();
    try {
      while (!settled) {
        const tx = (await api('getTransaction', relayerId, { transactionId })) as { status?: string };
        if (WAIT_DONE.has(String(tx?.status))) return tx;
        if (Date.now() >= until) throw apiError(`Transaction ${transactionId} timed out after ${timeout}ms`, 504, 'WAIT_TIMEOUT');
        // A status change wakes the wait early; the interval is the fallback.
        await Promise.race([sleep(Math.min(interval, until - Date.now())), events.next()]);
      }
      return null;
    } finally {
      void events.return?.();
    }
  }

  async function answer(m: Record<string, unknown>): Promise<unknown> {
    switch (m.kind) {
      case 'api': {
        const op = m.op as ApiOp;
        if (!API_OPS.includes(op)) throw apiError(`unknown relayer operation ${String(m.op)}`, 400, 'INVALID_OPERATION');
        if (traces.length < MAX_ENTRIES) traces.push({ relayerId: String(m.relayerId), method: op, payload: m.payload ?? null });
        return api(op, String(m.relayerId), m.payload);
      }
      case 'wait':
        if (traces.length < MAX_ENTRIES)
          traces.push({ relayerId: String(m.relayerId), method: 'transactionWait', payload: { transactionId: String(m.transactionId) } });
        return waitFor(m);
      case 'kv':
        return kvOp(m);
      case 'lock':
        return lock(m);
      case 'unlock': {
        const key = locks.get(String(m.token));
        if (key === undefined) return false;
        locks.delete(String(m.token));
        await kv.unlock(key, String(m.token));
        return true;
      }
      default:
        throw apiError(`unknown request ${String(m.kind)}`, 400, 'INVALID_OPERATION');
    }
  }

  const timeoutMs = settings.timeout * 1000;
  let onMessage: (m: Record<string, unknown>) => void = () => {};
  let onError: (e: Error) => void = () => {};
  let onClose: (code: number | null, signal: NodeJS.Signals | null) => void = () => {};
  const result = await new Promise<CallResult>((resolve) => {
    const finish = (r: CallResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const timer = setTimeout(() => {
      sound = false;
      finish(ended('timeout', 504, `plugin ${id} did not answer within ${settings.timeout} s and was stopped`, logs, traces));
    }, timeoutMs);
    onMessage = (m) => {
      if (settled || m === null || typeof m !== 'object') return;
      // Work left over from an earlier call of this process is not this call's; if it failed, the
      // process is replaced once this call ends.
      if (m.call !== call) {
        if (m.fatal) sound = false;
        return;
      }
      if (m.type === 'log') line(String(m.level), String(m.message));
      else if (m.type === 'ask') {
        answer(m).then(
          (value) => !settled && tell({ type: 'answer', id: m.id, ok: true, value }),
          (e) => {
            // An answer with a status is the plugin's to see; anything else (the database failing) is logged, not shown.
            const known = e && typeof (e as Thrown).status === 'number';
            if (!known) log.warn({ plugin: id, err: e }, 'plugin request failed');
            const error = known ? asThrown(e) : { message: 'Internal Server Error', status: 500, code: 'INTERNAL' };
            if (!settled) tell({ type: 'answer', id: m.id, ok: false, error });
          },
        );
      } else if (m.type === 'done') {
        if (m.fatal) sound = false;
        if (m.ok) {
          let data: unknown = null;
          try {
            data = JSON.parse(String(m.json));
          } catch {
            return finish(threw({ message: "the handler's result is not JSON" }, logs, traces));
          }
          return finish(succeeded(data, logs, traces, settings.rawResponse));
        }
        const thrown = asThrown(m.error);
        const refused = deniedOf(m.error);
        if (!refused) return finish(threw(thrown, logs, traces));
        log.warn({ plugin: id, permission: refused.permission, resource: refused.resource ?? undefined }, 'plugin refused a permission');
        finish(deniedResult(id, refused, thrown.message, logs, traces));
      }
    };
    onError = (e) => {
      sound = false;
      finish(threw({ message: `plugin ${id} failed: ${e.message}` }, logs, traces));
    };
    onClose = (code, signal) => {
      sound = false;
      finish(
        proc.outOfMemory
          ? ended('memory', 500, `plugin ${id} ran out of memory (limit ${plugins.limits.memoryMb} MB) and was stopped`, logs, traces)
          : ended('exited', 500, `plugin ${id} exited (${signal ?? `code ${code}`}) before answering`, logs, traces),
      );
    };
    child.on('message', onMessage);
    child.on('error', onError);
    child.on('close', onClose);
    if (child.exitCode !== null || child.signalCode !== null) onClose(child.exitCode, child.signalCode);
    else tell({ type: 'call', call, ctx: { ...ctx, config: settings.config } });
  });
  child.off('message', onMessage);
  child.off('error', onError);
  child.off('close', onClose);
  giveBack(plugins, p, proc, sound);
  await Promise.all(
    [...locks].map(([owner, key]) => kv.unlock(key, owner).catch((err) => log.warn({ plugin: id, err }, 'plugin lock not released; it expires'))),
  );
  return { ...result, logs: settings.emitLogs ? result.logs : [], traces: settings.emitTraces ? result.traces : [] };
}
