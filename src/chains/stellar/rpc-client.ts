import { StrKey, xdr } from '@stellar/stellar-base';
import type { rpc as sdkRpc } from '@stellar/stellar-sdk';
import type { RpcEndpoint } from '../../core/rpc-urls.js';
import { createJsonRpcClient, type JsonRpcClient, type JsonRpcClientOptions } from '../jsonrpc.js';

export { JsonRpcError, RpcUnavailableError } from '../jsonrpc.js';

// Raw (un-parsed) Stellar RPC payloads, as the SDK types them.
export type RawSimulateResponse = sdkRpc.Api.RawSimulateTransactionResponse;
export type RawSendResponse = sdkRpc.Api.RawSendTransactionResponse;
export type RawGetTransactionResponse = sdkRpc.Api.RawGetTransactionResponse;
export type RawLedgerEntriesResponse = sdkRpc.Api.RawGetLedgerEntriesResponse;
export type RawGetTransactionsResponse = sdkRpc.Api.RawGetTransactionsResponse;

export type StellarAccountState = { sequence: bigint; balance: bigint };

export interface StellarRpc {
  getNetwork(): Promise<{ passphrase: string; protocolVersion: number | string }>;
  getLatestLedger(): Promise<{ id: string; sequence: number; protocolVersion: number | string }>;
  /** keys: base64 xdr.LedgerKey values. */
  getLedgerEntries(keys: string[]): Promise<RawLedgerEntriesResponse>;
  /** The account's current sequence number and native balance (stroops); null if it does not exist. */
  getAccount(address: string): Promise<StellarAccountState | null>;
  /** The account's balance of a classic asset (its trustline, in the asset's stroops); null when it has no trustline. */
  getTrustline(address: string, asset: { code: string; issuer: string }): Promise<bigint | null>;
  simulateTransaction(transactionXdr: string): Promise<RawSimulateResponse>;
  sendTransaction(transactionXdr: string): Promise<RawSendResponse>;
  getTransaction(hash: string): Promise<RawGetTransactionResponse>;
  /** Transactions of the network in ledger order, from `startLedger` or after `cursor`. */
  getTransactions(page: { startLedger: number; limit?: number } | { cursor: string; limit?: number }): Promise<RawGetTransactionsResponse>;
}

export function accountLedgerKey(address: string): string {
  if (!StrKey.isValidEd25519PublicKey(address)) throw new Error(`not a Stellar account address: ${address}`);
  const accountId = xdr.PublicKey.publicKeyTypeEd25519(StrKey.decodeEd25519PublicKey(address));
  return xdr.LedgerKey.account(new xdr.LedgerKeyAccount({ accountId })).toXDR('base64');
}

export function trustlineLedgerKey(address: string, asset: { code: string; issuer: string }): string {
  if (!StrKey.isValidEd25519PublicKey(address)) throw new Error(`not a Stellar account address: ${address}`);
  const accountId = xdr.PublicKey.publicKeyTypeEd25519(StrKey.decodeEd25519PublicKey(address));
  const issuer = xdr.PublicKey.publicKeyTypeEd25519(StrKey.decodeEd25519PublicKey(asset.issuer));
  const code = Buffer.alloc(asset.code.length <= 4 ? 4 : 12);
  code.write(asset.code, 'ascii');
  const line =
    asset.code.length <= 4
      ? xdr.TrustLineAsset.assetTypeCreditAlphanum4(new xdr.AlphaNum4({ assetCode: code, issuer }))
      : xdr.TrustLineAsset.assetTypeCreditAlphanum12(new xdr.AlphaNum12({ assetCode: code, issuer }));
  return xdr.LedgerKey.trustline(new xdr.LedgerKeyTrustLine({ accountId, asset: line })).toXDR('base64');
}

/** Wraps any JSON-RPC transport (anything with `request`) as a Stellar RPC client. */
export function stellarRpcFrom(transport: JsonRpcClient): StellarRpc {
  const call = <T>(method: string, params?: Record<string, unknown>) => transport.request<T>(method, params ?? {});
  return {
    getNetwork: () => call('getNetwork'),
    getLatestLedger: () => call('getLatestLedger'),
    getLedgerEntries: (keys) => call('getLedgerEntries', { keys }),
    async getAccount(address) {
      const res = await call<RawLedgerEntriesResponse>('getLedgerEntries', { keys: [accountLedgerKey(address)] });
      const entry = res.entries?.[0];
      if (!entry) return null;
      const account = xdr.LedgerEntryData.fromXDR(entry.xdr, 'base64').account();
      return { sequence: BigInt(account.seqNum().toString()), balance: BigInt(account.balance().toString()) };
    },
    async getTrustline(address, asset) {
      const res = await call<RawLedgerEntriesResponse>('getLedgerEntries', { keys: [trustlineLedgerKey(address, asset)] });
      const entry = res.entries?.[0];
      if (!entry) return null;
      return BigInt(xdr.LedgerEntryData.fromXDR(entry.xdr, 'base64').trustLine().balance().toString());
    },
    simulateTransaction: (transaction) => call('simulateTransaction', { transaction }),
    sendTransaction: (transaction) => call('sendTransaction', { transaction }),
    getTransaction: (hash) => call('getTransaction', { hash }),
    getTransactions: (page) =>
      call(
        'getTransactions',
        'cursor' in page ? { pagination: { cursor: page.cursor, limit: page.limit } } : { startLedger: page.startLedger, pagination: { limit: page.limit } },
      ),
  };
}

export function createStellarRpc(endpoints: readonly RpcEndpoint[], opts?: JsonRpcClientOptions): StellarRpc {
  return stellarRpcFrom(createJsonRpcClient(endpoints, opts));
}
