// Signing without sending (SEP-53 messages, transaction envelopes) and the JSON-RPC passthrough, for
// Stellar relayers: the Stellar half of core/relayers/sign-and-forward.ts.
import { createHash } from 'node:crypto';
import { Transaction, TransactionBuilder } from '@stellar/stellar-base';
import type { Relayer } from '../../generated/prisma/client.js';
import { signerKey } from '../../core/signers.js';
import { invalid, unavailable } from '../../core/domain-error.js';
import type { Runtime } from '../../core/runtime.js';
import { findNetwork } from '../../core/networks.js';
import type { DirectOps } from '../../core/relayers/direct.js';
import type { StellarSigner } from '../../signers/index.js';
import { createJsonRpcClient, JsonRpcError, RpcUnavailableError } from '../jsonrpc.js';
import { forwardEach } from '../passthrough.js';
import { signEnvelope } from './build.js';
import { clientCache, endpointsOf } from '../plumbing.js';
import { buildSponsored, checkFeePaid, quoteSponsored } from './gasless.js';
import { StellarRequestError } from './request-error.js';
import { contextOf } from './pipeline.js';

function signerOf(rt: Runtime, relayer: Relayer): StellarSigner {
  const signer = rt.signers.loaded.get(signerKey(relayer.signerId, 'stellar'));
  if (signer?.kind !== 'stellar' || signer.address !== relayer.address) throw invalid(`relayer ${relayer.id} has no signer for its address on this service`);
  return signer;
}

function networkOf(rt: Runtime, relayer: Relayer) {
  const network = findNetwork(rt, 'stellar', relayer.network);
  if (!network?.passphrase) throw invalid(`network "${relayer.network}" of relayer ${relayer.id} is not configured`);
  return network as typeof network & { passphrase: string };
}

/** SEP-53: what a Stellar message signature signs, SHA-256("Stellar Signed Message:\n" ‖ message). */
export const messageDigest = (message: string): Buffer =>
  createHash('sha256')
    .update(Buffer.concat([Buffer.from('Stellar Signed Message:\n'), Buffer.from(message, 'utf8')]))
    .digest();

const ALLOWED = new Set([
  'getHealth',
  'getNetwork',
  'getVersionInfo',
  'getLatestLedger',
  'getLedgers',
  'getLedgerEntries',
  'getFeeStats',
  'getTransaction',
  'getTransactions',
  'getEvents',
  'simulateTransaction',
  'sendTransaction',
]);

export function stellarRefusal(method: string): string | null {
  if (ALLOWED.has(method)) return null;
  return `${method} is not offered by the passthrough (the Stellar RPC reads, simulateTransaction and sendTransaction are)`;
}

const clientFor = clientCache('stellar passthrough clients', (endpoints) => createJsonRpcClient(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000 }));

export const stellarDirect: DirectOps = {
  async signMessage(rt, relayer, message) {
    const signer = signerOf(rt, relayer);
    const signature = Buffer.from(await signer.sign(messageDigest(message))).toString('base64');
    return { kind: 'ed25519', signature, publicKey: signer.address };
  },
  async signTransaction(rt, relayer, input) {
    if (input.transaction != null) throw invalid('transaction: Solana relayers take it; Stellar relayers take unsigned_xdr');
    if (!input.unsignedXdr) throw invalid('unsigned_xdr: required (a base64 transaction envelope)');
    const signer = signerOf(rt, relayer);
    let tx: ReturnType<typeof TransactionBuilder.fromXDR>;
    try {
      tx = TransactionBuilder.fromXDR(input.unsignedXdr, networkOf(rt, relayer).passphrase);
    } catch {
      throw invalid('unsigned_xdr: is not a base64 Stellar transaction envelope');
    }
    // A relayer whose users pay its fees signs only what pays it (the reference's check before signing).
    const c = contextOf(rt, relayer);
    if (c.policy.fee_payment_strategy === 'user') {
      if (!(tx instanceof Transaction)) throw invalid('unsigned_xdr: fee-bump transactions are not supported for gasless transactions');
      try {
        await checkFeePaid(c, tx, { field: 'unsigned_xdr', signing: true });
      } catch (e) {
        if (e instanceof StellarRequestError) throw invalid(e.message);
        if (e instanceof RpcUnavailableError) throw unavailable(`the network's Stellar RPC does not answer: ${e.message}`);
        if (e instanceof JsonRpcError) throw invalid(`the network's RPC refused the request: ${e.message}`);
        throw e;
      }
    }
    const signature = await signEnvelope(tx, signer);
    return { kind: 'stellar', signedXdr: tx.toXDR(), signature };
  },
  sponsored: {
    quote: (rt, relayer, request) => quoteSponsored(contextOf(rt, relayer), request),
    build: (rt, relayer, request) => buildSponsored(contextOf(rt, relayer), request),
  },
  rpc: {
    refusal: stellarRefusal,
    forward: (rt, relayer, calls) => forwardEach(rt, relayer, clientFor(rt, endpointsOf(relayer, networkOf(rt, relayer).rpcUrls)), calls),
  },
};
