import type { RpcEndpoint } from '../../core/rpc-urls.js';
import { createJsonRpcClient, type JsonRpcClient, type JsonRpcClientOptions } from '../jsonrpc.js';

export { JsonRpcError, RpcUnavailableError } from '../jsonrpc.js';

export type Commitment = 'processed' | 'confirmed' | 'finalized';

export type SignatureStatus = {
  slot: number;
  confirmations: number | null;
  err: unknown;
  confirmationStatus: Commitment | null;
};

export type SimulationResult = { err: unknown; logs: string[] | null; unitsConsumed?: number };

export interface SolanaRpc {
  getLatestBlockhash(commitment?: Commitment): Promise<{ blockhash: string; lastValidBlockHeight: bigint }>;
  getBlockHeight(commitment?: Commitment): Promise<bigint>;
  isBlockhashValid(blockhash: string, commitment?: Commitment): Promise<boolean>;
  /** Lamports. */
  getBalance(address: string, commitment?: Commitment): Promise<bigint>;
  /** Lamports, or null when the message's blockhash is no longer valid. */
  getFeeForMessage(messageBase64: string, commitment?: Commitment): Promise<bigint | null>;
  /** Returns the transaction signature (base58). */
  sendTransaction(wireBase64: string, opts?: { skipPreflight?: boolean; preflightCommitment?: Commitment; maxRetries?: number }): Promise<string>;
  simulateTransaction(wireBase64: string, opts?: { sigVerify?: boolean; commitment?: Commitment }): Promise<SimulationResult>;
  getSignatureStatuses(signatures: string[], opts?: { searchTransactionHistory?: boolean }): Promise<(SignatureStatus | null)[]>;
}

type WithContext<T> = { context: { slot: number }; value: T };

/** Wraps any JSON-RPC transport (anything with `request`) as a Solana RPC client. */
export function solanaRpcFrom(transport: JsonRpcClient): SolanaRpc {
  const call = <T>(method: string, params: unknown[]) => transport.request<T>(method, params);
  return {
    async getLatestBlockhash(commitment = 'confirmed') {
      const res = await call<WithContext<{ blockhash: string; lastValidBlockHeight: number }>>('getLatestBlockhash', [{ commitment }]);
      return { blockhash: res.value.blockhash, lastValidBlockHeight: BigInt(res.value.lastValidBlockHeight) };
    },
    async getBlockHeight(commitment = 'confirmed') {
      return BigInt(await call<number>('getBlockHeight', [{ commitment }]));
    },
    async isBlockhashValid(blockhash, commitment = 'confirmed') {
      return (await call<WithContext<boolean>>('isBlockhashValid', [blockhash, { commitment }])).value;
    },
    async getBalance(address, commitment = 'confirmed') {
      return BigInt((await call<WithContext<number>>('getBalance', [address, { commitment }])).value);
    },
    async getFeeForMessage(messageBase64, commitment = 'confirmed') {
      const { value } = await call<WithContext<number | null>>('getFeeForMessage', [messageBase64, { commitment }]);
      return value === null ? null : BigInt(value);
    },
    sendTransaction(wireBase64, opts = {}) {
      return call<string>('sendTransaction', [wireBase64, { encoding: 'base64', preflightCommitment: 'confirmed', ...opts }]);
    },
    async simulateTransaction(wireBase64, opts = {}) {
      return (await call<WithContext<SimulationResult>>('simulateTransaction', [wireBase64, { encoding: 'base64', ...opts }])).value;
    },
    async getSignatureStatuses(signatures, opts = {}) {
      return (await call<WithContext<(SignatureStatus | null)[]>>('getSignatureStatuses', [signatures, opts])).value;
    },
  };
}

export function createSolanaRpc(endpoints: readonly RpcEndpoint[], opts?: JsonRpcClientOptions): SolanaRpc {
  return solanaRpcFrom(createJsonRpcClient(endpoints, opts));
}
