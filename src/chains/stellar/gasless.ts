// Gasless Stellar: a user with no XLM to spare pays the fee in an asset the relayer accepts. The
// quote prices the user's transaction; the build appends the user's payment of that price to the
// relayer and bounds the transaction to two minutes; the user signs it and submits it with
// `fee_bump: true`, and the relayer pays the network fee through a fee bump. Names, shapes, the fee
// arithmetic and the rules follow the reference relayer's classic sponsored transactions.
import { Account, Asset, FeeBumpTransaction, Keypair, Operation, StrKey, Transaction, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import type { Relayer } from '../../generated/prisma/client.js';
import { invalid, unavailable } from '../../core/domain-error.js';
import { JsonRpcError, RpcUnavailableError } from '../jsonrpc.js';
import { convert, fixedRate, priceOf, uiAmount, wholeRate, withMargin, type Rate } from '../../core/prices.js';
import type { Runtime } from '../../core/runtime.js';
import type { Network } from '../../core/settings.js';
import { toOperation, type StellarSignerLike } from './build.js';
import { buildSoroban, isSorobanCall, quoteSoroban, type SorobanBuild, type SorobanQuote } from './gasless-soroban.js';
import { amountOfStroops, horizonSource, stroopsOf } from './horizon-price.js';
import { StellarRequestError, fieldError as fail, policyError } from './request-error.js';
import { parseStellarRequest } from './request.js';
import type { StellarPolicy } from './policy.js';
import type { StellarRpc } from './rpc-client.js';

/** The reference's validity of a sponsored build (STELLAR_SPONSORED_TRANSACTION_VALIDITY). */
export const SPONSORED_VALIDITY_SECONDS = 120;
const BASE_FEE = 100n;
const MAX_OPERATIONS = 100;
const XLM_DECIMALS = 7;

/** Horizon of the networks everyone knows, by passphrase (the reference's defaults). */
const KNOWN_HORIZONS: Record<string, string> = {
  'Public Global Stellar Network ; September 2015': 'https://horizon.stellar.org',
  'Test SDF Network ; September 2015': 'https://horizon-testnet.stellar.org',
};

/** The network's Horizon: its `horizon_url`, else the public one of a known passphrase. */
export function horizonOf(network: Pick<Network, 'fields' | 'passphrase'>): string | undefined {
  const own = network.fields.horizon_url;
  if (typeof own === 'string' && own) return own;
  return network.passphrase ? KNOWN_HORIZONS[network.passphrase] : undefined;
}

export interface GaslessCtx {
  rt: Runtime;
  relayer: Relayer;
  network: Network;
  passphrase: string;
  signer: StellarSignerLike;
  rpc: StellarRpc;
  policy: StellarPolicy;
}

export type StellarQuote = { fee_in_token: string; fee_in_token_ui: string; conversion_rate: string };
export type StellarBuild = {
  transaction: string;
  fee_in_token: string;
  fee_in_token_ui: string;
  fee_in_stroops: string;
  fee_token: string;
  valid_until: string;
};

type FeeToken = { id: string; native: true } | { id: string; native: false; code: string; issuer: string };

/** `native`, `CODE:ISSUER` or a `C…` contract (the reference's forms); contract tokens are refused here. */
export function parseFeeToken(token: unknown): FeeToken {
  if (typeof token !== 'string' || token === '') throw fail('fee_token', 'required: "native", CODE:ISSUER or a C… contract address');
  if (token === 'native') return { id: token, native: true };
  if (/^C[A-Z2-7]{55}$/.test(token)) {
    if (!StrKey.isValidContract(token)) throw fail('fee_token', `${token} is not a valid contract address`);
    return { id: token, native: false, code: '', issuer: '' };
  }
  const m = /^([A-Za-z0-9]{1,12}):(G[A-Z2-7]{55})$/.exec(token);
  if (!m || !StrKey.isValidEd25519PublicKey(m[2]))
    throw fail('fee_token', `must be "native", CODE:ISSUER (a 1-12 character code, a G… issuer) or a C… contract address, got "${token}"`);
  return { id: token, native: false, code: m[1], issuer: m[2] };
}

/** The policy's entry for the token; without allowed_tokens every token is taken (as the reference does). */
export function tokenEntry(policy: StellarPolicy, token: string) {
  const list = policy.allowed_tokens ?? [];
  if (list.length === 0) return undefined;
  const entry = list.find((t) => t.asset === token);
  if (!entry) throw policyError('allowed_tokens', `fee token ${token} is not allowed`);
  return entry;
}

const decimalsOf = (policy: StellarPolicy, token: string) => policy.allowed_tokens?.find((t) => t.asset === token)?.metadata?.decimals ?? XLM_DECIMALS;

type Request = { envelope: Transaction; token: FeeToken };

/** Credit assets in the reference's operation form (`credit4`, `credit12`) read as ours. */
function ourOperations(ops: unknown): unknown {
  if (!Array.isArray(ops)) return ops;
  const types: Record<string, string> = { credit4: 'credit_alphanum4', credit12: 'credit_alphanum12' };
  return ops.map((op) => {
    const asset = (op as { asset?: { type?: unknown } } | null)?.asset;
    if (!asset || typeof asset.type !== 'string' || !(asset.type in types)) return op;
    return { ...(op as object), asset: { ...asset, type: types[asset.type] } };
  });
}

function decodeUserTx(xdrText: unknown, passphrase: string): Transaction {
  if (typeof xdrText !== 'string' || xdrText === '') throw fail('transaction_xdr', 'must be a base64 transaction envelope');
  let tx: Transaction | FeeBumpTransaction;
  try {
    tx = TransactionBuilder.fromXDR(xdrText, passphrase);
  } catch {
    throw fail('transaction_xdr', 'is not a valid base64 transaction envelope');
  }
  if (tx instanceof FeeBumpTransaction) throw fail('transaction_xdr', 'fee-bump transactions are not supported for gasless transactions');
  if (tx.toEnvelope().switch().name === 'envelopeTypeTxV0') throw fail('transaction_xdr', 'uses the legacy v0 envelope; build it as a v1 transaction');
  return tx;
}

/** Reads `{transaction_xdr | operations + source_account, fee_token}` into the user's transaction. */
async function readRequest(c: GaslessCtx, body: unknown): Promise<Request> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalid('body: must be a JSON object with fee_token and transaction_xdr or operations');
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !['transaction_xdr', 'operations', 'source_account', 'fee_token'].includes(k));
  if (unknown.length) throw fail(unknown[0], 'unknown field (the request takes transaction_xdr or operations with source_account, and fee_token)');
  const token = parseFeeToken(b.fee_token);
  const hasOps = Array.isArray(b.operations) && b.operations.length > 0;
  const hasXdr = b.transaction_xdr !== undefined && b.transaction_xdr !== null;
  if (hasOps && hasXdr) throw fail('transaction_xdr', 'cannot be given with operations (one or the other)');
  if (!hasOps && !hasXdr) throw fail('transaction_xdr', 'required: give either transaction_xdr or operations');
  tokenEntry(c.policy, token.id);
  if (!token.native && !token.code) {
    throw fail(
      'fee_token',
      `${token.id} is a contract token: it pays only for a Soroban call (a transaction_xdr whose one operation calls a contract), through the FeeForwarder contract; for other transactions use "native" or a classic CODE:ISSUER asset`,
    );
  }
  if (hasXdr) return { envelope: decodeUserTx(b.transaction_xdr, c.passphrase), token };

  const source = b.source_account;
  if (typeof source !== 'string' || source === '') throw fail('source_account', 'required when providing operations');
  if (!StrKey.isValidEd25519PublicKey(source)) throw fail('source_account', 'must be a G... account address');
  let ops: ReturnType<typeof parseStellarRequest>['operations'];
  try {
    ops = parseStellarRequest({ network: c.relayer.network, operations: ourOperations(b.operations) }).operations;
  } catch (e) {
    if (e instanceof StellarRequestError) throw fail(e.field ?? 'operations', e.message.replace(/^[^:]*: /, ''));
    throw e;
  }
  const account = await c.rpc.getAccount(source);
  if (!account) throw fail('source_account', `account ${source} does not exist on the network`);
  const builder = new TransactionBuilder(new Account(source, account.sequence.toString()), { fee: BASE_FEE.toString(), networkPassphrase: c.passphrase });
  ops!.forEach((op, i) => builder.addOperation(toOperation(op, i, c.signer.address)));
  return { envelope: builder.setTimeout(0).build(), token };
}

const baseAccount = (address: string) =>
  StrKey.isValidMed25519PublicKey(address) ? StrKey.encodeEd25519PublicKey(StrKey.decodeMed25519PublicKey(address).subarray(0, 32)) : address;

/** Operation types a gasless transaction may not carry, and why (the reference's list). */
const REFUSED: Record<string, string> = {
  accountMerge: 'AccountMerge operations are not allowed',
  setOptions: 'SetOptions operations are not allowed',
  createAccount: 'deprecated operation type not allowed',
  allowTrust: 'deprecated operation type not allowed',
  invokeHostFunction: 'a Soroban call is sponsored alone, through the FeeForwarder contract (quote and build it with a contract fee token)',
  extendFootprintTtl: 'Soroban operations are not supported for gasless transactions',
  restoreFootprint: 'Soroban operations are not supported for gasless transactions',
};

/**
 * The reference's checks of a gasless transaction, pure: not the relayer's own, operations within
 * the limit and of allowed types, not expired. `extra` counts operations the build will add.
 */
export function checkGasless(tx: Transaction, relayer: string, nowSeconds: number, extra = 0): void {
  const field = 'transaction';
  if (baseAccount(tx.source) === relayer) throw fail(field, "its source account cannot be the relayer (it would spend the relayer's funds)");
  if (tx.operations.length === 0) throw fail(field, 'must contain at least one operation');
  if (tx.operations.length + extra > MAX_OPERATIONS)
    throw fail(field, `too many operations: ${tx.operations.length + extra} with the fee payment (at most ${MAX_OPERATIONS})`);
  tx.operations.forEach((op, i) => {
    const why = REFUSED[op.type];
    if (why) throw fail(field, `operation ${i}: ${why}`);
    if (op.source && baseAccount(op.source) === relayer) throw fail(field, `operation ${i}: its source cannot be the relayer`);
  });
  const maxTime = Number(tx.timeBounds?.maxTime ?? 0);
  if (maxTime !== 0 && nowSeconds > maxTime)
    throw fail(field, `has expired: its time bounds ended at ${new Date(maxTime * 1000).toISOString()}; build it again`);
  const minTime = Number(tx.timeBounds?.minTime ?? 0);
  if (minTime > 0 && nowSeconds < minTime) throw fail(field, `is not valid yet: its time bounds start at ${new Date(minTime * 1000).toISOString()}`);
}

/** The source account's next sequence must be ahead of the chain's (the reference's sequence check). */
async function checkSequence(c: GaslessCtx, tx: Transaction): Promise<void> {
  const account = await c.rpc.getAccount(baseAccount(tx.source));
  if (!account) throw fail('transaction', `its source account ${tx.source} does not exist on the network`);
  if (BigInt(tx.sequence) <= account.sequence) {
    throw fail('transaction', `its sequence number ${tx.sequence} is used: the account's current sequence is ${account.sequence}`);
  }
}

/** The token's rate: 1 for XLM, the policy's fixed conversion_rate, else Horizon's paths. */
async function rateOf(c: GaslessCtx, token: FeeToken, decimals: number, probe: bigint): Promise<Rate> {
  if (token.native) return { num: 1n, den: 1n };
  const entry = c.policy.allowed_tokens?.find((t) => t.asset === token.id);
  if (entry?.conversion_rate !== undefined) return fixedRate(entry.conversion_rate, decimals, XLM_DECIMALS);
  const horizonUrl = horizonOf(c.network);
  if (!horizonUrl) {
    throw fail('fee_token', `network "${c.network.name}" has no horizon_url to price ${token.id} with; set one, or the token's conversion_rate in the policy`);
  }
  const { timeoutMs, cacheMs } = c.rt.env.prices;
  return priceOf(c.rt, horizonSource({ horizonUrl, timeoutMs }), token.id, probe, cacheMs);
}

/** What the user holds of the token (stroops of it); throws when it has no trustline. The issuer's supply is unbounded. */
async function holding(c: GaslessCtx, user: string, token: FeeToken): Promise<bigint | null> {
  if (token.native) return (await c.rpc.getAccount(user))?.balance ?? 0n;
  if (user === token.issuer) return null;
  const line = await c.rpc.getTrustline(user, token);
  if (line === null) throw fail('transaction', `the user ${user} has no trustline for ${token.id}`);
  return line;
}

type Priced = { feeStroops: bigint; feeInToken: bigint; rate: Rate; decimals: number };

/**
 * The fee of `xlmFee` stroops in the token, raised by the margin and checked against max_fee,
 * the token's max_allowed_fee and what the user holds.
 */
async function price(c: GaslessCtx, user: string, token: FeeToken, xlmFee: bigint): Promise<Priced> {
  const decimals = decimalsOf(c.policy, token.id);
  const feeStroops = withMargin(xlmFee, c.policy.fee_margin_percentage);
  const rate = await rateOf(c, token, decimals, feeStroops);
  const feeInToken = convert(rate, feeStroops);
  if (c.policy.max_fee !== undefined && feeStroops > BigInt(c.policy.max_fee)) {
    throw policyError('max_fee', `fee ${feeStroops} stroops exceeds the relayer's max_fee of ${c.policy.max_fee}`);
  }
  const max = c.policy.allowed_tokens?.find((t) => t.asset === token.id)?.max_allowed_fee;
  if (max !== undefined && feeInToken > BigInt(max)) {
    throw policyError('max_allowed_fee', `fee ${feeInToken} of ${token.id} exceeds the token's max_allowed_fee of ${max}`);
  }
  const held = await holding(c, user, token);
  if (held !== null && held < feeInToken) throw fail('transaction', `the user ${user} holds ${held} of ${token.id}, less than the fee of ${feeInToken}`);
  return { feeStroops, feeInToken, rate, decimals };
}

type Plan = Request & Priced;

/** Both calls: the user's transaction checked and its fee priced (its operations, the fee payment and the fee bump). */
async function plan(c: GaslessCtx, body: unknown): Promise<Plan> {
  const req = await readRequest(c, body);
  const tx = req.envelope;
  checkGasless(tx, c.signer.address, Math.floor(Date.now() / 1000), 1);
  await checkSequence(c, tx);
  // Ours: a payment the relayer cannot receive would fail with the relayer paying its fee.
  const relayer = c.signer.address;
  if (!req.token.native && relayer !== req.token.issuer && (await c.rpc.getTrustline(relayer, req.token)) === null) {
    throw fail('fee_token', `the relayer ${relayer} has no trustline for ${req.token.id}, so it cannot be paid in it`);
  }
  const xlmFee = BASE_FEE * BigInt(tx.operations.length) + 2n * BASE_FEE;
  return { ...req, ...(await price(c, baseAccount(tx.source), req.token, xlmFee)) };
}

function requestError(e: unknown): never {
  if (e instanceof StellarRequestError) throw invalid(e.message);
  if (e instanceof RpcUnavailableError) throw unavailable(`the network's Stellar RPC does not answer: ${e.message}`);
  if (e instanceof JsonRpcError) throw invalid(`the network's RPC refused the request: ${e.message}`);
  throw e;
}

/** A request for a Soroban call (the reference's test: its transaction_xdr has an InvokeHostFunction operation), else null. */
function sorobanRequest(c: GaslessCtx, body: unknown): { tx: Transaction; feeToken: string } | null {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return null;
  const b = body as Record<string, unknown>;
  if (typeof b.transaction_xdr !== 'string' || b.operations !== undefined) return null;
  let tx: Transaction;
  try {
    tx = decodeUserTx(b.transaction_xdr, c.passphrase);
  } catch {
    return null; // the classic path says what is wrong with it
  }
  if (!isSorobanCall(tx)) return null;
  const unknown = Object.keys(b).filter((k) => !['transaction_xdr', 'source_account', 'fee_token'].includes(k));
  if (unknown.length) throw fail(unknown[0], 'unknown field (the request takes transaction_xdr or operations with source_account, and fee_token)');
  if (typeof b.fee_token !== 'string' || b.fee_token === '') throw fail('fee_token', 'required: a C… token contract for a Soroban call');
  return { tx, feeToken: b.fee_token };
}

export async function quoteSponsored(c: GaslessCtx, body: unknown): Promise<StellarQuote | SorobanQuote> {
  const soroban = (() => {
    try {
      return sorobanRequest(c, body);
    } catch (e) {
      return requestError(e);
    }
  })();
  if (soroban) return quoteSoroban(c, soroban.tx, soroban.feeToken).catch(requestError);
  const p = await plan(c, body).catch(requestError);
  return {
    fee_in_token: p.feeInToken.toString(),
    fee_in_token_ui: uiAmount(p.feeInToken, p.decimals),
    conversion_rate: wholeRate(p.rate, p.decimals, XLM_DECIMALS),
  };
}

const assetOf = (token: FeeToken) => (token.native ? Asset.native() : new Asset(token.code, token.issuer));

/**
 * The user's transaction with the fee payment to the relayer appended, the fee of its operations,
 * time bounds from now to two minutes on, and no signatures: the user signs what it pays.
 */
export function withFeePayment(tx: Transaction, payment: { relayer: string; token: FeeToken; amount: bigint }, maxTime: number, passphrase: string) {
  const env = tx.toEnvelope();
  const body = env.v1().tx();
  const pay = Operation.payment({ destination: payment.relayer, asset: assetOf(payment.token), amount: amountOfStroops(payment.amount) });
  body.operations([...body.operations(), pay]);
  body.fee(Number(BASE_FEE) * body.operations().length);
  body.cond(xdr.Preconditions.precondTime(new xdr.TimeBounds({ minTime: xdr.Uint64.fromString('0'), maxTime: xdr.Uint64.fromString(String(maxTime)) })));
  env.v1().signatures([]);
  return new Transaction(env, passphrase);
}

export async function buildSponsored(c: GaslessCtx, body: unknown): Promise<StellarBuild | SorobanBuild> {
  const soroban = (() => {
    try {
      return sorobanRequest(c, body);
    } catch (e) {
      return requestError(e);
    }
  })();
  if (soroban) return buildSoroban(c, soroban.tx, soroban.feeToken).catch(requestError);
  try {
    if (body && typeof body === 'object' && !Array.isArray(body)) tokenEntry(c.policy, parseFeeToken((body as { fee_token?: unknown }).fee_token).id);
    if (c.policy.fee_payment_strategy !== 'user') {
      throw policyError('fee_payment_strategy', 'sponsored builds need fee_payment_strategy "user" (users pay the relayer its fees in a token)');
    }
  } catch (e) {
    requestError(e);
  }
  const p = await plan(c, body).catch(requestError);
  const maxTime = Math.floor(Date.now() / 1000) + SPONSORED_VALIDITY_SECONDS;
  const built = withFeePayment(p.envelope, { relayer: c.signer.address, token: p.token, amount: p.feeInToken }, maxTime, c.passphrase);
  return {
    transaction: built.toXDR(),
    fee_in_token: p.feeInToken.toString(),
    fee_in_token_ui: uiAmount(p.feeInToken, p.decimals),
    fee_in_stroops: p.feeStroops.toString(),
    fee_token: p.token.id,
    valid_until: new Date(maxTime * 1000).toISOString(),
  };
}

function assetId(asset: Asset): string {
  return asset.isNative() ? 'native' : `${asset.getCode()}:${asset.getIssuer()}`;
}

function signedBySource(tx: Transaction): boolean {
  const source = baseAccount(tx.source);
  const kp = Keypair.fromPublicKey(source);
  const hash = tx.hash();
  return tx.signatures.some((s) => s.hint().equals(kp.signatureHint()) && kp.verify(hash, s.signature()));
}

/**
 * A signed transaction a relayer whose users pay its fees is asked to fee-bump: the reference's
 * gasless checks, a source signature that still verifies (not altered after signing), and exactly
 * one payment to the relayer, in an allowed token, of at least what the fee costs now.
 */
export async function checkFeePaid(c: GaslessCtx, tx: Transaction, opts: { field?: string; signing?: boolean } = {}): Promise<void> {
  const relayer = c.signer.address;
  const now = Math.floor(Date.now() / 1000);
  checkGasless(tx, relayer, now);
  const field = opts.field ?? 'transaction_xdr';
  if (opts.signing) {
    // Signing without sending (the reference's signTransaction): bounded to the sponsored validity.
    const maxTime = Number(tx.timeBounds?.maxTime ?? 0);
    if (maxTime === 0) throw fail(field, `must have time bounds ending within ${SPONSORED_VALIDITY_SECONDS} seconds (it has none)`);
    if (maxTime - now > SPONSORED_VALIDITY_SECONDS)
      throw fail(field, `its time bounds end ${maxTime - now} seconds from now, beyond the ${SPONSORED_VALIDITY_SECONDS} allowed`);
  } else if (!signedBySource(tx)) throw fail(field, `its source account ${tx.source} has not signed it as it is (altered after signing?)`);
  await checkSequence(c, tx);
  const payments = tx.operations.flatMap((op) => (op.type === 'payment' && baseAccount(op.destination) === relayer ? [op] : []));
  if (payments.length === 0) throw policyError('fee_payment_strategy', "the relayer's users pay its fees, and the transaction pays the relayer no fee");
  if (payments.length > 1)
    throw policyError('fee_payment_strategy', `the transaction must pay the relayer its fee in exactly one payment, found ${payments.length}`);
  const [payment] = payments;
  const token = parseFeeToken(assetId(payment.asset));
  tokenEntry(c.policy, token.id);
  const paid = stroopsOf(payment.amount);
  const max = c.policy.allowed_tokens?.find((t) => t.asset === token.id)?.max_allowed_fee;
  if (max !== undefined && paid > BigInt(max)) throw policyError('max_allowed_fee', `fee ${paid} of ${token.id} exceeds the token's max_allowed_fee of ${max}`);
  // Its operations (the fee payment among them) and the fee bump.
  const xlmFee = BASE_FEE * BigInt(tx.operations.length) + BASE_FEE;
  const { feeInToken } = await price(c, baseAccount(tx.source), token, xlmFee);
  if (paid < feeInToken)
    throw policyError('fee_payment_strategy', `the transaction pays the relayer ${paid} of ${token.id}, less than the fee of ${feeInToken}`);
}
