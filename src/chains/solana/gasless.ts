// Gasless Solana: a user with no SOL pays the fee in an SPL token the relayer accepts. The quote
// prices the user's transaction with the relayer as fee payer; the build adds the fee transfer
// (user's token account -> the relayer's, created first when it has none), makes the relayer the
// fee payer, and signs as the relayer; the user signs and submits it. Names, shapes and the order
// of the instructions follow the reference relayer's feeEstimate / prepareTransaction.
import { createPublicKey, verify } from 'node:crypto';
import {
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  decompileTransactionMessage,
  getBase64Decoder,
  getAddressEncoder,
  getTransactionEncoder,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Blockhash,
  type Instruction,
  type SignatureBytes,
  type Transaction,
} from '@solana/kit';
import { z } from 'zod';
import type { Relayer } from '../../generated/prisma/client.js';
import { invalid, unavailable } from '../../core/domain-error.js';
import { convert, fixedRate, priceOf, uiAmount, wholeRate, withMargin, type Rate } from '../../core/prices.js';
import type { Runtime } from '../../core/runtime.js';
import { jupiterSource, WRAPPED_SOL_MINT } from './jupiter.js';
import { checkSolanaPolicy, type SolanaPolicy } from './policy.js';
import { SolanaRequestError } from './request-error.js';
import { JsonRpcError, RpcUnavailableError, type SolanaRpc } from './rpc-client.js';
import {
  ataOf,
  ATA_PROGRAM,
  createAtaIdempotent,
  isAtaCreate,
  mintDecimals,
  TOKEN_ACCOUNT_SIZE,
  TOKEN_PROGRAMS,
  TRANSFER_CHECKED,
  tokenAccount,
  transferAmount,
  transferChecked,
} from './token.js';
import { decodeSolanaTx, MAX_TRANSACTION_SIZE, SYSTEM_PROGRAM, type DecodedSolanaTx } from './transaction.js';

const SOL_DECIMALS = 9;
const DEFAULT_SLIPPAGE = 1;

export interface GaslessCtx {
  rt: Runtime;
  relayer: Relayer;
  signer: { address: string; sign(message: Uint8Array): Promise<Uint8Array> };
  rpc: SolanaRpc;
  policy: SolanaPolicy;
}

/** The request of both sponsored calls (and of feeEstimate / prepareTransaction). */
const requestSchema = z.object({
  transaction: z.string({ error: (i) => (i.input === undefined ? 'required' : 'must be a base64 string') }).min(1, 'required'),
  fee_token: z.string({ error: (i) => (i.input === undefined ? 'required' : 'must be a mint address') }).min(1, 'required'),
});

export type SponsoredQuote = { estimated_fee: string; conversion_rate: string };
export type SponsoredBuild = { transaction: string; fee_in_spl: string; fee_in_lamports: string; fee_token: string; valid_until_blockheight: number };

const policyError = (rule: string, reason: string) => new SolanaRequestError(`policy ${rule}: ${reason}`, `policy.${rule}`);
const txError = (reason: string) => new SolanaRequestError(`transaction: ${reason}`, 'transaction');

function parse(body: unknown): { transaction: string; feeToken: string } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalid('body: must be a JSON object with transaction and fee_token');
  const r = requestSchema.safeParse(body);
  if (!r.success) throw invalid(r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
  return { transaction: r.data.transaction, feeToken: r.data.fee_token };
}

/** The policy's entry for the fee token; with no allowed_tokens every token is taken (as the reference does). */
export function feeTokenEntry(policy: SolanaPolicy, mint: string) {
  if (!policy.allowed_tokens) return undefined;
  const entry = policy.allowed_tokens.find((t) => t.mint === mint);
  if (!entry) throw policyError('allowed_tokens', `fee token ${mint} is not allowed`);
  return entry;
}

/** What a token costs, per runtime cache: the policy's fixed conversion_rate, else Jupiter's quote. */
async function rateOf(c: GaslessCtx, mint: string, decimals: number, probe: bigint): Promise<Rate> {
  if (mint === WRAPPED_SOL_MINT || mint === SYSTEM_PROGRAM) return { num: 1n, den: 1n };
  const entry = c.policy.allowed_tokens?.find((t) => t.mint === mint);
  if (entry?.conversion_rate !== undefined) return fixedRate(entry.conversion_rate, decimals, SOL_DECIMALS);
  const { jupiterUrl, timeoutMs, cacheMs } = c.rt.env.prices;
  const slippage = entry?.swap_config?.slippage_percentage ?? DEFAULT_SLIPPAGE;
  return priceOf(c.rt, jupiterSource({ baseUrl: jupiterUrl, timeoutMs, slippage: () => slippage }), mint, probe, cacheMs);
}

type Token = { mint: string; program: string; decimals: number };

async function tokenOf(c: GaslessCtx, mint: string): Promise<Token> {
  let addr: Address;
  try {
    addr = address(mint);
  } catch {
    throw invalid('fee_token: must be a base58 mint address');
  }
  const entry = feeTokenEntry(c.policy, mint);
  const info = await c.rpc.getAccountInfo(addr);
  if (!info || !TOKEN_PROGRAMS.has(info.owner)) throw invalid(`fee_token: ${mint} is not an SPL token mint on this network`);
  return { mint, program: info.owner, decimals: entry?.decimals ?? mintDecimals(info.data) };
}

type Plan = {
  /** The transaction as built (unsigned), its fee and its price. */
  tx: Transaction;
  feeLamports: bigint;
  feeInToken: bigint;
  rate: Rate;
  token: Token;
  lastValidBlockHeight: bigint;
};

/** Prices and composes the sponsored form of the user's transaction (both calls do this). */
async function plan(c: GaslessCtx, body: unknown): Promise<Plan> {
  const req = parse(body);
  const decoded = decodeSolanaTx(req.transaction);
  const relayer = c.signer.address;
  const user = decoded.feePayer;
  if (user === relayer) throw txError('its fee payer must be the user paying the fee in tokens (the relayer becomes the fee payer)');
  if (decoded.message.version === 0 && (decoded.message.addressTableLookups?.length ?? 0) > 0) {
    throw txError('transactions using address lookup tables cannot be sponsored');
  }
  const token = await tokenOf(c, req.feeToken);
  const userPays = (c.policy.fee_payment_strategy ?? 'user') === 'user';
  const [userAta, relayerAta] = await Promise.all([ataOf(user, token.mint, token.program), ataOf(relayer, token.mint, token.program)]);
  const [userAccount, relayerAccount, latest] = await Promise.all([
    userPays ? c.rpc.getAccountInfo(userAta) : null,
    userPays ? c.rpc.getAccountInfo(relayerAta) : null,
    c.rpc.getLatestBlockhash(),
  ]);
  if (userPays && !userAccount) throw txError(`the user ${user} has no token account for ${token.mint}`);
  const needAta = userPays && !relayerAccount;
  let original: readonly Instruction[];
  try {
    original = decompileTransactionMessage(decoded.message).instructions;
  } catch (e) {
    throw txError(`its message cannot be read: ${(e as Error).message}`);
  }

  const compose = (amount: bigint): Transaction => {
    const fee: Instruction[] = userPays
      ? [
          ...(needAta ? [createAtaIdempotent({ payer: relayer, ata: relayerAta, owner: relayer, mint: token.mint, tokenProgram: token.program })] : []),
          transferChecked({
            tokenProgram: token.program,
            source: userAta,
            mint: token.mint,
            destination: relayerAta,
            owner: user,
            amount,
            decimals: token.decimals,
          }),
        ]
      : [];
    const message = appendTransactionMessageInstructions(
      [...fee, ...original],
      setTransactionMessageLifetimeUsingBlockhash(
        { blockhash: latest.blockhash as Blockhash, lastValidBlockHeight: latest.lastValidBlockHeight },
        setTransactionMessageFeePayer(address(relayer), createTransactionMessage({ version: decoded.message.version })),
      ),
    );
    try {
      return compileTransaction(message);
    } catch (e) {
      throw txError(`it cannot be rebuilt with the relayer as fee payer: ${(e as Error).message}`);
    }
  };

  const draft = compose(1n);
  const base = await c.rpc.getFeeForMessage(getBase64Decoder().decode(draft.messageBytes));
  if (base === null) throw txError('the latest blockhash expired while it was priced; try again');
  const rent = needAta ? await c.rpc.getMinimumBalanceForRentExemption(TOKEN_ACCOUNT_SIZE) : 0n;
  const feeLamports = withMargin(base + rent, c.policy.fee_margin_percentage);
  const rate = await rateOf(c, token.mint, token.decimals, feeLamports);
  const feeInToken = convert(rate, feeLamports);

  const entry = c.policy.allowed_tokens?.find((t) => t.mint === token.mint);
  if (entry?.max_allowed_fee !== undefined && feeInToken > BigInt(entry.max_allowed_fee)) {
    throw policyError('max_allowed_fee', `fee ${feeInToken} of ${token.mint} exceeds the token's max_allowed_fee of ${entry.max_allowed_fee}`);
  }
  if (userPays && userAccount && tokenAccount(userAccount.data).amount < feeInToken) {
    throw txError(`the user's token account holds ${tokenAccount(userAccount.data).amount} of ${token.mint}, less than the fee of ${feeInToken}`);
  }
  const tx = compose(feeInToken);
  const wire = wireOf(tx);
  if (wire.length > MAX_TRANSACTION_SIZE) throw txError(`with the fee transfer it is ${wire.length} bytes, above the ${MAX_TRANSACTION_SIZE}-byte limit`);
  const built = decodeSolanaTx(getBase64Decoder().decode(wire));
  const balance = c.policy.min_balance !== undefined ? await c.rpc.getBalance(relayer) : undefined;
  checkSolanaPolicy(built, c.policy, { fee: feeLamports, balance, exempt: await feeInstructions(built, relayer, c.policy) });
  return { tx, feeLamports, feeInToken, rate, token, lastValidBlockHeight: latest.lastValidBlockHeight };
}

const wireOf = (tx: Transaction) => getTransactionEncoder().encode(tx) as Uint8Array;

/**
 * A request's failure as the error users see: its own fault a 400 naming it; the network's RPC not
 * answering an `unavailable` (400 on REST, as every unreachable dependency) and a node's refusal a
 * 400, both keeping the RPC error as `cause` (the JSON-RPC methods answer those as the reference's
 * provider error). Never a 500.
 */
function requestError(e: unknown): never {
  if (e instanceof SolanaRequestError) throw invalid(e.message);
  if (e instanceof RpcUnavailableError) throw Object.assign(unavailable(`the network's Solana RPC does not answer: ${e.message}`), { cause: e });
  if (e instanceof JsonRpcError) throw Object.assign(invalid(`the network's Solana RPC refused the request: ${e.message}`), { cause: e });
  throw e;
}

/** The sponsored quote: the fee in the token (whole units) and the rate, whole tokens per SOL. */
export async function quoteSponsored(c: GaslessCtx, body: unknown): Promise<SponsoredQuote> {
  const p = await plan(c, body).catch(requestError);
  return { estimated_fee: uiAmount(p.feeInToken, p.token.decimals), conversion_rate: wholeRate(p.rate, p.token.decimals, SOL_DECIMALS) };
}

/** The sponsored build: the transaction signed by the relayer (the fee payer), for the user to sign and submit. */
export async function buildSponsored(c: GaslessCtx, body: unknown): Promise<SponsoredBuild> {
  const p = await plan(c, body).catch(requestError);
  const sig = await c.signer.sign(new Uint8Array(p.tx.messageBytes));
  const signed: Transaction = { ...p.tx, signatures: { ...p.tx.signatures, [c.signer.address]: sig as SignatureBytes } };
  return {
    transaction: getBase64Decoder().decode(wireOf(signed)),
    fee_in_spl: p.feeInToken.toString(),
    fee_in_lamports: p.feeLamports.toString(),
    fee_token: p.token.mint,
    valid_until_blockheight: Number(p.lastValidBlockHeight),
  };
}

/**
 * Indexes of the instructions that pay the relayer its fee: a token transfer into the relayer's
 * associated token account of an allowed mint, and the creation of that account paid by the relayer.
 * The policy's program and account rules apply to the user's instructions, not to these.
 */
export async function feeInstructions(tx: DecodedSolanaTx, relayer: string, policy: SolanaPolicy): Promise<Set<number>> {
  const { message } = tx;
  const keys = message.staticAccounts;
  const found = new Set<number>();
  const allowed = (mint: string) => !policy.allowed_tokens || policy.allowed_tokens.some((t) => t.mint === mint);
  for (const [i, ix] of message.instructions.entries()) {
    const program = keys[ix.programAddressIndex];
    const acc = (n: number) => keys[ix.accountIndices?.[n] ?? -1];
    if (TOKEN_PROGRAMS.has(program) && ix.data?.[0] === TRANSFER_CHECKED && (ix.accountIndices?.length ?? 0) >= 4) {
      const mint = acc(1);
      if (mint && allowed(mint) && acc(3) !== relayer && acc(2) === (await ataOf(relayer, mint, program))) found.add(i);
    } else if (program === ATA_PROGRAM && isAtaCreate(ix.data) && (ix.accountIndices?.length ?? 0) >= 6) {
      const [payer, ata, owner, mint, , tokenProgram] = [0, 1, 2, 3, 4, 5].map(acc);
      if (
        payer === relayer &&
        owner === relayer &&
        mint &&
        allowed(mint) &&
        TOKEN_PROGRAMS.has(tokenProgram) &&
        ata === (await ataOf(relayer, mint, tokenProgram))
      )
        found.add(i);
    }
  }
  return found;
}

function relayerSigned(tx: DecodedSolanaTx, relayer: string): boolean {
  const sig = tx.transaction.signatures[relayer as Address];
  if (!sig) return false;
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(getAddressEncoder().encode(address(relayer)))]);
  return verify(null, new Uint8Array(tx.transaction.messageBytes), createPublicKey({ key: spki, format: 'der', type: 'spki' }), sig);
}

/**
 * A submitted transaction of a relayer whose users pay fees: it must pay the relayer its fee. One
 * the relayer built and signed (its signature still verifies: not altered) was priced then; any
 * other must pay at least what its fee costs now in the token it transfers.
 */
export async function checkFeePaid(c: GaslessCtx, tx: DecodedSolanaTx): Promise<void> {
  const relayer = c.signer.address;
  if (relayerSigned(tx, relayer)) return;
  const keys = tx.message.staticAccounts;
  const fee = [...(await feeInstructions(tx, relayer, c.policy))].map((i) => tx.message.instructions[i]);
  const transfer = fee.find((ix) => TOKEN_PROGRAMS.has(keys[ix.programAddressIndex]));
  if (!transfer) {
    throw policyError('fee_payment_strategy', "the relayer's users pay its fees, and the transaction pays the relayer no fee in an allowed token");
  }
  const mint = keys[transfer.accountIndices![1]];
  const paid = transferAmount(transfer.data) ?? 0n;
  const token = await tokenOf(c, mint);
  const base = await c.rpc.getFeeForMessage(getBase64Decoder().decode(tx.transaction.messageBytes));
  if (base === null) throw new SolanaRequestError('transaction: its blockhash has expired; build it again', 'transaction');
  const creates = fee.some((ix) => keys[ix.programAddressIndex] === ATA_PROGRAM);
  const rent = creates ? await c.rpc.getMinimumBalanceForRentExemption(TOKEN_ACCOUNT_SIZE) : 0n;
  const feeLamports = withMargin(base + rent, c.policy.fee_margin_percentage);
  const owed = convert(await rateOf(c, mint, token.decimals, feeLamports), feeLamports);
  if (paid < owed) throw policyError('fee_payment_strategy', `the transaction pays the relayer ${paid} of ${mint}, less than the fee of ${owed}`);
}
