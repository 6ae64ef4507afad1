// Signing without sending (EIP-191 messages, EIP-712 digests) and the JSON-RPC passthrough, for EVM
// relayers: the EVM half of core/relayers/sign-and-forward.ts.
import { concat, keccak256, type Hex } from 'viem';
import type { Relayer } from '../../generated/prisma/client.js';
import { signerKey } from '../../core/signers.js';
import { invalid } from '../../core/domain-error.js';
import type { Runtime } from '../../core/runtime.js';
import { findNetwork } from '../../core/networks.js';
import type { DirectOps, Forwarded, MessageSignature } from '../../core/relayers/direct.js';
import { RPC_CODES, unreachable } from '../../core/relayers/rpc-rules.js';
import type { EvmSigner } from '../../signers/index.js';
import { rpcEndpoints, rpcFor } from './context.js';
import { evmBundler } from './aa/rpc.js';

function signerOf(rt: Runtime, relayer: Relayer): EvmSigner {
  const signer = rt.signers.loaded.get(signerKey(relayer.signerId, 'evm'));
  if (signer?.kind !== 'evm' || signer.address.toLowerCase() !== relayer.address.toLowerCase()) {
    throw invalid(`relayer ${relayer.id} has no signer for its address on this service`);
  }
  return signer;
}

/** A 65-byte signature (r, s, v with v 27 or 28) in the reference's form: hex without 0x. */
function split(signature: Hex): MessageSignature {
  const hex = signature.slice(2);
  return { kind: 'evm', r: hex.slice(0, 64), s: hex.slice(64, 128), v: Number.parseInt(hex.slice(128, 130), 16), sig: hex };
}

const hex32 = (s: string): Hex => (s.startsWith('0x') ? s : `0x${s}`) as Hex;

/** The digest EIP-712 signs: keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message)). */
export const typedDataDigest = (domainSeparator: string, hashStructMessage: string): Hex =>
  keccak256(concat(['0x1901', hex32(domainSeparator), hex32(hashStructMessage)]));

// Methods forwarded to the node: reads, simulation, and eth_sendRawTransaction (a transaction the
// client signed with its own key and nonce: it spends nothing of the relayer's, whose key never
// leaves this service). Everything else is refused: methods that sign or use keys held by the node
// (eth_sign*, eth_sendTransaction, personal_*, eth_accounts, which would list them), node and
// test-chain administration (admin_, debug_, miner_, txpool_, anvil_, hardhat_, evm_, wallet_), and
// filters (eth_newFilter, ...), which live on one node and break under failover.
const ALLOWED = new Set([
  'eth_blockNumber',
  'eth_chainId',
  'eth_syncing',
  'eth_protocolVersion',
  'eth_gasPrice',
  'eth_maxPriorityFeePerGas',
  'eth_feeHistory',
  'eth_blobBaseFee',
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getProof',
  'eth_getTransactionCount',
  'eth_call',
  'eth_estimateGas',
  'eth_createAccessList',
  'eth_simulateV1',
  'eth_getBlockByNumber',
  'eth_getBlockByHash',
  'eth_getBlockReceipts',
  'eth_getBlockTransactionCountByHash',
  'eth_getBlockTransactionCountByNumber',
  'eth_getUncleCountByBlockHash',
  'eth_getUncleCountByBlockNumber',
  'eth_getUncleByBlockHashAndIndex',
  'eth_getUncleByBlockNumberAndIndex',
  'eth_getTransactionByHash',
  'eth_getTransactionByBlockHashAndIndex',
  'eth_getTransactionByBlockNumberAndIndex',
  'eth_getTransactionBySenderAndNonce',
  'eth_getTransactionReceipt',
  'eth_getLogs',
  'eth_sendRawTransaction',
  'net_version',
  'net_listening',
  'net_peerCount',
  'web3_clientVersion',
  'web3_sha3',
]);

const KEY_METHODS = /^(eth_sign|eth_signTransaction|eth_signTypedData.*|eth_sendTransaction|eth_accounts|eth_requestAccounts|personal_.*|wallet_.*)$/;
const ADMIN_METHODS = /^(admin|debug|miner|txpool|anvil|hardhat|evm|ganache|parity|clique|engine)_/;

export function evmRefusal(method: string): string | null {
  if (ALLOWED.has(method)) return null;
  if (KEY_METHODS.test(method)) return `${method} is refused: it would sign with or reveal keys held by the node`;
  if (ADMIN_METHODS.test(method)) return `${method} is refused: it administers the node`;
  return `${method} is not offered by the passthrough (reads, eth_call, eth_estimateGas and eth_sendRawTransaction are)`;
}

async function forward(rt: Runtime, relayer: Relayer, calls: { method: string; params: unknown }[]): Promise<Forwarded[]> {
  const network = findNetwork(rt, 'evm', relayer.network);
  if (!network) throw invalid(`network "${relayer.network}" of relayer ${relayer.id} is not configured`);
  const out: (Forwarded | undefined)[] = calls.map((c) =>
    Array.isArray(c.params) ? undefined : { ok: false, error: { code: RPC_CODES.invalidParams, message: 'params: must be an array for EVM methods' } },
  );
  const sent = calls.flatMap((c, i) => (out[i] ? [] : [{ i, call: { method: c.method, params: c.params as unknown[] } }]));
  if (sent.length) {
    let answers: Forwarded[];
    try {
      const outcomes = await rpcFor(rt, rpcEndpoints(rt, relayer, network)).batch(sent.map((s) => s.call));
      answers = outcomes.map((o) => (o.ok ? o : { ok: false, error: { code: o.error.code, message: o.error.message, data: o.error.data } }));
    } catch (e) {
      rt.log.warn({ relayerId: relayer.id, err: (e as Error).message }, 'rpc passthrough: no endpoint answered');
      answers = unreachable(sent.length);
    }
    sent.forEach((s, k) => {
      out[s.i] = answers[k];
    });
  }
  return out as Forwarded[];
}

export const evmDirect: DirectOps = {
  async signMessage(rt, relayer, message) {
    return split(await signerOf(rt, relayer).account.signMessage({ message }));
  },
  async signTypedData(rt, relayer, input) {
    const account = signerOf(rt, relayer).account;
    return split(await account.sign!({ hash: typedDataDigest(input.domainSeparator, input.hashStructMessage) }));
  },
  sponsoredRefusal: 'gasless EVM transactions go through an ERC-4337 bundler and paymaster, not sponsored quote and build',
  bundler: evmBundler,
  rpc: { refusal: evmRefusal, forward },
};
