// Chain-agnostic JSON-RPC 2.0 client over several weighted endpoints. Used by
// the Stellar and Solana clients; it only lives under stellar/ because the
// two chain folders are the only ones this module's owners may touch.

export type RpcEndpoint = string | { url: string; weight?: number };

export type JsonRpcParams = unknown[] | Record<string, unknown>;

export type JsonRpcClientOptions = {
  /** Per-attempt timeout. */
  timeoutMs?: number;
  /** How long a failing endpoint is skipped before it is tried first again. */
  cooldownMs?: number;
};

export interface JsonRpcClient {
  request<T = unknown>(method: string, params?: JsonRpcParams): Promise<T>;
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

/** Every endpoint failed with a transport-level or endpoint-level error. */
export class RpcUnavailableError extends Error {
  override name = 'RpcUnavailableError';
  constructor(
    readonly method: string,
    readonly failures: { host: string; error: string }[],
  ) {
    super(`no RPC endpoint answered ${method}: ${failures.map((f) => `${f.host}: ${f.error}`).join('; ')}`);
  }
}

class TransientError extends Error {}

// Node-side conditions (overload, lagging node, rate limit, unsupported method
// on this provider) that another endpoint may not share.
const TRANSIENT_CODES = new Set([-32603, -32601, -32005, -32004, -32007, -32014, -32016, 429]);

type Endpoint = { url: string; host: string; weight: number; downUntil: number };

function hostOf(url: string): string {
  try {
    // Only the host is ever reported: paths and query strings often carry API keys.
    return new URL(url).host;
  } catch {
    return '<invalid url>';
  }
}

function weightedShuffle(items: Endpoint[]): Endpoint[] {
  const pool = [...items];
  const out: Endpoint[] = [];
  while (pool.length > 0) {
    const total = pool.reduce((s, e) => s + e.weight, 0);
    let r = Math.random() * total;
    let i = 0;
    while (i < pool.length - 1 && r >= pool[i].weight) r -= pool[i++].weight;
    out.push(...pool.splice(i, 1));
  }
  return out;
}

export function createJsonRpcClient(endpoints: RpcEndpoint[], opts: JsonRpcClientOptions = {}): JsonRpcClient {
  if (endpoints.length === 0) throw new Error('at least one RPC endpoint is required');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const cooldownMs = opts.cooldownMs ?? 30_000;
  const eps: Endpoint[] = endpoints.map((e) => {
    const { url, weight = 100 } = typeof e === 'string' ? { url: e } : e;
    if (!(weight >= 0)) throw new Error(`invalid RPC weight for ${hostOf(url)}`);
    return { url, host: hostOf(url), weight, downUntil: 0 };
  });
  let nextId = 1;

  // Healthy weighted endpoints in weighted-random order, then weight-0 backups,
  // then endpoints in cooldown (soonest back first) as a last resort.
  function order(): Endpoint[] {
    const now = Date.now();
    const up = eps.filter((e) => e.downUntil <= now);
    const down = eps.filter((e) => e.downUntil > now).sort((a, b) => a.downUntil - b.downUntil);
    return [...weightedShuffle(up.filter((e) => e.weight > 0)), ...up.filter((e) => e.weight === 0), ...down];
  }

  async function send(ep: Endpoint, method: string, params: JsonRpcParams): Promise<unknown> {
    let res: Response;
    let text: string;
    try {
      res = await fetch(ep.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      const e = err as Error;
      if (e.name === 'TimeoutError') throw new TransientError(`timeout after ${timeoutMs}ms`);
      const code = (e.cause as { code?: string } | undefined)?.code;
      throw new TransientError(`network error: ${code ?? e.message}`);
    }
    let body: { result?: unknown; error?: { code?: unknown; message?: unknown; data?: unknown } } | null = null;
    try {
      body = JSON.parse(text);
    } catch {
      // fall through: judged by HTTP status below
    }
    if (body && typeof body === 'object' && body.error && typeof body.error === 'object') {
      const code = typeof body.error.code === 'number' ? body.error.code : -32603;
      const message = String(body.error.message ?? 'unknown JSON-RPC error');
      if (TRANSIENT_CODES.has(code)) throw new TransientError(`rpc error ${code}: ${message}`);
      throw new JsonRpcError(code, message, body.error.data);
    }
    if (!res.ok) throw new TransientError(`HTTP ${res.status}`);
    if (!body || typeof body !== 'object' || !('result' in body)) throw new TransientError('malformed JSON-RPC response');
    return body.result;
  }

  return {
    async request<T>(method: string, params: JsonRpcParams = []): Promise<T> {
      const failures: { host: string; error: string }[] = [];
      for (const ep of order()) {
        try {
          const result = await send(ep, method, params);
          ep.downUntil = 0;
          return result as T;
        } catch (err) {
          if (!(err instanceof TransientError)) throw err;
          ep.downUntil = Date.now() + cooldownMs;
          failures.push({ host: ep.host, error: err.message });
        }
      }
      throw new RpcUnavailableError(method, failures);
    },
  };
}
