import type { Relayer } from '../../generated/prisma/client.js';
import { invalid } from '../domain-error.js';
import type { Runtime } from '../runtime.js';
import { getRelayer } from './service.js';
import { answerRpc, type RpcBody } from './rpc-rules.js';
import type { DirectOps, MessageSignature, SignedTransaction, SignTransactionInput } from './direct.js';

// Acting as a relayer without sending anything: signing a message, typed data or a transaction the
// caller submits itself, and the JSON-RPC passthrough to the relayer's nodes. Each chain family does
// its part in its folder (chains/<family>/sign-and-forward.ts), reached through its spec's `direct`.

async function opsOf(rt: Runtime, relayer: Relayer): Promise<DirectOps | undefined> {
  return rt.families.direct(relayer.networkType);
}

/** The relayer, refused (400) while paused or disabled: such a relayer signs and forwards nothing. */
async function activeRelayer(rt: Runtime, id: string): Promise<Relayer> {
  const relayer = await getRelayer(rt, id);
  if (relayer.paused) throw invalid(`relayer ${id} is paused`);
  if (relayer.systemDisabled) {
    const reason = relayer.disabledReason as { details?: string } | null;
    throw invalid(`relayer ${id} is disabled${reason?.details ? `: ${reason.details}` : ''}`);
  }
  return relayer;
}

const notSupported = (rt: Runtime, what: string, relayer: Relayer) =>
  invalid(`${what} is not supported for ${rt.families.spec(relayer.networkType).label} relayers`);

export async function signMessage(rt: Runtime, relayerId: string, message: string): Promise<MessageSignature> {
  const relayer = await activeRelayer(rt, relayerId);
  const ops = await opsOf(rt, relayer);
  if (!ops?.signMessage) throw notSupported(rt, 'signing a message', relayer);
  return ops.signMessage(rt, relayer, message);
}

export const BYTES32 = /^(0x)?[0-9a-fA-F]{64}$/;

export async function signTypedData(rt: Runtime, relayerId: string, input: { domainSeparator: string; hashStructMessage: string }): Promise<MessageSignature> {
  const issues = [
    BYTES32.test(input.domainSeparator) ? null : 'domain_separator: must be 32 bytes of hex',
    BYTES32.test(input.hashStructMessage) ? null : 'hash_struct_message: must be 32 bytes of hex',
  ].filter(Boolean);
  if (issues.length) throw invalid(issues.join('; '));
  const relayer = await activeRelayer(rt, relayerId);
  const ops = await opsOf(rt, relayer);
  if (!ops?.signTypedData) throw notSupported(rt, 'signing typed data', relayer);
  return ops.signTypedData(rt, relayer, input);
}

export async function signTransaction(rt: Runtime, relayerId: string, input: SignTransactionInput): Promise<SignedTransaction> {
  const relayer = await activeRelayer(rt, relayerId);
  const ops = await opsOf(rt, relayer);
  if (!ops?.signTransaction) throw notSupported(rt, 'signing a transaction without sending it', relayer);
  return ops.signTransaction(rt, relayer, input);
}

/** A JSON-RPC 2.0 request or batch for the relayer's nodes: the JSON-RPC answer (object or array). */
export async function relayerRpc(rt: Runtime, relayerId: string, body: unknown): Promise<unknown> {
  const relayer = await activeRelayer(rt, relayerId);
  const ops = await opsOf(rt, relayer);
  if (!ops) throw notSupported(rt, 'the JSON-RPC passthrough', relayer);
  return answerRpc(body as RpcBody, ops.rpc, (calls) => ops.rpc.forward(rt, relayer, calls));
}

/** The reference answers a family without them that gas abstraction is not supported (400 here, in the envelope). */
async function sponsoredOps(rt: Runtime, relayerId: string) {
  const relayer = await activeRelayer(rt, relayerId);
  const direct = await opsOf(rt, relayer);
  if (!direct?.sponsored) {
    const label = rt.families.spec(relayer.networkType).label;
    throw invalid(
      `sponsored transactions (gas abstraction) are not supported for ${label} relayers${direct?.sponsoredRefusal ? `: ${direct.sponsoredRefusal}` : ' on this service yet'}`,
    );
  }
  return { relayer, ops: direct.sponsored };
}

/** POST …/transactions/sponsored/quote: what the user's transaction would cost in the fee token. */
export async function sponsoredQuote(rt: Runtime, relayerId: string, request: unknown): Promise<unknown> {
  const { relayer, ops } = await sponsoredOps(rt, relayerId);
  return ops.quote(rt, relayer, request);
}

/** POST …/transactions/sponsored/build: the transaction the user signs, with the relayer paying the network fee and the user paying the relayer. */
export async function buildSponsoredTransaction(rt: Runtime, relayerId: string, request: unknown): Promise<unknown> {
  const { relayer, ops } = await sponsoredOps(rt, relayerId);
  return ops.build(rt, relayer, request);
}
