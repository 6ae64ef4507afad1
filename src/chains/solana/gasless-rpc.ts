// The reference's Solana JSON-RPC methods through POST /api/v1/relayers/{id}/rpc: the gasless ones
// (feeEstimate, prepareTransaction, transferTransaction), signing and sending a user's transaction
// (signTransaction, signAndSendTransaction) and what the relayer offers (getSupportedTokens,
// getFeaturesEnabled). Params are objects by the reference's names; errors its codes and names.
import { isAddress, getBase58Decoder, getBase64Decoder, getTransactionEncoder, type Address, type SignatureBytes, type Transaction } from '@solana/kit';
import type { Relayer } from '../../generated/prisma/client.js';
import { isDomainError, invalid } from '../../core/domain-error.js';
import type { Forwarded } from '../../core/relayers/direct.js';
import type { Runtime } from '../../core/runtime.js';
import { sendTransaction } from '../../core/transactions/service.js';
import { buildSponsored, checkFeePaid, feeInstructions, quoteSponsored, type GaslessCtx } from './gasless.js';
import { contextOf } from './pipeline.js';
import { checkSolanaPolicy } from './policy.js';
import { SolanaRequestError } from './request-error.js';
import { JsonRpcError, RpcUnavailableError } from './rpc-client.js';
import { ataOf, TOKEN_PROGRAM, transferChecked } from './token.js';
import { decodeSolanaTx } from './transaction.js';
import { buildUnsigned } from './unsigned.js';

export const GASLESS_METHODS: ReadonlySet<string> = new Set([
  'feeEstimate',
  'transferTransaction',
  'prepareTransaction',
  'signTransaction',
  'signAndSendTransaction',
  'getSupportedTokens',
  'getFeaturesEnabled',
]);

const DEFAULT_SLIPPAGE = 1;

const obj = (params: unknown): Record<string, unknown> =>
  params && typeof params === 'object' && !Array.isArray(params) ? (params as Record<string, unknown>) : {};

/** The relayer's signature added to a user's transaction, after the policy and (users paying fees) the fee are checked. */
async function signChecked(c: GaslessCtx, params: unknown) {
  const p = obj(params);
  if (typeof p.transaction !== 'string') throw invalid('transaction: required (a base64 wire transaction)');
  const decoded = decodeSolanaTx(p.transaction);
  if (decoded.feePayer !== c.signer.address) throw invalid(`transaction: fee payer must be the relayer ${c.signer.address}`);
  const exempt = await feeInstructions(decoded, c.signer.address, c.policy);
  checkSolanaPolicy(decoded, { ...c.policy, max_allowed_fee_lamports: undefined, min_balance: undefined }, { exempt });
  if ((c.policy.fee_payment_strategy ?? 'user') === 'user') await checkFeePaid(c, decoded);
  const sig = await c.signer.sign(new Uint8Array(decoded.transaction.messageBytes));
  const signed: Transaction = {
    ...decoded.transaction,
    signatures: { ...decoded.transaction.signatures, [c.signer.address as Address]: sig as SignatureBytes },
  };
  return { wire: p.transaction, transaction: getBase64Decoder().decode(getTransactionEncoder().encode(signed)), signature: getBase58Decoder().decode(sig) };
}

async function transfer(c: GaslessCtx, params: unknown) {
  const p = obj(params);
  const amount = typeof p.amount === 'number' && Number.isSafeInteger(p.amount) ? BigInt(p.amount) : undefined;
  if (amount === undefined || amount <= 0n) throw invalid('amount: must be a positive integer (token base units)');
  for (const k of ['token', 'source', 'destination'] as const)
    if (typeof p[k] !== 'string' || !isAddress(p[k])) throw invalid(`${k}: must be a base58 address`);
  const [token, source, destination] = [p.token, p.source, p.destination] as string[];
  for (const [k, a] of [
    ['source', source],
    ['destination', destination],
  ]) {
    if ((c.policy.disallowed_accounts as string[] | undefined)?.includes(a))
      throw new SolanaRequestError(`policy disallowed_accounts: account ${a} is disallowed`, 'policy');
    if (c.policy.allowed_accounts && !(c.policy.allowed_accounts as string[]).includes(a))
      throw new SolanaRequestError(`policy allowed_accounts: ${k} ${a} is not in allowed_accounts`, 'policy');
  }
  const info = await c.rpc.getAccountInfo(token);
  const program = info?.owner ?? TOKEN_PROGRAM;
  const decimals = c.policy.allowed_tokens?.find((t) => t.mint === token)?.decimals ?? (info ? info.data[44] : 0);
  const [from, to] = await Promise.all([ataOf(source, token, program), ataOf(destination, token, program)]);
  if (!(await c.rpc.getAccountInfo(to))) throw invalid(`destination: ${destination} has no token account for ${token}`);
  const ix = transferChecked({ tokenProgram: program, source: from, mint: token, destination: to, owner: source, amount, decimals });
  const latest = await c.rpc.getLatestBlockhash();
  return buildSponsored(c, { transaction: buildUnsigned(source, [ix], latest.blockhash), fee_token: token });
}

async function answer(rt: Runtime, relayer: Relayer, method: string, params: unknown): Promise<unknown> {
  const c: GaslessCtx = { ...contextOf(rt, relayer), rt };
  switch (method) {
    case 'feeEstimate':
      return quoteSponsored(c, params);
    case 'prepareTransaction':
      return buildSponsored(c, params);
    case 'transferTransaction':
      return transfer(c, params);
    case 'signTransaction': {
      const s = await signChecked(c, params);
      return { transaction: s.transaction, signature: s.signature };
    }
    case 'signAndSendTransaction': {
      const s = await signChecked(c, params);
      // Through the pipeline (tracked, exactly once, webhooks); it signs the same bytes again (ed25519 is deterministic).
      const tx = await sendTransaction(rt, relayer.id, { transaction: s.wire });
      return { transaction: s.transaction, signature: s.signature, id: tx.id };
    }
    case 'getSupportedTokens':
      return {
        tokens: (c.policy.allowed_tokens ?? []).map((t) => ({
          mint: t.mint,
          symbol: t.symbol ?? '',
          decimals: t.decimals ?? 0,
          max_allowed_fee: t.max_allowed_fee,
          conversion_slippage_percentage: t.swap_config?.slippage_percentage ?? DEFAULT_SLIPPAGE,
        })),
      };
    case 'getFeaturesEnabled':
      return { features: ['gasless'] };
  }
  throw new Error(`not a gasless method: ${method}`);
}

/** One gasless call, answered here (never forwarded): its result, or the reference's error for it. */
export async function answerGasless(rt: Runtime, relayer: Relayer, method: string, params: unknown): Promise<Forwarded> {
  try {
    return { ok: true, result: await answer(rt, relayer, method, params) };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    // The network's RPC unreachable or refusing: the reference's provider error (-32006 PREPARATION_ERROR).
    const rpc = [e, (e as Error | undefined)?.cause].find((x) => x instanceof RpcUnavailableError || x instanceof JsonRpcError) as Error | undefined;
    if (rpc) {
      const description =
        e === rpc ? `the network's Solana RPC ${rpc instanceof JsonRpcError ? 'refused the request' : 'does not answer'}: ${message}` : message;
      return { ok: false, error: { code: -32006, message: 'PREPARATION_ERROR', description } };
    }
    if (e instanceof SolanaRequestError || isDomainError(e, 'invalid')) {
      if (message.startsWith('policy ')) return { ok: false, error: { code: -32013, message: 'PREPARATION_ERROR', description: message } };
      return { ok: false, error: { code: -32602, message: 'INVALID_PARAMS', description: message } };
    }
    if (isDomainError(e, 'unavailable')) return { ok: false, error: { code: -32001, message: 'ESTIMATION_ERROR', description: message } };
    rt.log.error({ err: e, method, relayerId: relayer.id }, 'solana gasless rpc method failed');
    return { ok: false, error: { code: -32000, message: 'INTERNAL_ERROR', description: 'Internal error' } };
  }
}
