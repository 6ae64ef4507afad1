import {
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Address,
  type CompiledTransactionMessage,
  type CompiledTransactionMessageWithLifetime,
  type Transaction,
} from '@solana/kit';
import { SolanaRequestError } from './request-error.js';
import { BASE64 } from '../../lib/validate.js';

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';
/** Wire-format size limit of a Solana transaction (IPv6 MTU minus headers). */
export const MAX_TRANSACTION_SIZE = 1232;

type LegacyOrV0 = Extract<CompiledTransactionMessage, { version: 'legacy' | 0 }>;
export type SolanaMessage = LegacyOrV0 & CompiledTransactionMessageWithLifetime;

export type DecodedSolanaTx = {
  transaction: Transaction;
  message: SolanaMessage;
  feePayer: Address;
  wireSize: number;
};

function invalid(reason: string): SolanaRequestError {
  return new SolanaRequestError(`transaction: ${reason}`, 'transaction');
}

/** Decodes a base64 wire transaction (legacy or v0 message). */
export function decodeSolanaTx(base64: string): DecodedSolanaTx {
  if (typeof base64 !== 'string' || base64.length === 0 || !BASE64.test(base64)) throw invalid('must be a base64 string');
  const bytes = new Uint8Array(Buffer.from(base64, 'base64'));
  let transaction: Transaction;
  let message: CompiledTransactionMessage & CompiledTransactionMessageWithLifetime;
  try {
    const [tx, end] = getTransactionDecoder().read(bytes, 0);
    if (end !== bytes.length) throw new Error('trailing bytes');
    transaction = tx;
    message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
  } catch {
    throw invalid('is not a valid Solana wire transaction');
  }
  if (message.version !== 'legacy' && message.version !== 0) throw invalid(`message version ${message.version} is not supported`);
  if (message.staticAccounts.length === 0 || message.header.numSignerAccounts === 0) throw invalid('has no fee payer');
  return { transaction, message, feePayer: message.staticAccounts[0], wireSize: bytes.length };
}

/** Durable-nonce transactions start with System AdvanceNonceAccount; their lifetime token is the nonce, not a blockhash. */
export function usesDurableNonce(message: SolanaMessage): boolean {
  const first = message.instructions[0];
  if (!first || message.staticAccounts[first.programAddressIndex] !== SYSTEM_PROGRAM) return false;
  const data = first.data;
  return !!data && data.length >= 4 && data[0] === 4 && data[1] === 0 && data[2] === 0 && data[3] === 0;
}
