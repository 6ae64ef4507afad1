// Gasless Soroban calls (the reference's "Soroban gas abstraction"): a user's contract call is
// wrapped in a call of the FeeForwarder contract, which takes the fee in a Soroban token (`C…`)
// from the user for the relayer and then makes the user's call. The quote and build simulate the
// wrapped call with the relayer as source and fee payer; the build returns the user's
// authorization entry to sign (`user_auth_entry`); the user submits the built transaction with
// that entry signed (`signed_auth_entry`) and the relayer checks it, puts it in, simulates again,
// and sends it through the pipeline like its own unsigned transaction. Fields, defaults and
// arithmetic follow the reference (src/domain/relayer/stellar/gas_abstraction.rs,
// src/domain/transaction/stellar/prepare/soroban_gas_abstraction.rs).
import { randomBytes } from 'node:crypto';
import { Account, Address, FeeBumpTransaction, Operation, StrKey, Transaction, TransactionBuilder, xdr, scValToNative } from '@stellar/stellar-sdk';
import type { Relayer } from '../../generated/prisma/client.js';
import { convert, fixedRate, uiAmount, wholeRate, withMargin, type Rate } from '../../core/prices.js';
import type { Runtime } from '../../core/runtime.js';
import type { Network } from '../../core/settings.js';
import type { StellarSignerLike } from './build.js';
import {
  authPayload,
  entryAccount,
  expirationLedger,
  forwardHostFunction,
  LEDGER_SECONDS,
  maxFeeWithSlippage,
  readForward,
  relayerInvocation,
  sameXdr,
  signatureVerifies,
  unsignedEntry,
  userInvocation,
  withSignature,
  type ForwardCall,
} from './fee-forwarder.js';
import type { StellarPolicy } from './policy.js';
import { fieldError as fail, policyError } from './request-error.js';
import type { StellarTransactionRequest } from './request.js';
import type { RawSimulateResponse, StellarRpc } from './rpc-client.js';

/** The reference's validity of a sponsored build, and its inclusion fee. */
const VALIDITY_SECONDS = 120;
const BASE_FEE = 100n;
const XLM_DECIMALS = 7;
/** The reference's buffer on the resources of the final simulation (15%). */
const RESOURCE_BUFFER_PERCENT = 115;

export interface SorobanGaslessCtx {
  rt: Runtime;
  relayer: Relayer;
  network: Network;
  passphrase: string;
  signer: StellarSignerLike;
  rpc: StellarRpc;
  policy: StellarPolicy;
}

/** The user's contract call: the one operation of its transaction. */
type UserCall = { user: string; target: string; targetFn: string; targetArgs: xdr.ScVal[] };

/** Whether the transaction is a Soroban call (the reference's test: an InvokeHostFunction operation in it). */
export const isSorobanCall = (tx: Transaction) => tx.operations.some((op) => op.type === 'invokeHostFunction');

/** The user's call, checked as the reference checks it: one operation, a contract's function, the user as source. */
function userCall(tx: Transaction, relayer: string): UserCall {
  if (tx.operations.length !== 1) throw fail('transaction_xdr', 'Soroban transactions must contain exactly one operation');
  const op = tx.toEnvelope().v1().tx().operations()[0];
  const fn = op.body().invokeHostFunctionOp().hostFunction();
  if (fn.switch().name !== 'hostFunctionTypeInvokeContract')
    throw fail('transaction_xdr', 'InvokeHostFunction must call a contract function (not upload or create one)');
  const call = fn.invokeContract();
  if (call.contractAddress().switch().name !== 'scAddressTypeContract') throw fail('transaction_xdr', 'InvokeHostFunction must call a contract address');
  const target = StrKey.encodeContract(call.contractAddress().contractId() as unknown as Buffer);
  const user = tx.source;
  if (!StrKey.isValidEd25519PublicKey(user)) throw fail('transaction_xdr', 'its source account must be a G… account (the user paying the fee)');
  if (user === relayer) throw fail('transaction_xdr', "its source account cannot be the relayer (it would spend the relayer's funds)");
  if (op.sourceAccount()) throw fail('transaction_xdr', 'its operation cannot have its own source account');
  return { user, target, targetFn: call.functionName().toString(), targetArgs: call.args() };
}

function forwarderOf(c: SorobanGaslessCtx): string {
  const { mainnet, testnet } = c.rt.env.stellarFeeForwarder;
  const forwarder = c.network.isTestnet ? testnet : mainnet;
  const variable = c.network.isTestnet ? 'STELLAR_TESTNET_FEE_FORWARDER_ADDRESS' : 'STELLAR_MAINNET_FEE_FORWARDER_ADDRESS';
  if (!forwarder) throw fail('transaction_xdr', `gasless Soroban calls need the FeeForwarder contract: set ${variable}`);
  if (!StrKey.isValidContract(forwarder)) throw fail('transaction_xdr', `${variable} is not a valid contract address`);
  return forwarder;
}

function tokenOf(c: SorobanGaslessCtx, feeToken: string) {
  if (!/^C[A-Z2-7]{55}$/.test(feeToken) || !StrKey.isValidContract(feeToken)) {
    throw fail('fee_token', `must be a valid Soroban contract address (C…) for a Soroban call, got "${feeToken}"`);
  }
  const list = c.policy.allowed_tokens ?? [];
  const entry = list.find((t) => t.asset === feeToken);
  if (list.length > 0 && !entry) throw policyError('allowed_tokens', `fee token ${feeToken} is not allowed`);
  return { id: feeToken, entry, decimals: entry?.metadata?.decimals ?? XLM_DECIMALS };
}
type Token = ReturnType<typeof tokenOf>;

/** A contract token's price: the policy's fixed conversion_rate (no market source prices Soroban tokens here). */
function rateOf(token: Token): Rate {
  if (token.entry?.conversion_rate === undefined) {
    throw fail('fee_token', `${token.id} has no price: set its conversion_rate (whole tokens per XLM) in the policy's allowed_tokens`);
  }
  return fixedRate(token.entry.conversion_rate, token.decimals, XLM_DECIMALS);
}

/** A transaction of one operation with the relayer as source (sequence 0: the pipeline assigns the real one at submission). */
function relayerTx(c: SorobanGaslessCtx, op: xdr.Operation, fee: bigint): Transaction {
  return new TransactionBuilder(new Account(c.signer.address, '-1'), { fee: fee.toString(), networkPassphrase: c.passphrase })
    .addOperation(op)
    .setTimeout(0)
    .build();
}

async function simulate(c: SorobanGaslessCtx, tx: Transaction, field: string): Promise<RawSimulateResponse & { transactionData: string }> {
  const sim = await c.rpc.simulateTransaction(tx.toXDR());
  if (typeof sim.error === 'string') throw fail(field, `simulation failed: ${sim.error}`);
  if (!sim.transactionData) throw fail(field, 'simulation answered no transaction data');
  return sim as RawSimulateResponse & { transactionData: string };
}

/** The reference's fee of a simulated call: the inclusion fee and the resource fee, at least the inclusion fee. */
const feeOf = (sim: RawSimulateResponse) => BASE_FEE + BigInt(sim.minResourceFee ?? '0');

/** The user's balance of the token: its `balance` function, simulated. */
async function balanceOf(c: SorobanGaslessCtx, token: string, user: string): Promise<bigint> {
  const op = Operation.invokeContractFunction({ contract: token, function: 'balance', args: [Address.fromString(user).toScVal()] });
  const sim = await simulate(c, relayerTx(c, op, BASE_FEE), 'fee_token');
  const ret = sim.results?.[0]?.xdr;
  if (!ret) throw fail('fee_token', `${token} answered no balance for ${user}`);
  const value = scValToNative(xdr.ScVal.fromXDR(ret, 'base64'));
  if (typeof value !== 'bigint' && typeof value !== 'number') throw fail('fee_token', `${token} is not a token (its balance is not a number)`);
  return BigInt(value);
}

type Plan = {
  call: ForwardCall;
  token: Token;
  rate: Rate;
  feeStroops: bigint;
  sim: RawSimulateResponse & { transactionData: string };
  latestLedger: number;
};

/** Quote and build: the FeeForwarder call priced by simulating it, the policy's limits and the user's balance checked. */
async function plan(c: SorobanGaslessCtx, tx: Transaction, feeToken: string): Promise<Plan> {
  if (c.policy.fee_payment_strategy !== 'user') {
    throw policyError('fee_payment_strategy', 'gasless Soroban calls need fee_payment_strategy "user" (users pay the relayer its fees in a token)');
  }
  const token = tokenOf(c, feeToken);
  const forwarder = forwarderOf(c);
  const user = userCall(tx, c.signer.address);
  const rate = rateOf(token);
  const latest = (await c.rpc.getLatestLedger()).sequence;
  const expiration = expirationLedger(latest, VALIDITY_SECONDS);
  // As the reference: simulated with the fee of the inclusion fee alone and no auth entries.
  const first = convert(rate, withMargin(BASE_FEE, c.policy.fee_margin_percentage));
  const draft: ForwardCall = {
    forwarder,
    feeToken: token.id,
    feeAmount: first,
    maxFeeAmount: maxFeeWithSlippage(first),
    expirationLedger: expiration,
    relayer: c.signer.address,
    ...user,
  };
  const draftOp = Operation.invokeHostFunction({ func: forwardHostFunction(draft), auth: [] });
  const sim = await simulate(c, relayerTx(c, draftOp, BASE_FEE), 'transaction_xdr');
  const feeStroops = withMargin(feeOf(sim), c.policy.fee_margin_percentage);
  const feeInToken = convert(rate, feeStroops);
  const maxFee = maxFeeWithSlippage(feeInToken);
  if (c.policy.max_fee !== undefined && feeStroops > BigInt(c.policy.max_fee)) {
    throw policyError('max_fee', `fee ${feeStroops} stroops exceeds the relayer's max_fee of ${c.policy.max_fee}`);
  }
  const allowed = token.entry?.max_allowed_fee;
  // Ours: the max fee the user authorizes, not only the fee, within max_allowed_fee (else the submission would be refused).
  if (allowed !== undefined && maxFee > BigInt(allowed)) {
    throw policyError(
      'max_allowed_fee',
      `max fee ${maxFee} of ${token.id} (the fee ${feeInToken} and 5% slippage) exceeds the token's max_allowed_fee of ${allowed}`,
    );
  }
  const held = await balanceOf(c, token.id, user.user);
  if (held < feeInToken) throw fail('transaction_xdr', `the user ${user.user} holds ${held} of ${token.id}, less than the fee of ${feeInToken}`);
  return { call: { ...draft, feeAmount: feeInToken, maxFeeAmount: maxFee }, token, rate, feeStroops, sim, latestLedger: latest };
}

export type SorobanQuote = { fee_in_token: string; fee_in_token_ui: string; conversion_rate: string; max_fee_in_token: string; max_fee_in_token_ui: string };
export type SorobanBuild = {
  transaction: string;
  fee_in_token: string;
  fee_in_token_ui: string;
  fee_in_stroops: string;
  fee_token: string;
  valid_until: string;
  user_auth_entry: string;
  max_fee_in_token: string;
  max_fee_in_token_ui: string;
};

const amounts = (p: Plan) => ({
  fee_in_token: p.call.feeAmount.toString(),
  fee_in_token_ui: uiAmount(p.call.feeAmount, p.token.decimals),
  max_fee_in_token: p.call.maxFeeAmount.toString(),
  max_fee_in_token_ui: uiAmount(p.call.maxFeeAmount, p.token.decimals),
});

export async function quoteSoroban(c: SorobanGaslessCtx, tx: Transaction, feeToken: string): Promise<SorobanQuote> {
  const p = await plan(c, tx, feeToken);
  return { ...amounts(p), conversion_rate: wholeRate(p.rate, p.token.decimals, XLM_DECIMALS) };
}

const randomNonce = () => randomBytes(8).readBigInt64BE();

/**
 * The FeeForwarder transaction: the relayer as source and fee payer, the user's entry unsigned
 * and the relayer's entry, which (ours) the relayer signs now: at submission its signature proves
 * the call's arguments (fee_amount, the relayer paid) are the ones built.
 */
export async function buildSoroban(c: SorobanGaslessCtx, tx: Transaction, feeToken: string): Promise<SorobanBuild> {
  const p = await plan(c, tx, feeToken);
  const { call } = p;
  const userEntry = unsignedEntry(call.user, userInvocation(call), randomNonce(), call.expirationLedger);
  const relayerUnsigned = unsignedEntry(c.signer.address, relayerInvocation(call), randomNonce(), call.expirationLedger);
  const sig = await c.signer.sign(authPayload(relayerUnsigned, c.passphrase));
  if (!sig) throw new Error('the relayer signer gave no signature');
  const relayerEntry = withSignature(relayerUnsigned, c.signer.address, sig);
  const op = Operation.invokeHostFunction({ func: forwardHostFunction(call), auth: [userEntry, relayerEntry] });
  const envelope = relayerTx(c, op, feeOf(p.sim)).toEnvelope();
  envelope
    .v1()
    .tx()
    .ext(new xdr.TransactionExt(1, xdr.SorobanTransactionData.fromXDR(p.sim.transactionData, 'base64')));
  const validUntil = new Date(Date.now() + (call.expirationLedger - p.latestLedger) * LEDGER_SECONDS * 1000);
  return {
    transaction: envelope.toXDR('base64'),
    ...amounts(p),
    fee_in_stroops: p.feeStroops.toString(),
    fee_token: call.feeToken,
    valid_until: validUntil.toISOString(),
    user_auth_entry: userEntry.toXDR('base64'),
  };
}

function decodeEntry(text: string): xdr.SorobanAuthorizationEntry {
  try {
    return xdr.SorobanAuthorizationEntry.fromXDR(text, 'base64');
  } catch {
    throw fail('signed_auth_entry', 'is not a base64 SorobanAuthorizationEntry');
  }
}

/**
 * A submission with `signed_auth_entry`: the FeeForwarder transaction of a build of this relayer
 * (its own signature on the call still verifies: nothing altered), the user's entry signed by the
 * user over exactly what it was asked to authorize, not expired, the fee in an allowed token within
 * max_allowed_fee and covering what the call costs now. Answers the request the pipeline then
 * sends as the relayer's own: the transaction with the user's entry in it, the relayer's entry as
 * source-account credentials (its transaction signature authorizes it), and the resources of a
 * new simulation with 15% more (the reference's buffer), and the key that makes it one of a kind:
 * the user's authorization nonce, which the network takes once.
 */
export async function prepareSorobanSubmission(
  c: SorobanGaslessCtx,
  req: StellarTransactionRequest & { signed_auth_entry: string },
): Promise<{ req: StellarTransactionRequest; once: string }> {
  const relayer = c.signer.address;
  const field = 'transaction_xdr';
  if (req.transaction_xdr === undefined) throw fail(field, 'is required with signed_auth_entry');
  let parsed: Transaction | FeeBumpTransaction;
  try {
    parsed = TransactionBuilder.fromXDR(req.transaction_xdr, c.passphrase);
  } catch {
    throw fail(field, 'is not a valid base64 transaction envelope');
  }
  if (parsed instanceof FeeBumpTransaction || parsed.toEnvelope().switch().name !== 'envelopeTypeTx')
    throw fail(field, 'must be the v1 transaction of a sponsored build');
  const tx = parsed;
  if (tx.source !== relayer) throw fail(field, `its source must be the relayer ${relayer} (the transaction of a sponsored build)`);
  if (tx.signatures.length > 0) throw fail(field, 'must be sent unsigned: the user signs only signed_auth_entry');
  const ops = tx.toEnvelope().v1().tx().operations();
  if (ops.length !== 1 || ops[0].body().switch().name !== 'invokeHostFunction') throw fail(field, 'must be the one FeeForwarder call of a sponsored build');
  const invoke = ops[0].body().invokeHostFunctionOp();
  const forwarder = forwarderOf(c);
  const call = readForward(invoke.hostFunction(), forwarder);
  if (!call) throw fail(field, `must call forward on the FeeForwarder ${forwarder}`);
  if (call.relayer !== relayer) throw policyError('fee_payment_strategy', `the FeeForwarder call pays its fee to ${call.relayer}, not to the relayer`);
  const auth = invoke.auth();
  const relayerEntry = auth[1];
  if (
    auth.length !== 2 ||
    entryAccount(relayerEntry) !== relayer ||
    !sameXdr(relayerEntry.rootInvocation(), relayerInvocation(call)) ||
    !signatureVerifies(relayerEntry, c.passphrase)
  ) {
    throw fail(field, 'is not a sponsored build of this relayer as built (its FeeForwarder call or authorizations were altered)');
  }

  const signed = decodeEntry(req.signed_auth_entry);
  if (entryAccount(signed) !== call.user) throw fail('signed_auth_entry', `must be the authorization of the user ${call.user} with address credentials`);
  if (!sameXdr(signed.rootInvocation(), userInvocation(call)))
    throw fail('signed_auth_entry', "does not authorize this transaction's FeeForwarder call (altered?)");
  if (!signatureVerifies(signed, c.passphrase))
    throw fail('signed_auth_entry', `its signature does not verify as the user ${call.user}'s over the entry as it is (altered after signing?)`);
  const latest = (await c.rpc.getLatestLedger()).sequence;
  const signatureExpiration = signed.credentials().address().signatureExpirationLedger();
  if (latest >= call.expirationLedger || latest >= signatureExpiration) {
    throw fail(
      'transaction_xdr',
      `has expired: its authorization ended at ledger ${Math.min(call.expirationLedger, signatureExpiration)}, the network is at ${latest}; build it again`,
    );
  }

  const token = tokenOf(c, call.feeToken);
  if (call.maxFeeAmount <= 0n || call.feeAmount <= 0n) throw fail(field, 'its fee and max fee must be positive');
  if (call.feeAmount > call.maxFeeAmount) throw fail(field, `its fee ${call.feeAmount} exceeds its max fee ${call.maxFeeAmount}`);
  const allowed = token.entry?.max_allowed_fee;
  if (allowed !== undefined && call.maxFeeAmount > BigInt(allowed)) {
    throw policyError('max_allowed_fee', `max fee ${call.maxFeeAmount} of ${token.id} exceeds the token's max_allowed_fee of ${allowed}`);
  }

  // The transaction as it will be sent: the user's signed entry, the relayer's as source account.
  const relayerAsSource = new xdr.SorobanAuthorizationEntry({
    credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
    rootInvocation: relayerEntry.rootInvocation(),
  });
  const env = tx.toEnvelope();
  const body = env.v1().tx();
  body.operations()[0].body().invokeHostFunctionOp().auth([signed, relayerAsSource]);
  const sim = await simulate(c, new Transaction(env, c.passphrase), field);
  const data = xdr.SorobanTransactionData.fromXDR(sim.transactionData, 'base64');
  const res = data.resources();
  const buffer = (n: number) => Math.min(0xffffffff, Math.floor((n * RESOURCE_BUFFER_PERCENT) / 100));
  res.instructions(buffer(res.instructions()));
  res.diskReadBytes(buffer(res.diskReadBytes()));
  res.writeBytes(buffer(res.writeBytes()));
  const fee = feeOf(sim) > BigInt(body.fee()) ? feeOf(sim) : BigInt(body.fee());
  body.fee(Number(fee));
  body.ext(new xdr.TransactionExt(1, data));
  // What the call costs now, in the token, must be within what the user authorized (the reference's check).
  const owed = convert(rateOf(token), withMargin(fee, c.policy.fee_margin_percentage));
  if (call.maxFeeAmount < owed) {
    throw policyError(
      'max_allowed_fee',
      `the user authorized at most ${call.maxFeeAmount} of ${token.id}, less than the fee of ${owed} the call costs now; build it again`,
    );
  }
  // Not sent after its authorization ends: the pipeline expires it instead (its time bounds end then).
  const ends = Date.now() + (Math.min(call.expirationLedger, signatureExpiration) - latest) * LEDGER_SECONDS * 1000;
  const validUntil = req.valid_until !== undefined && Date.parse(req.valid_until) < ends ? req.valid_until : new Date(ends).toISOString();
  const { signed_auth_entry: _, ...rest } = req;
  return {
    req: { ...rest, transaction_xdr: env.toXDR('base64'), valid_until: validUntil },
    once: `soroban-auth:${call.user}:${signed.credentials().address().nonce().toString()}`,
  };
}
