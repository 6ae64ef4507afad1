// The JSON-RPC passthrough's forwarding (core/relayers/sign-and-forward.ts), shared by the families whose
// nodes are asked one call at a time: each allowed call goes to the relayer's RPC URLs with the
// client's failover; a node's verdict is that call's answer.
import type { Relayer } from '../generated/prisma/client.js';
import type { Runtime } from '../core/runtime.js';
import type { Forwarded } from '../core/relayers/direct.js';
import { unreachable } from '../core/relayers/rpc-rules.js';
import { JsonRpcError, type JsonRpcClient, type JsonRpcParams } from './jsonrpc.js';

export async function forwardEach(rt: Runtime, relayer: Relayer, client: JsonRpcClient, calls: { method: string; params: unknown }[]): Promise<Forwarded[]> {
  return Promise.all(
    calls.map(async (c): Promise<Forwarded> => {
      try {
        return { ok: true, result: await client.request(c.method, c.params as JsonRpcParams) };
      } catch (e) {
        if (e instanceof JsonRpcError) return { ok: false, error: { code: e.code, message: e.message, data: e.data } };
        rt.log.warn({ relayerId: relayer.id, method: c.method, err: (e as Error).message }, 'rpc passthrough: no endpoint answered');
        return unreachable(1)[0];
      }
    }),
  );
}
