import { invalid } from '../domain-error.js';
import type { DirectOps, Forwarded } from './direct.js';

// The JSON-RPC passthrough's rules, pure: which calls of a request or batch are well formed and
// allowed, and the JSON-RPC answer, in the reference system's shape ({jsonrpc, result | error, id},
// errors as {code, message, description[, data]}). The family forwards what is allowed.

export type RpcBody = Record<string, unknown> | unknown[];
type Id = string | number | null;

export interface RpcAnswer {
  jsonrpc: '2.0';
  result?: unknown;
  error?: { code: number; message: string; description: string; data?: unknown };
  id: Id;
}

/** Most calls in one batch. */
export const MAX_BATCH = 100;

export const RPC_CODES = {
  invalidRequest: -32600,
  /** A refused method answers as one the node does not offer. */
  methodNotFound: -32601,
  invalidParams: -32602,
  /** No RPC URL of the relayer answered (the reference's BAD_GATEWAY). */
  badGateway: -33002,
} as const;

const errorAnswer = (id: Id, code: number, message: string, description: string, data?: unknown): RpcAnswer => ({
  jsonrpc: '2.0',
  error: { code, message, description, ...(data !== undefined ? { data } : {}) },
  id,
});

type Checked = { ok: true; id: Id; method: string; params: unknown } | { ok: false; id: Id; why: string; code: number };

/** One call, checked: the reference takes an absent id as 1 and an absent jsonrpc as "2.0". */
export function checkCall(call: unknown, rules: Pick<DirectOps['rpc'], 'refusal' | 'unwrap'>): Checked {
  if (call === null || typeof call !== 'object' || Array.isArray(call))
    return { ok: false, id: null, why: 'body: must be a JSON-RPC request object', code: RPC_CODES.invalidRequest };
  const c = call as Record<string, unknown>;
  const rawId = Object.hasOwn(c, 'id') ? c.id : 1;
  const idOk = rawId === null || typeof rawId === 'string' || (typeof rawId === 'number' && Number.isSafeInteger(rawId));
  const id = idOk ? (rawId as Id) : null;
  const bad = (why: string, code: number = RPC_CODES.invalidRequest): Checked => ({ ok: false, id, why, code });
  if (!idOk) return bad('id: must be a string, an integer or null');
  const unknown = Object.keys(c).filter((k) => !['jsonrpc', 'id', 'method', 'params'].includes(k));
  if (unknown.length) return bad(`${unknown[0]}: unknown field`);
  if (c.jsonrpc !== undefined && c.jsonrpc !== '2.0') return bad('jsonrpc: must be "2.0"');
  if (typeof c.method !== 'string' || !c.method) return bad(c.method === undefined ? 'method: required' : 'method: must be a non-empty string');
  if (c.params !== undefined && c.params !== null && typeof c.params !== 'object') return bad('params: must be an array or an object');
  const { method, params } = rules.unwrap ? rules.unwrap({ method: c.method, params: c.params ?? [] }) : { method: c.method, params: c.params ?? [] };
  const refused = rules.refusal(method);
  if (refused) return bad(refused, RPC_CODES.methodNotFound);
  return { ok: true, id, method, params };
}

/**
 * The answer to a JSON-RPC request (an object) or batch (an array): allowed calls are forwarded in
 * one go, refused and malformed ones answered in their place. A single request that is not well
 * formed is a Bad Request naming the field, as the reference answers it; in a batch it is that
 * call's error.
 */
export async function answerRpc(
  body: RpcBody,
  rules: Pick<DirectOps['rpc'], 'refusal' | 'unwrap'>,
  forward: (calls: { method: string; params: unknown }[]) => Promise<Forwarded[]>,
): Promise<RpcAnswer | RpcAnswer[]> {
  const batch = Array.isArray(body);
  const calls = batch ? body : [body];
  if (batch && calls.length === 0) throw invalid('body: an empty batch');
  if (calls.length > MAX_BATCH) throw invalid(`body: a batch of at most ${MAX_BATCH} calls`);
  const checked = calls.map((c) => checkCall(c, rules));
  if (!batch && !checked[0].ok && checked[0].code === RPC_CODES.invalidRequest) throw invalid(checked[0].why);
  const allowed = checked.filter((c): c is Extract<Checked, { ok: true }> => c.ok);
  const results = allowed.length ? await forward(allowed.map(({ method, params }) => ({ method, params }))) : [];
  let next = 0;
  const answers = checked.map((c): RpcAnswer => {
    if (!c.ok) return errorAnswer(c.id, c.code, c.code === RPC_CODES.methodNotFound ? 'Method not allowed' : 'Invalid request', c.why);
    const r = results[next++];
    if (r.ok) return { jsonrpc: '2.0', result: r.result, id: c.id };
    return errorAnswer(c.id, r.error.code, r.error.message, r.error.description ?? r.error.message, r.error.data);
  });
  return batch ? answers : answers[0];
}

/** Every call answered by the same failure to reach any RPC URL (the URLs are never shown: they may hold keys). */
export const unreachable = (n: number): Forwarded[] =>
  Array.from({ length: n }, () => ({ ok: false, error: { code: RPC_CODES.badGateway, message: 'Bad gateway: no RPC URL of the relayer answered' } }) as const);
