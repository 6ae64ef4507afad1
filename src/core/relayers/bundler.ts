import { forbidden } from '../domain-error.js';
import { parseJson } from '../../lib/json.js';
import { textIssues } from '../../lib/validate.js';
import type { Runtime } from '../runtime.js';
import type { BundlerAnswer, BundlerOps } from './direct.js';
import { checkCall, MAX_BATCH } from './rpc-rules.js';
import { getRelayer } from './service.js';
import type { Relayer } from '../../generated/prisma/client.js';

// POST …/bundler: plain JSON-RPC 2.0 (ERC-7769 bundler and ERC-7677 paymaster methods), answered
// in JSON-RPC whatever goes wrong with a call; the family (its spec's direct().bundler) does the
// methods. Reads need the relayer's `read` permission (the route's), sending and signing its
// `execute`.

type Id = string | number | null;

export type BundlerReply = { jsonrpc: '2.0'; id: Id; result?: unknown; error?: { code: number; message: string; data?: unknown } };

export const JSONRPC = { parse: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, internal: -32603 } as const;

// Control characters (NUL among them) and lone surrogates (with u, one of a pair is not matched),
// which no answer of ours carries (a revert reason from the chain may).
const UNSAFE = /[\p{Cc}\p{Cs}]/gu;

/** A value with every string made safe to answer (U+FFFD for what is not). */
function clean(v: unknown): unknown {
  if (typeof v === 'string') return v.replace(UNSAFE, '\uFFFD');
  if (Array.isArray(v)) return v.map(clean);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [clean(k), clean(x)]));
  return v;
}

const reply = (id: Id, a: BundlerAnswer): BundlerReply =>
  a.ok ? { jsonrpc: '2.0', id, result: a.result } : { jsonrpc: '2.0', id, error: clean(a.error) as BundlerReply['error'] };
const fail = (code: number, message: string, data?: unknown): BundlerAnswer => ({
  ok: false,
  error: { code, message, ...(data !== undefined ? { data } : {}) },
});

/** The body as JSON-RPC calls, or the one answer a body that is not one gets. */
export function readBundlerBody(text: string): { batch: boolean; calls: unknown[] } | { answer: BundlerReply } {
  let body: unknown;
  try {
    // As every body is read: no integer taken from an inexact number, a bound on nesting.
    body = parseJson(text);
  } catch (e) {
    return { answer: reply(null, fail(JSONRPC.parse, `Parse error: ${e instanceof RangeError ? e.message : 'not JSON'}`)) };
  }
  const issues: string[] = [];
  textIssues(body, '', issues);
  if (issues.length) return { answer: reply(null, fail(JSONRPC.invalidRequest, `Invalid request: ${issues.join('; ')}`)) };
  if (Array.isArray(body)) {
    if (body.length === 0) return { answer: reply(null, fail(JSONRPC.invalidRequest, 'Invalid request: an empty batch')) };
    if (body.length > MAX_BATCH) return { answer: reply(null, fail(JSONRPC.invalidRequest, `Invalid request: a batch of at most ${MAX_BATCH} calls`)) };
    return { batch: true, calls: body };
  }
  return { batch: false, calls: [body] };
}

type Plan = { id: Id; call?: { method: string; params: unknown }; kind?: 'read' | 'write'; answer?: BundlerAnswer };

/** Each call checked against the family's methods (pure). */
export function planCalls(calls: unknown[], ops: Pick<BundlerOps, 'method'> | undefined): Plan[] {
  return calls.map((raw): Plan => {
    const c = checkCall(raw, { refusal: (m) => (ops?.method(m) ? null : `${m}: no such method on this bundler`) });
    if (!c.ok) return { id: c.id, answer: fail(c.code, c.why) };
    if (!Array.isArray(c.params)) return { id: c.id, answer: fail(JSONRPC.invalidParams, 'params: must be an array') };
    return { id: c.id, call: { method: c.method, params: c.params }, kind: ops!.method(c.method) };
  });
}

function inactive(relayer: Relayer): string | null {
  if (relayer.paused) return `relayer ${relayer.id} is paused`;
  if (relayer.systemDisabled) return `relayer ${relayer.id} is disabled`;
  return null;
}

/**
 * The JSON-RPC answer (an object, or an array for a batch) to `text`. A caller without `execute`
 * who calls a method that sends or signs is refused as a whole (403), as the rest of the API is.
 */
export async function relayerBundler(rt: Runtime, relayerId: string, text: string, mayExecute: boolean): Promise<unknown> {
  const relayer = await getRelayer(rt, relayerId);
  const body = readBundlerBody(text);
  if ('answer' in body) return body.answer;
  const spec = rt.families.spec(relayer.networkType);
  const ops = (await rt.families.direct(relayer.networkType))?.bundler;
  const plans = planCalls(body.calls, ops ?? { method: (m) => (m.startsWith('eth_') || m.startsWith('pm_') ? 'read' : undefined) });
  if (!mayExecute && plans.some((p) => p.kind === 'write')) throw forbidden(`this API key lacks relayer:${relayerId}:execute`);
  const refusal = ops ? ops.refusal(rt, relayer) : `the bundler is not offered for ${spec.label} relayers: ERC-4337 is for EVM chains`;
  const stopped = inactive(relayer);
  for (const p of plans) {
    if (p.answer || !p.call) continue;
    if (refusal) p.answer = fail(JSONRPC.methodNotFound, refusal);
    else if (stopped && p.kind === 'write') p.answer = fail(JSONRPC.invalidRequest, stopped);
  }
  const todo = plans.filter((p) => !p.answer);
  if (todo.length && ops) {
    let answers: BundlerAnswer[];
    try {
      answers = await ops.call(
        rt,
        relayer,
        todo.map((p) => p.call!),
      );
    } catch (err) {
      rt.log.error({ err, relayerId }, 'bundler call failed');
      answers = todo.map(() => fail(JSONRPC.internal, 'Internal error'));
    }
    todo.forEach((p, i) => {
      p.answer = answers[i];
    });
  }
  const replies = plans.map((p) => reply(p.id, p.answer!));
  return body.batch ? replies : replies[0];
}
