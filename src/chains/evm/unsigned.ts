// The transaction the EVM pipeline signs, by its fees and what it carries: legacy, EIP-1559, or
// EIP-7702 (type 4) when its request holds authorizations (a bundle of UserOperations whose
// accounts become smart accounts in it).
import type { Address, Hex, SignedAuthorization, TransactionSerializable } from 'viem';
import type { FeeParams } from './fees.js';

/** An EIP-7702 authorization as a row's request keeps it (JSON). */
export type AuthorizationJson = { chainId: number; address: string; nonce: number; yParity: number; r: string; s: string };

export const authorizationFromJson = (a: AuthorizationJson): SignedAuthorization => ({
  chainId: a.chainId,
  address: a.address as Address,
  nonce: a.nonce,
  yParity: a.yParity,
  r: a.r as Hex,
  s: a.s as Hex,
});

export const authorizationToJson = (a: SignedAuthorization): AuthorizationJson => ({
  chainId: a.chainId,
  address: a.address,
  nonce: a.nonce,
  yParity: a.yParity ?? (a.v === 28n ? 1 : 0),
  r: a.r,
  s: a.s,
});

export type TxBody = { chainId: number; nonce: number; gas: bigint; to?: Address; value: bigint; data?: Hex };

export function unsignedTransaction(body: TxBody, fees: FeeParams, authorizations?: AuthorizationJson[]): TransactionSerializable {
  if (authorizations?.length) {
    if (!body.to) throw new Error('an EIP-7702 transaction needs a recipient');
    // Type 4 has EIP-1559 fees only: a legacy price becomes both caps.
    const f = 'gasPrice' in fees ? { maxFeePerGas: fees.gasPrice, maxPriorityFeePerGas: fees.gasPrice } : fees;
    return { type: 'eip7702', ...f, ...body, authorizationList: authorizations.map(authorizationFromJson) } as TransactionSerializable;
  }
  return ('gasPrice' in fees ? { type: 'legacy', gasPrice: fees.gasPrice, ...body } : { type: 'eip1559', ...fees, ...body }) as TransactionSerializable;
}
