import { custom, type Transport } from 'viem';
import {
  createJsonRpcClient,
  JsonRpcError,
  type JsonRpcClientOptions,
  type EndpointStatus,
  type RpcCall,
  type RpcLogger,
  type RpcOutcome,
} from '../jsonrpc.js';
import type { RpcEndpoint } from '../../core/rpc-urls.js';
import { ExpiringMap } from '../../lib/expiring.js';
import { isEvmResultShape } from './results.js';

export { RpcUnavailableError, type EndpointStatus, type RpcCall, type RpcLogger, type RpcOutcome } from '../jsonrpc.js';
/** A deterministic JSON-RPC error from the node (revert, nonce too low, ...). */
export { JsonRpcError as RpcError };

export type EvmRpcOptions = {
  timeoutMs?: number;
  /** Extra attempts after the first one, each on the next endpoint in line. */
  retries?: number;
  /** First cooldown of a failing endpoint; doubles per consecutive failure. */
  cooldownMs?: number;
  maxCooldownMs?: number;
  logger?: RpcLogger;
  observe?: JsonRpcClientOptions['observe'];
};

export type EvmRpc = {
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /**
   * Several calls in JSON-RPC batches (one HTTP request per `chunk` calls), answers in call order.
   * Endpoint failures fail over like `request`; a call the node refuses comes back as its error.
   */
  batch<T = unknown>(calls: RpcCall[], opts?: { chunk?: number }): Promise<RpcOutcome<T>[]>;
  /**
   * As `batch`, but the calls of every caller made in one turn of the event loop go to the node
   * together, as one batch (a lone caller's as its own): with 100 relayers, a worker step's reads
   * and broadcasts were 100 HTTP requests each. A failure of the whole (no endpoint answered) fails
   * each caller's calls, as it would have failed its own batch.
   */
  gather<T = unknown>(calls: RpcCall[]): Promise<RpcOutcome<T>[]>;
  /** viem transport with failover: `createPublicClient({ transport: rpc.transport })`. */
  transport: Transport;
  status(): EndpointStatus[];
  /** A slowly changing answer (fees, the block gas limit) kept for `ttlMs` under `key`; a failure is not kept. */
  memo<T>(key: string, ttlMs: number, load: () => Promise<T>): Promise<T>;
};

/** Minimal surface needed by callers that only issue requests. */
export type RpcRequester = Pick<EvmRpc, 'request'>;

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

/** Calls of one gathered HTTP request at most. */
const GATHERED_CHUNK = 1_000;

export function createEvmRpc(endpoints: readonly RpcEndpoint[], opts: EvmRpcOptions = {}): EvmRpc {
  const client = createJsonRpcClient(endpoints, {
    timeoutMs: opts.timeoutMs,
    retries: opts.retries ?? 2,
    cooldownMs: opts.cooldownMs,
    maxCooldownMs: opts.maxCooldownMs ?? 5 * 60_000,
    logger: opts.logger,
    observe: opts.observe,
    isTransient: isTransientRpcError,
    checkResult: isEvmResultShape,
    label: 'createEvmRpc',
  });
  const request = <T = unknown>(method: string, params: unknown[] = []) => client.request<T>(method, params);
  const memos = new Map<number, ExpiringMap<string, Promise<unknown>>>();
  let gathered: { calls: RpcCall[]; resolve(outcomes: RpcOutcome[]): void; reject(e: unknown): void }[] = [];
  const sendGathered = async () => {
    const go = gathered;
    gathered = [];
    if (go.length === 1) return client.batch(go[0].calls).then(go[0].resolve, go[0].reject);
    try {
      const outcomes = await client.batch(
        go.flatMap((g) => g.calls),
        { chunk: GATHERED_CHUNK },
      );
      let i = 0;
      for (const g of go) g.resolve(outcomes.slice(i, (i += g.calls.length)));
    } catch (e) {
      for (const g of go) g.reject(e);
    }
  };
  return {
    request,
    batch: client.batch,
    gather<T>(calls: RpcCall[]) {
      return new Promise<RpcOutcome<T>[]>((resolve, reject) => {
        gathered.push({ calls, resolve: resolve as (o: RpcOutcome[]) => void, reject });
        if (gathered.length === 1) setImmediate(() => void sendGathered());
      });
    },
    // retryCount 0: failover and retries already happen in request().
    transport: custom({ request: ({ method, params }: { method: string; params?: unknown[] }) => request(method, params ?? []) }, { retryCount: 0 }),
    status: client.status,
    memo<T>(key: string, ttlMs: number, load: () => Promise<T>) {
      let map = memos.get(ttlMs);
      if (!map) memos.set(ttlMs, (map = new ExpiringMap(ttlMs)));
      return map.load(key, load) as Promise<T>;
    },
  };
}
