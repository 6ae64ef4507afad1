import type { Caller } from '../core/access/keys.js';
import type { ApiOp, PluginApi } from '../core/plugins/pool.js';
import type { Thrown } from '../core/plugins/outcome.js';
import type { LocalCall } from './graphql/context.js';
import { httpOf } from './rest/status.js';

// A plugin's ctx.api: each operation is the REST request a client would send, run in process as
// the plugin's caller, so the caller's permissions, rate limit and the routes' validation apply.

const codeOf = (status: number) => Object.entries(httpOf).find(([, v]) => v.status === status)?.[0] ?? `HTTP_${status}`;

function requestOf(op: ApiOp, relayerId: string, payload: unknown): { method: string; path: string; body?: unknown } {
  const base = `/api/v1/relayers/${encodeURIComponent(relayerId)}`;
  switch (op) {
    case 'sendTransaction':
      return { method: 'POST', path: `${base}/transactions`, body: payload ?? {} };
    case 'getTransaction': {
      const id = (payload as { transactionId?: unknown } | null)?.transactionId;
      if (typeof id !== 'string' || !id) throw { message: 'transactionId: required', status: 400, code: 'BAD_REQUEST' } satisfies Thrown;
      return { method: 'GET', path: `${base}/transactions/${encodeURIComponent(id)}` };
    }
    case 'getRelayer':
      return { method: 'GET', path: base };
    case 'getRelayerStatus':
      return { method: 'GET', path: `${base}/status` };
    case 'signTransaction':
      return { method: 'POST', path: `${base}/sign-transaction`, body: payload ?? {} };
    case 'rpc':
      return { method: 'POST', path: `${base}/rpc`, body: payload ?? {} };
  }
}

export function pluginApi(local: LocalCall, caller: Caller, requestId: string): PluginApi {
  return async (op, relayerId, payload) => {
    const r = requestOf(op, relayerId, payload);
    const request = new Request(`http://plugin.local${r.path}`, {
      method: r.method,
      headers: r.body === undefined ? {} : { 'content-type': 'application/json' },
      body: r.body === undefined ? undefined : JSON.stringify(r.body),
    });
    const response = await local(request, caller, requestId);
    const answer = (await response.json().catch(() => null)) as { success?: boolean; data?: unknown; error?: unknown; message?: unknown } | null;
    // The JSON-RPC route answers the JSON-RPC response itself, errors included.
    if (op === 'rpc' && response.status < 400) return answer;
    if (response.status >= 400 || !answer?.success) {
      const texts = [answer?.message, answer?.error].filter((t): t is string => typeof t === 'string' && t !== '');
      const message = [...new Set(texts)].join(': ') || `HTTP ${response.status}`;
      const status = response.status >= 400 ? response.status : 500;
      throw { message, status, code: codeOf(status) } satisfies Thrown;
    }
    return answer.data;
  };
}
