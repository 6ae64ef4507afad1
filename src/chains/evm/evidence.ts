import { toHex, type Address, type Hex } from 'viem';
import { RpcError, RpcUnavailableError, type EvmRpc } from './rpc-client.js';

type ChainTx = { hash: Hex; from: Address; nonce: Hex; blockNumber: Hex | null };

/**
 * The transaction the chain mined from `address` at `nonce`, found on chain; null when no node
 * answer proves which it was (a pruned node, a node that lags the one that reported the nonce).
 * Nodes that index by sender and nonce answer in one call; any other is searched block by block
 * for where the account's nonce passed `nonce` (which needs the historical state of a full node).
 * A network that cannot be reached throws RpcUnavailableError, as every RPC call does.
 */
export async function minedAt(rpc: EvmRpc, address: Address, nonce: bigint, head: bigint): Promise<Hex | null> {
  const matches = (t: ChainTx | null | undefined): t is ChainTx =>
    !!t && !!t.blockNumber && t.from.toLowerCase() === address.toLowerCase() && BigInt(t.nonce) === nonce;
  const direct = await optional(rpc.request<ChainTx | null>('eth_getTransactionBySenderAndNonce', [address, toHex(nonce)]));
  if (matches(direct)) return direct.hash;
  const hash = await optional(rpc.request<Hex | null>('ots_getTransactionBySenderAndNonce', [address, toHex(nonce)]));
  if (hash) {
    const t = await optional(rpc.request<ChainTx | null>('eth_getTransactionByHash', [hash]));
    if (matches(t)) return t.hash;
  }
  // The first block at whose end the account's nonce is past `nonce` holds the transaction.
  const countAt = async (block: bigint) => BigInt(await rpc.request<Hex>('eth_getTransactionCount', [address, toHex(block)]));
  try {
    if ((await countAt(head)) <= nonce) return null;
    let lo = 0n;
    let hi = head;
    while (lo < hi) {
      const mid = (lo + hi) / 2n;
      if ((await countAt(mid)) > nonce) hi = mid;
      else lo = mid + 1n;
    }
    const block = await rpc.request<{ transactions: ChainTx[] } | null>('eth_getBlockByNumber', [toHex(lo), true]);
    return block?.transactions.find(matches)?.hash ?? null;
  } catch (e) {
    // No historical state on any node (pruned: often reported as a transient error): no proof.
    if (e instanceof RpcError || e instanceof RpcUnavailableError) return null;
    throw e;
  }
}

/** A method some nodes lack: its refusal is no answer, not a failure. */
const optional = <T>(p: Promise<T>): Promise<T | null> =>
  p.catch((e) => {
    if (e instanceof RpcError) return null;
    throw e;
  });
