// The plugin's side of a worker thread (the service's side: core/plugins/pool.ts). Plain JavaScript,
// so that it runs as it is under tsx and from dist/. It loads the plugin's compiled code once, with
// a `require` that resolves from the plugin file's folder as Node does, then serves one call: the
// context's api and kv are messages to the service, which executes them with the caller's authority.
import { createRequire } from 'node:module';
import path from 'node:path';
import { format } from 'node:util';
import vm from 'node:vm';
import { parentPort, workerData } from 'node:worker_threads';

const port = parentPort;
const { file, code } = workerData;
const pending = new Map();
let next = 1;

/** A request to the service; its answer resolves or rejects the promise. */
function ask(kind, body) {
  const id = next++;
  return new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    port.postMessage({ type: 'ask', id, kind, ...body });
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

/** What a thrown value tells: message, and the PluginError fields when it has them. */
function shape(e) {
  const o = e !== null && typeof e === 'object' ? e : {};
  return {
    message: typeof o.message === 'string' ? o.message : String(e),
    name: typeof o.name === 'string' ? o.name : undefined,
    status: Number.isInteger(o.status) ? o.status : undefined,
    code: typeof o.code === 'string' ? o.code : undefined,
    details: jsonOrNull(o.details),
  };
}

for (const level of ['log', 'info', 'warn', 'error', 'debug', 'trace']) {
  console[level] = (...args) => port.postMessage({ type: 'log', level, message: format(...args) });
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

function load() {
  const module = { exports: {} };
  const wrapper = vm.runInThisContext(`(function (exports, require, module, __filename, __dirname) {${code}\n})`, { filename: file });
  wrapper.call(module.exports, module.exports, createRequire(file), module, file, path.dirname(file));
  const exported = module.exports;
  const handler = typeof exported.handler === 'function' ? exported.handler : exported.default?.handler;
  if (typeof handler !== 'function') throw new Error('the plugin exports no handler function (export async function handler(context) { ... })');
  return handler;
}

async function run(handler, ctx) {
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
    port.postMessage({ type: 'done', ok: true, json });
  } catch (e) {
    port.postMessage({ type: 'done', ok: false, error: shape(e) });
  }
}

let handler;
try {
  handler = load();
  port.postMessage({ type: 'ready' });
} catch (e) {
  port.postMessage({ type: 'failed', error: shape(e) });
}

port.on('message', (m) => {
  if (m.type === 'answer') {
    const p = pending.get(m.id);
    if (!p) return;
    pending.delete(m.id);
    if (m.ok) p.resolve(m.value);
    else p.reject(answeredError(m.error));
  } else if (m.type === 'call' && handler) {
    void run(handler, m.ctx);
  }
});
