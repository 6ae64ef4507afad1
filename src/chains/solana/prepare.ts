import {
  getBase58Decoder,
  getBase64Decoder,
  getCompiledTransactionMessageEncoder,
  getTransactionEncoder,
  type Address,
  type Blockhash,
  type SignatureBytes,
  type Transaction,
  type TransactionMessageBytes,
} from '@solana/kit';
import { SolanaRequestError } from './request-error.js';
import { feeInstructions } from './gasless.js';
import { checkSolanaPolicy, type SolanaPolicy } from './policy.js';
import type { SolanaRpc } from './rpc-client.js';
import { decodeSolanaTx, MAX_TRANSACTION_SIZE, SYSTEM_PROGRAM, usesDurableNonce, type DecodedSolanaTx } from './transaction.js';

/** The relayer's Solana signer (shape provided by src/signers). */
export interface SolanaSignerLike {
  kind: 'solana';
  address: string;
  /** Ed25519 signature (64 bytes) over `message`. */
  sign(message: Uint8Array): Promise<Uint8Array>;
}

/** Shape B of the send-transaction request. */
export type SolanaTransactionRequest = { transaction: string };

export type PreparedSolanaTx = {
  wireBase64: string;
  /** Base58 fee-payer signature: the transaction id. */
  signature: string;
  blockhash: string;
  /** Past this block height the transaction can no longer land; null for durable-nonce transactions. */
  lastValidBlockHeight: bigint | null;
  /** Fee in lamports, as the node quoted it (unknown when the blockhash expired meanwhile). */
  fee?: bigint;
};

export type SolanaPrepareContext = {
  signer: SolanaSignerLike;
  rpc: SolanaRpc;
  policy?: SolanaPolicy;
  /** Re-sending after expiry: always take a fresh blockhash. */
  resubmit?: boolean;
};

// Real blockhashes are valid for 150 blocks after the one they name.
const BLOCKHASH_VALIDITY = 150n;

/** The blockhash is missing or expired and cannot be replaced: other signers signed the message. */
export class SolanaBlockhashExpiredError extends SolanaRequestError {
  override name = 'SolanaBlockhashExpiredError';
}

function fail(reason: string): SolanaRequestError {
  return new SolanaRequestError(`transaction: ${reason}`, 'transaction');
}

/**
 * Validates a user-built transaction whose fee payer is the relayer, refreshes
 * its blockhash when needed, checks the policy and signs the fee payer's slot.
 * Signatures of other signers are kept as given and must already be present.
 */
export async function prepareSolanaTx(req: SolanaTransactionRequest, ctx: SolanaPrepareContext): Promise<PreparedSolanaTx> {
  if (!req || typeof req.transaction !== 'string') throw fail('is required (base64 wire transaction)');
  const decoded = decodeSolanaTx(req.transaction);
  const relayer = ctx.signer.address;
  if (decoded.feePayer !== relayer) throw fail(`fee payer must be the relayer ${relayer}`);

  const { message } = decoded;
  const signerAccounts = message.staticAccounts.slice(0, message.header.numSignerAccounts);
  const others = signerAccounts.slice(1);
  for (const a of others) {
    if (!decoded.transaction.signatures[a]) throw fail(`missing signature of required signer ${a}`);
  }

  let blockhash = message.lifetimeToken as string;
  let lastValidBlockHeight: bigint | null = null;
  let messageBytes: TransactionMessageBytes = decoded.transaction.messageBytes;

  if (!usesDurableNonce(message)) {
    const latest = await ctx.rpc.getLatestBlockhash();
    let fresh = ctx.resubmit === true || blockhash === SYSTEM_PROGRAM; // all-zero bytes: "no blockhash yet"
    if (!fresh && blockhash !== latest.blockhash) fresh = !(await ctx.rpc.isBlockhashValid(blockhash));
    if (fresh) {
      // Changing the message would invalidate the other signers' signatures.
      if (others.length > 0) {
        throw new SolanaBlockhashExpiredError(
          'transaction: blockhash is missing or expired and other signers have signed; re-sign with a recent blockhash',
          'transaction',
        );
      }
      blockhash = latest.blockhash;
      lastValidBlockHeight = latest.lastValidBlockHeight;
      messageBytes = getCompiledTransactionMessageEncoder().encode({
        ...message,
        lifetimeToken: latest.blockhash as Blockhash,
      }) as TransactionMessageBytes;
    } else if (blockhash === latest.blockhash) {
      lastValidBlockHeight = latest.lastValidBlockHeight;
    } else {
      // Still valid but not the latest: its exact expiry is unknown; this is an upper bound.
      lastValidBlockHeight = (await ctx.rpc.getBlockHeight()) + BLOCKHASH_VALIDITY;
    }
  }

  const unsigned: Transaction = {
    messageBytes,
    signatures: { ...decoded.transaction.signatures, [relayer]: null },
  };
  const wireSize = getTransactionEncoder().encode(unsigned).length;
  if (wireSize > MAX_TRANSACTION_SIZE) throw fail(`is ${wireSize} bytes, above the ${MAX_TRANSACTION_SIZE}-byte limit`);

  let balance: bigint | undefined;
  const policy = ctx.policy;
  const needsFee = policy?.max_allowed_fee_lamports !== undefined || policy?.min_balance !== undefined;
  // Quoted for the record even when no policy needs it; then a blockhash that just expired only leaves it unknown.
  const quoted = await ctx.rpc.getFeeForMessage(getBase64Decoder().decode(messageBytes));
  if (quoted === null && needsFee) throw new Error('getFeeForMessage: blockhash not found (it expired while preparing); retry');
  const fee = quoted ?? undefined;
  if (policy?.min_balance !== undefined) balance = await ctx.rpc.getBalance(relayer);
  const checked: DecodedSolanaTx = { ...decoded, message: { ...message, lifetimeToken: blockhash as Blockhash }, wireSize };
  checkSolanaPolicy(checked, policy, { fee, balance, exempt: await feeInstructions(checked, relayer, policy ?? {}) });

  const sig = await ctx.signer.sign(new Uint8Array(messageBytes));
  if (sig.length !== 64) throw new Error(`solana signer returned a ${sig.length}-byte signature`);
  const signed: Transaction = {
    messageBytes,
    signatures: { ...decoded.transaction.signatures, [relayer as Address]: sig as SignatureBytes },
  };
  return {
    wireBase64: getBase64Decoder().decode(getTransactionEncoder().encode(signed)),
    signature: getBase58Decoder().decode(sig),
    blockhash,
    lastValidBlockHeight,
    fee,
  };
}
