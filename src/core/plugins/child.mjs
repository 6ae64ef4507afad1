// The plugin's side of a plugin process (the service's side: core/plugins/pool.ts and process.ts).
// Plain JavaScript, so that it runs as it is from src/ and from dist/. Started by Node with
// --permission and an empty environment; it loads the plugin's compiled code once, with a `require`
// that resolves from the plugin file's folder as Node does, then serves calls one at a time: the
// context's api and kv are IPC messages to the service, which executes them with the caller's authority.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';
import path from 'node:path';
import { format } from 'node:util';
import vm from 'node:vm';

const pending = new Map();
/** The call a piece of plugin code runs for: requests and logs are tagged with it, so that work left over from a call is not taken for the next one's. */
const current = new AsyncLocalStorage();
let next = 1;
let running;

const send = (m) => process.connected && process.send(m);

/** A request to the service; its answer resolves or rejects the promise. */
function ask(kind, body) {
  const id = next++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    send({ type: 'ask', call: current.getStore() ?? 0, id, kind, ...body });
  });
}

/** An error answered by the service, as the PluginError shape (a status the call answers with when uncaught). */
function answeredError(e) {
  const error = new Error(e?.message ?? 'failed');
  error.name = 'PluginError';
  error.status = e?.status;
  error.code = e?.code;
  error.details = e?.details;
  return error;
}

function jsonOrNull(value) {
  try {
    return value === undefined ? null : JSON.parse(JSON.stringify(value));
  } catch {
    return null;
  }
}

// The permission model's errors: ERR_ACCESS_DENIED names the permission (`permission`, or only in
// the message's `--allow-…` for the network), ERR_DLOPEN_DISABLED is an addon refused.
const FLAGS = {
  'fs-read': 'FileSystemRead',
  'fs-write': 'FileSystemWrite',
  'child-process': 'ChildProcess',
  worker: 'WorkerThreads',
  net: 'Net',
  wasi: 'WASI',
  inspector: 'Inspector',
  addons: 'Addons',
};

/** The permission a thrown value (or an error it was caused by) says was refused. */
function denied(e) {
  for (let x = e, depth = 0; x && typeof x === 'object' && depth < 5; x = x.cause, depth++) {
    if (x.code === 'ERR_DLOPEN_DISABLED') return { permission: 'Addons', resource: null };
    if (x.code !== 'ERR_ACCESS_DENIED') continue;
    const flag = /--allow-([a-z-]+)/.exec(String(x.message))?.[1];
    const permission = typeof x.permission === 'string' && x.permission ? x.permission : (FLAGS[flag] ?? 'unknown');
    return { permission, resource: typeof x.resource === 'string' && x.resource ? x.resource : null };
  }
  return undefined;
}

/** What a thrown value tells: message, the PluginError fields when it has them, the permission refused. */
function shape(e) {
  const o = e !== null && typeof e === 'object' ? e : {};
  return {
    message: typeof o.message === 'string' ? o.message : String(e),
    name: typeof o.name === 'string' ? o.name : undefined,
    status: Number.isInteger(o.status) ? o.status : undefined,
    code: typeof o.code === 'string' ? o.code : undefined,
    details: jsonOrNull(o.details),
    denied: denied(e),
  };
}

for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace']) {
  console[level] = (...args) => send({ type: 'log', call: current.getStore() ?? 0, level, message: format(...args) });
}

const api = {
  useRelayer(relayerId) {
    const call = (op, payload) => ask('api', { op, relayerId: String(relayerId), payload: jsonOrNull(payload) });
    return {
      sendTransaction: async (payload) => {
        const tx = await call('sendTransaction', payload);
        return { ...tx, wait: (options) => api.transactionWait(tx, options) };
      },
      getTransaction: (payload) => call('getTransaction', payload),
      getRelayer: () => call('getRelayer'),
      getRelayerStatus: () => call('getRelayerStatus'),
      signTransaction: (payload) => call('signTransaction', payload),
      rpc: (payload) => call('rpc', payload),
    };
  },
  transactionWait: (tx, options) => ask('wait', { relayerId: String(tx?.relayer_id), transactionId: String(tx?.id), options: jsonOrNull(options) }),
};

const kv = {
  get: async (key) => {
    const text = await ask('kv', { op: 'get', key });
    return text === null ? null : JSON.parse(text);
  },
  set: async (key, value, opts) => {
    if (value === undefined) throw new Error('value must not be undefined');
    return ask('kv', { op: 'set', key, value: JSON.stringify(value), ttlSec: opts?.ttlSec });
  },
  del: (key) => ask('kv', { op: 'del', key }),
  exists: (key) => ask('kv', { op: 'exists', key }),
  listKeys: (pattern = '*') => ask('kv', { op: 'listKeys', pattern }),
  scan: (pattern = '*') => ask('kv', { op: 'listKeys', pattern }),
  clear: () => ask('kv', { op: 'clear' }),
  withLock: async (key, fn, opts) => {
    const token = await ask('lock', { key, ttlSec: opts?.ttlSec ?? 30, onBusy: opts?.onBusy ?? 'throw' });
    if (token === null) return null;
    try {
      return await fn();
    } finally {
      await ask('unlock', { key, token });
    }
  },
  connect: async () => {},
  disconnect: async () => {},
};

function load(file, code) {
  const module = { exports: {} };
  const wrapper = vm.runInThisContext(`(function (exports, require, module, __filename, __dirname) {${code}\n})`, { filename: file });
  wrapper.call(module.exports, module.exports, createRequire(file), module, file, path.dirname(file));
  const exported = module.exports;
  const handler = typeof exported.handler === 'function' ? exported.handler : exported.default?.handler;
  if (typeof handler !== 'function') throw new Error('the plugin exports no handler function (export async function handler(context) { ... })');
  return handler;
}

async function run(handler, call, ctx) {
  running = call;
  try {
    // The reference's older form handler(api, params) is still called as it was.
    const result =
      handler.length >= 2
        ? await handler(api, ctx.params)
        : await handler({
            api,
            kv,
            params: ctx.params,
            headers: ctx.headers,
            route: ctx.route,
            method: ctx.method,
            query: ctx.query,
            config: ctx.config ?? undefined,
          });
    let json;
    try {
      json = JSON.stringify(result === undefined ? null : result);
    } catch (e) {
      throw new Error(`the handler's result is not JSON: ${e.message}`);
    }
    send({ type: 'done', call, ok: true, json });
  } catch (e) {
    send({ type: 'done', call, ok: false, error: shape(e) });
  } finally {
    if (running === call) running = undefined;
  }
}

// An error no one caught (a refused connection's 'error' event, a rejection left alone) fails the
// call it came from (or the one running); the service then stops this process, whose state is no
// longer known.
// Between calls, no call is there to fail: the process ends, and the service leaves it out of its pool.
const fatal = (e) => {
  if (running === undefined) process.exit(70);
  send({ type: 'done', call: current.getStore() ?? running, ok: false, fatal: true, error: shape(e) });
};
process.on('uncaughtException', fatal);
process.on('unhandledRejection', fatal);

let handler;
process.on('message', (m) => {
  if (m === null || typeof m !== 'object') return;
  if (m.type === 'answer') {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(answeredError(m.error));
  } else if (m.type === 'load' && !handler) {
    try {
      handler = load(m.file, m.code);
      send({ type: 'ready' });
    } catch (e) {
      send({ type: 'failed', error: shape(e) });
    }
  } else if (m.type === 'call' && handler) {
    current.run(m.call, () => void run(handler, m.call, m.ctx));
  }
});
