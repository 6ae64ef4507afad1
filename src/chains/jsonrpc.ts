// Chain-agnostic JSON-RPC 2.0 client over several weighted endpoints with failover and
// cooldowns. Each chain's client builds on it and says which node errors are worth another
// endpoint (`isTransient`); every other error is the node's verdict and goes to the caller.

import type { RpcEndpoint } from '../core/rpc-urls.js';
import { type Answer, PostTimeoutError, postJson } from '../lib/post.js';

export type JsonRpcParams = unknown[] | Record<string, unknown>;

export type RpcLogger = { warn(obj: object, msg: string): void };

export type JsonRpcClientOptions = {
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** Extra attempts after the first one, each on the next endpoint in line (default: each endpoint once). */
  retries?: number;
  /** How long a failing endpoint is skipped before it is tried first again. */
  cooldownMs?: number;
  /** When above cooldownMs, the cooldown doubles per consecutive failure up to this. */
  maxCooldownMs?: number;
  logger?: RpcLogger;
  /** Whether a JSON-RPC error from a node is worth trying another endpoint. */
  isTransient?: (code: number, message: string) => boolean;
  /** Whether a result can be an answer to the method; one that cannot is the endpoint's fault (fails over). */
  checkResult?: (method: string, result: unknown) => boolean;
  /** Prefix of construction errors. */
  label?: string;
  /** Told of every call (a batch counts once, as `batch:<first method>`): outcome ok, error (the node's verdict) or unavailable. */
  observe?: (method: string, outcome: 'ok' | 'error' | 'unavailable', seconds: number) => void;
};

export type EndpointStatus = {
  host: string;
  weight: number;
  healthy: boolean;
  consecutiveFailures: number;
};

export type RpcCall = { method: string; params?: unknown[] };
/** One answer of a batch: the result, or the node's verdict on that call. */
export type RpcOutcome<T = unknown> = { ok: true; result: T } | { ok: false; error: JsonRpcError };

export interface JsonRpcClient {
  request<T = unknown>(method: string, params?: JsonRpcParams): Promise<T>;
}

export interface FailoverJsonRpcClient extends JsonRpcClient {
  /**
   * Several calls in JSON-RPC batches (one HTTP request per `chunk` calls), answers in call order.
   * Endpoint failures fail over like `request`; a call the node refuses comes back as its error.
   */
  batch<T = unknown>(calls: RpcCall[], opts?: { chunk?: number }): Promise<RpcOutcome<T>[]>;
  status(): EndpointStatus[];
}

/** A verdict from a node about the request itself: another node would answer the same. */
export class JsonRpcError extends Error {
  override name = 'JsonRpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Every attempt failed with a transport-level or endpoint-level error. */
export class RpcUnavailableError extends Error {
  override name = 'RpcUnavailableError';
  constructor(
    readonly method: string,
    readonly failures: { host: string; error: string }[],
  ) {
    super(`no RPC endpoint available for ${method}: ${failures.map((f) => `${f.host}: ${f.error}`).join('; ')}`);
  }
}

/** Endpoint-level failure: worth trying another endpoint. Internal only. */
class TransientError extends Error {}

// Node-side conditions (overload, lagging node, rate limit, unsupported method on this
// provider) that another endpoint may not share.
const TRANSIENT_CODES = new Set([-32603, -32601, -32005, -32004, -32007, -32014, -32016, 429]);

export function isTransientByCode(code: number): boolean {
  return TRANSIENT_CODES.has(code);
}

type Endpoint = { target: URL; host: string; weight: number; failures: number; downUntil: number };

/** Weighted random order without replacement. */
function weightedShuffle(items: Endpoint[]): Endpoint[] {
  const pool = [...items];
  const out: Endpoint[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((sum, e) => sum + e.weight, 0);
    let r = Math.random() * total;
    let i = 0;
    while (i < pool.length - 1 && r >= pool[i].weight) r -= pool[i++].weight;
    out.push(...pool.splice(i, 1));
  }
  return out;
}

type Reply = { result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } };

export function createJsonRpcClient(endpoints: readonly RpcEndpoint[], opts: JsonRpcClientOptions = {}): FailoverJsonRpcClient {
  const label = opts.label ?? 'createJsonRpcClient';
  if (endpoints.length === 0) throw new Error(`${label}: at least one endpoint is required`);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const retries = opts.retries ?? endpoints.length - 1;
  const cooldownMs = opts.cooldownMs ?? 30_000;
  const maxCooldownMs = Math.max(cooldownMs, opts.maxCooldownMs ?? cooldownMs);
  const isTransient = opts.isTransient ?? isTransientByCode;
  const checkResult = opts.checkResult ?? (() => true);
  const eps: Endpoint[] = endpoints.map((e, i) => {
    const { url, weight } = e;
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      throw new Error(`${label}: endpoint #${i} has an invalid URL`);
    }
    // Only the host is ever reported: paths and query strings often carry API keys.
    const host = target.host;
    if (!(weight >= 0)) throw new Error(`${label}: invalid weight for ${host}`);
    return { target, host, weight, failures: 0, downUntil: 0 };
  });
  let nextId = 1;

  // Healthy weighted endpoints first, then healthy weight-0 backups, then the
  // unhealthy ones (soonest to recover first) as a last resort, so a single
  // endpoint that blipped is still tried instead of refusing all traffic.
  function attemptOrder(): Endpoint[] {
    const now = Date.now();
    const up = eps.filter((e) => e.downUntil <= now);
    const down = eps.filter((e) => e.downUntil > now).sort((a, b) => a.downUntil - b.downUntil);
    return [...weightedShuffle(up.filter((e) => e.weight > 0)), ...up.filter((e) => e.weight === 0), ...down];
  }

  async function post(ep: Endpoint, payload: unknown): Promise<{ res: Answer; body: unknown }> {
    let res: Answer;
    try {
      res = await postJson(ep.target, JSON.stringify(payload), timeoutMs);
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      if (e instanceof PostTimeoutError) throw new TransientError(`timeout after ${timeoutMs}ms`);
      throw new TransientError(`network error: ${e.code ?? e.message}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      body = {};
    }
    return { res, body };
  }

  /** The result of one JSON-RPC reply; throws JsonRpcError (the node's verdict) or TransientError. */
  function settle(res: Answer, body: Reply | undefined, method: string): unknown {
    if (body && typeof body === 'object' && body.error && typeof body.error === 'object') {
      const code = typeof body.error.code === 'number' ? body.error.code : -32603;
      const message = String(body.error.message ?? 'unknown JSON-RPC error');
      if (isTransient(code, message)) throw new TransientError(`rpc error ${code}: ${message}`);
      throw new JsonRpcError(code, message, body.error.data);
    }
    // Any other HTTP failure (429/5xx, but also 401/403/404 from a bad key or
    // path) is a problem with this endpoint, not with the request.
    if (!res.ok) throw new TransientError(`HTTP ${res.status}`);
    if (!body || typeof body !== 'object' || !('result' in body)) {
      throw new TransientError('malformed JSON-RPC response');
    }
    if (!checkResult(method, body.result)) throw new TransientError(`malformed result for ${method}`);
    return body.result;
  }

  async function send(ep: Endpoint, method: string, params: JsonRpcParams): Promise<unknown> {
    const id = nextId++;
    const { res, body } = await post(ep, { jsonrpc: '2.0', id, method, params });
    // An answer to another request (or to none) says nothing about this one.
    if (res.ok && body && typeof body === 'object' && !Array.isArray(body) && 'id' in body && body.id !== id && body.id !== null) {
      throw new TransientError('JSON-RPC response answers another request');
    }
    return settle(res, body as Reply, method);
  }

  /** A batch on one endpoint: deterministic errors per call; a transient one fails the whole batch. */
  async function sendBatch(ep: Endpoint, calls: RpcCall[]): Promise<RpcOutcome[]> {
    const first = nextId;
    nextId += calls.length;
    const { res, body } = await post(
      ep,
      calls.map((c, i) => ({ jsonrpc: '2.0', id: first + i, method: c.method, params: c.params ?? [] })),
    );
    if (!Array.isArray(body)) {
      settle(res, body as Reply, '');
      throw new TransientError('malformed JSON-RPC batch response');
    }
    const byId = new Map<number, Reply>();
    for (const reply of body as (Reply & { id?: unknown })[]) {
      if (reply && typeof reply.id === 'number') byId.set(reply.id, reply);
    }
    return calls.map((call, i) => {
      const reply = byId.get(first + i);
      if (!reply) throw new TransientError('JSON-RPC batch response lacks an answer');
      try {
        return { ok: true as const, result: settle(res, reply, call.method) };
      } catch (e) {
        if (e instanceof JsonRpcError) return { ok: false as const, error: e };
        throw e;
      }
    });
  }

  async function withFailover<T>(method: string, what: string, attemptOn: (ep: Endpoint) => Promise<T>): Promise<T> {
    if (!opts.observe) return failover(what, attemptOn);
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const result = await failover(what, attemptOn);
      opts.observe(method, 'ok', seconds());
      return result;
    } catch (e) {
      opts.observe(method, e instanceof JsonRpcError ? 'error' : 'unavailable', seconds());
      throw e;
    }
  }

  async function failover<T>(what: string, attemptOn: (ep: Endpoint) => Promise<T>): Promise<T> {
    const order = attemptOrder();
    const failures: { host: string; error: string }[] = [];
    for (let attempt = 0; attempt <= retries; attempt++) {
      const ep = order[attempt % order.length];
      if (attempt >= order.length) {
        // Same endpoint again: back off a little before hammering it.
        await new Promise((r) => setTimeout(r, Math.min(1000, 100 * 2 ** attempt)));
      }
      try {
        const result = await attemptOn(ep);
        ep.failures = 0;
        ep.downUntil = 0;
        return result;
      } catch (err) {
        if (!(err instanceof TransientError)) throw err;
        failures.push({ host: ep.host, error: err.message });
        // Only escalate once per cooldown window, so a burst of concurrent
        // failures doesn't push the endpoint straight to the max cooldown.
        const now = Date.now();
        if (ep.downUntil <= now) {
          const cooldown = Math.min(maxCooldownMs, cooldownMs * 2 ** ep.failures);
          ep.failures++;
          ep.downUntil = now + cooldown;
          opts.logger?.warn({ host: ep.host, method: what, attempt, error: err.message, cooldownMs: cooldown }, 'rpc endpoint failed, cooling down');
        }
      }
    }
    throw new RpcUnavailableError(what, failures);
  }

  function request<T = unknown>(method: string, params: JsonRpcParams = []): Promise<T> {
    return withFailover(method, method, (ep) => send(ep, method, params)) as Promise<T>;
  }

  async function batch<T = unknown>(calls: RpcCall[], bopts: { chunk?: number } = {}): Promise<RpcOutcome<T>[]> {
    const size = Math.max(1, bopts.chunk ?? 100);
    const chunks: RpcCall[][] = [];
    for (let i = 0; i < calls.length; i += size) chunks.push(calls.slice(i, i + size));
    const answers = await Promise.all(
      chunks.map((chunk) =>
        chunk.length === 1
          ? request(chunk[0].method, chunk[0].params ?? []).then(
              (result): RpcOutcome[] => [{ ok: true, result }],
              (e): RpcOutcome[] => {
                if (e instanceof JsonRpcError) return [{ ok: false, error: e }];
                throw e;
              },
            )
          : withFailover(`batch:${chunk[0].method}`, `batch of ${chunk.length} (${chunk[0].method})`, (ep) => sendBatch(ep, chunk)),
      ),
    );
    return answers.flat() as RpcOutcome<T>[];
  }

  return {
    request,
    batch,
    status: () => {
      const now = Date.now();
      return eps.map((e) => ({
        host: e.host,
        weight: e.weight,
        healthy: e.downUntil <= now,
        consecutiveFailures: e.failures,
      }));
    },
  };
}
