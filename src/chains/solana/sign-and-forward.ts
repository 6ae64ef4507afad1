// Signing without sending (messages, transactions) and the JSON-RPC passthrough, for Solana
// relayers: the Solana half of core/relayers/sign-and-forward.ts.
import { getBase58Decoder, getBase64Decoder, getTransactionEncoder, type Address, type SignatureBytes, type Transaction } from '@solana/kit';
import type { Relayer } from '../../generated/prisma/client.js';
import { signerKey } from '../../core/signers.js';
import { invalid } from '../../core/domain-error.js';
import type { Runtime } from '../../core/runtime.js';
import { findNetwork } from '../../core/networks.js';
import type { DirectOps } from '../../core/relayers/direct.js';
import type { SolanaSigner } from '../../signers/index.js';
import { createJsonRpcClient } from '../jsonrpc.js';
import { forwardEach } from '../passthrough.js';
import { clientCache, endpointsOf } from '../plumbing.js';
import { buildSponsored, quoteSponsored } from './gasless.js';
import { answerGasless, GASLESS_METHODS } from './gasless-rpc.js';
import { contextOf } from './pipeline.js';
import { SolanaRequestError } from './request-error.js';
import { checkSolanaPolicy, solanaPolicySchema } from './policy.js';
import { decodeSolanaTx } from './transaction.js';

function signerOf(rt: Runtime, relayer: Relayer): SolanaSigner {
  const signer = rt.signers.loaded.get(signerKey(relayer.signerId, 'solana'));
  if (signer?.kind !== 'solana' || signer.address !== relayer.address) throw invalid(`relayer ${relayer.id} has no signer for its address on this service`);
  return signer;
}

/**
 * Signs the relayer's slot of a client-built transaction (the relayer must be its fee payer, and the
 * relayer's policy must allow it, as for a send) without sending it; the blockhash is left as given.
 */
async function signTransaction(rt: Runtime, relayer: Relayer, base64: string) {
  const signer = signerOf(rt, relayer);
  try {
    const decoded = decodeSolanaTx(base64);
    if (decoded.feePayer !== signer.address) throw new SolanaRequestError(`transaction: fee payer must be the relayer ${signer.address}`, 'transaction');
    checkSolanaPolicy(decoded, solanaPolicySchema.parse(relayer.policies ?? {}));
    const sig = await signer.sign(new Uint8Array(decoded.transaction.messageBytes));
    const signed: Transaction = {
      messageBytes: decoded.transaction.messageBytes,
      signatures: { ...decoded.transaction.signatures, [signer.address as Address]: sig as SignatureBytes },
    };
    return { transaction: getBase64Decoder().decode(getTransactionEncoder().encode(signed)), signature: getBase58Decoder().decode(sig) };
  } catch (e) {
    if (e instanceof SolanaRequestError) throw invalid(e.message);
    throw e;
  }
}

// Forwarded: reads, simulation and sendTransaction (a transaction its signers signed themselves;
// the relayer's key never leaves this service, so it cannot have signed it here).
const ALLOWED = new Set([
  'getAccountInfo',
  'getBalance',
  'getBlock',
  'getBlockCommitment',
  'getBlockHeight',
  'getBlockProduction',
  'getBlockTime',
  'getBlocks',
  'getBlocksWithLimit',
  'getEpochInfo',
  'getEpochSchedule',
  'getFeeForMessage',
  'getFirstAvailableBlock',
  'getGenesisHash',
  'getHealth',
  'getHighestSnapshotSlot',
  'getInflationGovernor',
  'getInflationRate',
  'getLargestAccounts',
  'getLatestBlockhash',
  'getMinimumBalanceForRentExemption',
  'getMultipleAccounts',
  'getProgramAccounts',
  'getRecentPerformanceSamples',
  'getRecentPrioritizationFees',
  'getSignatureStatuses',
  'getSignaturesForAddress',
  'getSlot',
  'getSlotLeader',
  'getStakeMinimumDelegation',
  'getSupply',
  'getTokenAccountBalance',
  'getTokenAccountsByDelegate',
  'getTokenAccountsByOwner',
  'getTokenLargestAccounts',
  'getTokenSupply',
  'getTransaction',
  'getTransactionCount',
  'getVersion',
  'isBlockhashValid',
  'minimumLedgerSlot',
  'simulateTransaction',
  'sendTransaction',
]);

export function solanaRefusal(method: string): string | null {
  if (ALLOWED.has(method)) return null;
  if (GASLESS_METHODS.has(method)) return null;
  if (method === 'requestAirdrop') return 'requestAirdrop is refused: it is not a read';
  return `${method} is not offered by the passthrough (reads, simulateTransaction and sendTransaction are)`;
}

/** The reference client's `rawRpcRequest` wraps a node call in `params: {method, params}`. */
function unwrap(call: { method: string; params: unknown }) {
  if (call.method !== 'rawRpcRequest') return call;
  const inner = call.params as { method?: unknown; params?: unknown } | null;
  if (!inner || typeof inner !== 'object' || typeof inner.method !== 'string') return { method: 'rawRpcRequest (params.method missing)', params: [] };
  return { method: inner.method, params: inner.params ?? [] };
}

const clientFor = clientCache('solana passthrough clients', (endpoints) => createJsonRpcClient(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000 }));

async function forward(rt: Runtime, relayer: Relayer, calls: { method: string; params: unknown }[]) {
  const network = findNetwork(rt, 'solana', relayer.network);
  if (!network) throw invalid(`network "${relayer.network}" of relayer ${relayer.id} is not configured`);
  // The reference's own methods are answered here, the node's forwarded: each keeps its place.
  const remote = calls.filter((c) => !GASLESS_METHODS.has(c.method));
  const forwarded = remote.length ? await forwardEach(rt, relayer, clientFor(rt, endpointsOf(relayer, network.rpcUrls)), remote) : [];
  let next = 0;
  return Promise.all(calls.map((c) => (GASLESS_METHODS.has(c.method) ? answerGasless(rt, relayer, c.method, c.params) : forwarded[next++])));
}

export const solanaDirect: DirectOps = {
  async signMessage(rt, relayer, message) {
    const signer = signerOf(rt, relayer);
    const sig = await signer.sign(new TextEncoder().encode(message));
    return { kind: 'ed25519', signature: getBase58Decoder().decode(sig), publicKey: signer.address };
  },
  async signTransaction(rt, relayer, input) {
    if (input.unsignedXdr != null) throw invalid('unsigned_xdr: Stellar relayers take it; Solana relayers take transaction');
    if (!input.transaction) throw invalid('transaction: required (a base64 wire transaction)');
    return { kind: 'solana', ...(await signTransaction(rt, relayer, input.transaction)) };
  },
  sponsored: {
    quote: (rt, relayer, request) => quoteSponsored({ ...contextOf(rt, relayer), rt }, request),
    build: (rt, relayer, request) => buildSponsored({ ...contextOf(rt, relayer), rt }, request),
  },
  rpc: { refusal: solanaRefusal, unwrap, forward },
};
