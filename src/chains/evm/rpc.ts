import { custom, type Transport } from 'viem';

export type RpcEndpoint = { url: string; weight?: number };

export type RpcLogger = { warn(obj: object, msg: string): void };

export type EvmRpcOptions = {
  timeoutMs?: number;
  /** Extra attempts after the first one, each on the next endpoint in line. */
  retries?: number;
  /** First cooldown of a failing endpoint; doubles per consecutive failure. */
  cooldownMs?: number;
  maxCooldownMs?: number;
  logger?: RpcLogger;
};

export type EndpointStatus = {
  host: string;
  weight: number;
  healthy: boolean;
  consecutiveFailures: number;
};

export type RpcCall = { method: string; params?: unknown[] };
/** One answer of a batch: the result, or the node's verdict on that call. */
export type RpcOutcome<T = unknown> = { ok: true; result: T } | { ok: false; error: RpcError };

export type EvmRpc = {
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /**
   * Several calls in JSON-RPC batches (one HTTP request per `chunk` calls), answers in call order.
   * Endpoint failures fail over like `request`; a call the node refuses comes back as its error.
   */
  batch<T = unknown>(calls: RpcCall[], opts?: { chunk?: number }): Promise<RpcOutcome<T>[]>;
  /** viem transport with failover: `createPublicClient({ transport: rpc.transport })`. */
  transport: Transport;
  status(): EndpointStatus[];
};

/** Minimal surface needed by callers that only issue requests. */
export type RpcRequester = Pick<EvmRpc, 'request'>;

/** A deterministic JSON-RPC error from the node (revert, nonce too low, ...). */
export class RpcError extends Error {
  override name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** Every attempt failed with a transient/endpoint error. */
export class RpcUnavailableError extends Error {
  override name = 'RpcUnavailableError';
  constructor(
    readonly method: string,
    readonly failures: { host: string; error: string }[],
  ) {
    super(
      `no RPC endpoint available for ${method}: ` +
        failures.map((f) => `${f.host}: ${f.error}`).join('; '),
    );
  }
}

/** Endpoint-level failure: worth trying another endpoint. Internal only. */
class TransientError extends Error {}

// Messages that are a verdict on the request itself, so another node would say the same.
const DETERMINISTIC =
  /revert|nonce too (low|high)|already known|known transaction|insufficient funds|underpriced|intrinsic gas|exceeds block gas limit|gas limit reached|invalid (sender|signature|transaction)|fee cap|less than block base fee/i;
const TRANSIENT_MESSAGE =
  /header not found|unknown block|missing trie node|timeout|timed out|rate limit|too many requests|try again|temporarily|unavailable|busy|internal error/i;
// -32603 internal error, -32005 limit exceeded, -32007 / 429 provider rate limits.
const TRANSIENT_CODES = new Set([-32603, -32005, -32007, 429]);

export function isTransientRpcError(code: number, message: string): boolean {
  if (DETERMINISTIC.test(message)) return false;
  if (TRANSIENT_CODES.has(code)) return true;
  return code === -32000 && TRANSIENT_MESSAGE.test(message);
}

type Endpoint = {
  url: string;
  host: string;
  weight: number;
  failures: number;
  unhealthyUntil: number;
};

function hostOf(url: string): string {
  return new URL(url).host;
}

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

export function createEvmRpc(endpoints: RpcEndpoint[], opts: EvmRpcOptions = {}): EvmRpc {
  if (endpoints.length === 0) throw new Error('createEvmRpc: at least one endpoint is required');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const retries = opts.retries ?? 2;
  const cooldownMs = opts.cooldownMs ?? 30_000;
  const maxCooldownMs = opts.maxCooldownMs ?? 5 * 60_000;
  const eps: Endpoint[] = endpoints.map((e, i) => {
    let host: string;
    try {
      host = hostOf(e.url);
    } catch {
      // The URL itself may embed an API key, so don't echo it.
      throw new Error(`createEvmRpc: endpoint #${i} has an invalid URL`);
    }
    const weight = e.weight ?? 100;
    if (!(weight >= 0)) throw new Error(`createEvmRpc: invalid weight for ${host}`);
    return { url: e.url, host, weight, failures: 0, unhealthyUntil: 0 };
  });
  let nextId = 1;

  // Healthy weighted endpoints first, then healthy weight-0 backups, then the
  // unhealthy ones (soonest to recover first) as a last resort, so a single
  // endpoint that blipped is still tried instead of refusing all traffic.
  function attemptOrder(): Endpoint[] {
    const now = Date.now();
    const healthy = eps.filter((e) => e.unhealthyUntil <= now);
    const unhealthy = eps
      .filter((e) => e.unhealthyUntil > now)
      .sort((a, b) => a.unhealthyUntil - b.unhealthyUntil);
    return [
      ...weightedShuffle(healthy.filter((e) => e.weight > 0)),
      ...healthy.filter((e) => e.weight === 0),
      ...unhealthy,
    ];
  }

  async function post(ep: Endpoint, payload: unknown): Promise<{ res: Response; body: unknown }> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(ep.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError') throw new TransientError(`timeout after ${timeoutMs}ms`);
      const cause = e.cause as { code?: string; message?: string } | undefined;
      throw new TransientError(`network error: ${cause?.code ?? cause?.message ?? e.message}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = {};
    }
    return { res, body };
  }

  type Reply = { result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } };

  /** The result of one JSON-RPC reply; throws RpcError (the node's verdict) or TransientError. */
  function settle(res: Response, body: Reply | undefined): unknown {
    if (body && typeof body === 'object' && body.error && typeof body.error === 'object') {
      const code = typeof body.error.code === 'number' ? body.error.code : -32603;
      const message = String(body.error.message ?? 'unknown JSON-RPC error');
      if (isTransientRpcError(code, message)) throw new TransientError(`rpc error ${code}: ${message}`);
      throw new RpcError(code, message, body.error.data);
    }
    // Any other HTTP failure (429/5xx, but also 401/403/404 from a bad key or
    // path) is a problem with this endpoint, not with the request.
    if (!res.ok) throw new TransientError(`HTTP ${res.status}`);
    if (!body || typeof body !== 'object' || !('result' in body)) {
      throw new TransientError('malformed JSON-RPC response');
    }
    return body.result;
  }

  async function send(ep: Endpoint, method: string, params: unknown[]): Promise<unknown> {
    const { res, body } = await post(ep, { jsonrpc: '2.0', id: nextId++, method, params });
    return settle(res, body as Reply);
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
      settle(res, body as Reply);
      throw new TransientError('malformed JSON-RPC batch response');
    }
    const byId = new Map<number, Reply>();
    for (const reply of body as (Reply & { id?: unknown })[]) {
      if (reply && typeof reply.id === 'number') byId.set(reply.id, reply);
    }
    return calls.map((_, i) => {
      const reply = byId.get(first + i);
      if (!reply) throw new TransientError('JSON-RPC batch response lacks an answer');
      try {
        return { ok: true as const, result: settle(res, reply) };
      } catch (e) {
        if (e instanceof RpcError) return { ok: false as const, error: e };
        throw e;
      }
    });
  }

  async function withFailover<T>(what: string, attemptOn: (ep: Endpoint) => Promise<T>): Promise<T> {
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
        ep.unhealthyUntil = 0;
        return result;
      } catch (err) {
        if (!(err instanceof TransientError)) throw err;
        failures.push({ host: ep.host, error: err.message });
        // Only escalate once per cooldown window, so a burst of concurrent
        // failures doesn't push the endpoint straight to the max cooldown.
        const now = Date.now();
        if (ep.unhealthyUntil <= now) {
          const cooldown = Math.min(maxCooldownMs, cooldownMs * 2 ** ep.failures);
          ep.failures++;
          ep.unhealthyUntil = now + cooldown;
          opts.logger?.warn(
            { host: ep.host, method: what, attempt, error: err.message, cooldownMs: cooldown },
            'rpc endpoint failed, cooling down',
          );
        }
      }
    }
    throw new RpcUnavailableError(what, failures);
  }

  function request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    return withFailover(method, (ep) => send(ep, method, params)) as Promise<T>;
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
                if (e instanceof RpcError) return [{ ok: false, error: e }];
                throw e;
              },
            )
          : withFailover(`batch of ${chunk.length} (${chunk[0].method})`, (ep) => sendBatch(ep, chunk)),
      ),
    );
    return answers.flat() as RpcOutcome<T>[];
  }

  return {
    request,
    batch,
    // retryCount 0: failover and retries already happen in request().
    transport: custom(
      { request: ({ method, params }: { method: string; params?: unknown[] }) => request(method, params ?? []) },
      { retryCount: 0 },
    ),
    status: () => {
      const now = Date.now();
      return eps.map((e) => ({
        host: e.host,
        weight: e.weight,
        healthy: e.unhealthyUntil <= now,
        consecutiveFailures: e.failures,
      }));
    },
  };
}
