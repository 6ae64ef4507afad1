import { Account, Address, Asset, FeeBumpTransaction, Memo, Operation, rpc as sdkRpc, Transaction, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { randomBytes } from 'node:crypto';
import { fieldError, StellarRequestError } from './request-error.js';
import { checkStellarPolicy, type StellarPolicy } from './policy.js';
import type { StellarOperationSpec, StellarMemoSpec, StellarTransactionRequest } from './request.js';
import type { RawSimulateResponse, StellarRpc } from './rpc-client.js';
import { jsonToScVal } from './scval.js';

/** The relayer's Stellar signer (shape provided by src/signers). */
export interface StellarSignerLike {
  kind: 'stellar';
  address: string;
  /** Ed25519 signature (64 bytes) over `data`; null in a dry run (nothing is signed). */
  sign(data: Uint8Array): Promise<Uint8Array | null>;
}

/** Adds the signer's signature over the transaction's hash (as `tx.sign(keypair)` would). */
export async function signEnvelope(tx: Transaction | FeeBumpTransaction, signer: StellarSignerLike): Promise<string> {
  const signed = await signer.sign(tx.hash());
  if (!signed) return '';
  const signature = Buffer.from(signed).toString('base64');
  tx.addSignature(signer.address, signature);
  return signature;
}

export type BuiltStellarTx = {
  /** Signed envelope, base64 XDR, ready for sendTransaction. */
  envelopeXdr: string;
  /** Hex hash of the envelope (the fee-bump hash for fee bumps): the id to poll with getTransaction. */
  hash: string;
  /** Sequence number of the (inner) transaction. */
  sequence: bigint;
  /** True when `sequence` is the relayer's own account sequence (i.e. the caller's counter moved). */
  usesRelayerSequence: boolean;
  /** Maximum fee in stroops the relayer pays. */
  fee: bigint;
  /** RFC 3339 upper time bound, or null when the transaction never expires. */
  validUntil: string | null;
  feeBump: boolean;
};

export type StellarBuildContext = {
  source: StellarSignerLike;
  networkPassphrase: string;
  /** Inclusion fee per operation, stroops. Default 100 (the network minimum). */
  baseFee?: number;
  /** Needed for Soroban operations (simulation) and for policy.min_balance. */
  rpc?: StellarRpc;
  policy?: StellarPolicy;
  /** Clock used for time-bound checks; defaults to now. */
  now?: Date;
};

const DEFAULT_BASE_FEE = 100;
const SOROBAN_TYPES = new Set(['invoke_contract', 'create_contract', 'upload_wasm']);

function toMemo(spec: StellarMemoSpec | undefined): Memo {
  if (!spec || spec.type === 'none') return Memo.none();
  switch (spec.type) {
    case 'text':
      return Memo.text(spec.value);
    case 'id':
      return Memo.id(spec.value.toString());
    case 'hash':
    case 'return': {
      const bytes = typeof spec.value === 'string' ? Buffer.from(spec.value, 'hex') : Buffer.from(spec.value);
      return spec.type === 'hash' ? Memo.hash(bytes) : Memo.return(bytes.toString('hex'));
    }
  }
}

function stroopsToAmount(stroops: bigint): string {
  const s = stroops.toString().padStart(8, '0');
  return `${s.slice(0, -7)}.${s.slice(-7)}`;
}

export function toOperation(op: StellarOperationSpec, i: number, relayer: string): xdr.Operation {
  const at = `operations[${i}]`;
  switch (op.type) {
    case 'payment':
      return Operation.payment({
        destination: op.destination,
        amount: stroopsToAmount(op.amount),
        asset: op.asset.type === 'native' ? Asset.native() : new Asset(op.asset.code, op.asset.issuer),
      });
    case 'invoke_contract':
      return Operation.invokeContractFunction({
        contract: op.contract_address,
        function: op.function_name,
        args: op.args.map((a, j) => jsonToScVal(a, `${at}.args[${j}]`)),
      });
    case 'create_contract':
      // Deploying from another address would need that address's auth entry,
      // which this relayer cannot produce.
      if (op.source.address !== relayer) {
        throw fieldError(`${at}.source.address`, `must be the relayer ${relayer} (other deployers are not supported)`);
      }
      return Operation.createCustomContract({
        address: Address.fromString(op.source.address),
        wasmHash: Buffer.from(op.wasm_hash, 'hex'),
        // An explicit salt makes the contract address predictable; without one it is random.
        salt: op.salt ? Buffer.from(op.salt, 'hex') : randomBytes(32),
        constructorArgs: op.constructor_args?.map((a, j) => jsonToScVal(a, `${at}.constructor_args[${j}]`)),
      });
    case 'upload_wasm': {
      const wasm = 'base64' in op.wasm ? Buffer.from(op.wasm.base64, 'base64') : Buffer.from(op.wasm.hex, 'hex');
      return Operation.uploadContractWasm({ wasm });
    }
  }
}

function parseValidUntil(validUntil: string | undefined, now: Date): number | undefined {
  if (validUntil === undefined) return undefined;
  const seconds = Math.floor(Date.parse(validUntil) / 1000);
  if (seconds <= Math.floor(now.getTime() / 1000)) throw fieldError('valid_until', 'must be in the future');
  return seconds;
}

function maxTimeOf(tx: Transaction): number {
  return Number(tx.timeBounds?.maxTime ?? 0);
}

function validUntilOf(maxTime: number): string | null {
  return maxTime > 0 ? new Date(maxTime * 1000).toISOString() : null;
}

async function simulateAndAssemble(tx: Transaction, rpc: StellarRpc | undefined, field: string): Promise<Transaction> {
  if (!rpc) throw new Error('an RPC client is required to simulate Soroban operations');
  const sim: RawSimulateResponse = await rpc.simulateTransaction(tx.toXDR());
  if (typeof sim.error === 'string') throw fieldError(field, `simulation failed: ${sim.error}`);
  if (sim.restorePreamble?.transactionData) {
    throw fieldError(field, 'contract state must be restored before this call (restoreFootprint is not supported)');
  }
  if (!sim.transactionData) throw new Error('simulateTransaction returned no transactionData');
  return sdkRpc.assembleTransaction(tx, sim).build() as Transaction;
}

async function enforceFees(fee: bigint, maxFee: bigint, ctx: StellarBuildContext): Promise<void> {
  if (fee > maxFee) throw fieldError('max_fee', `transaction needs a fee of ${fee} stroops, above max_fee ${maxFee}`);
  if (!ctx.policy) return;
  let balance: bigint | undefined;
  if (ctx.policy.min_balance !== undefined) {
    if (!ctx.rpc) throw new Error('an RPC client is required to enforce policy.min_balance');
    const account = await ctx.rpc.getAccount(ctx.source.address);
    balance = account?.balance ?? 0n;
  }
  checkStellarPolicy(ctx.policy, { fee, balance });
}

function checkSourceAccount(req: StellarTransactionRequest, relayer: string): void {
  if (req.source_account !== undefined && req.source_account !== relayer) {
    throw fieldError('source_account', `must be the relayer's address ${relayer} (other sources are not supported yet)`);
  }
}

/**
 * Builds and signs a transaction from `operations`, with the relayer as source
 * and the caller-allocated `sequence` (the new transaction's sequence number,
 * i.e. the account's current sequence + 1 for the next transaction).
 */
export async function buildFromOperations(req: StellarTransactionRequest, ctx: StellarBuildContext & { sequence: bigint }): Promise<BuiltStellarTx> {
  const relayer = ctx.source.address;
  const ops = req.operations;
  if (!ops) throw fieldError('operations', 'is required');
  checkSourceAccount(req, relayer);
  if (ctx.sequence < 1n) throw new Error(`invalid sequence ${ctx.sequence}`);

  const sorobanIndex = ops.findIndex((op) => SOROBAN_TYPES.has(op.type));
  if (sorobanIndex >= 0 && ops.length > 1) {
    throw fieldError(`operations[${sorobanIndex}]`, `a ${ops[sorobanIndex].type} operation must be the only operation in a transaction`);
  }
  const now = ctx.now ?? new Date();
  const maxTime = parseValidUntil(req.valid_until, now) ?? timeoutFromPolicy(ctx.policy, now);

  const builder = new TransactionBuilder(new Account(relayer, (ctx.sequence - 1n).toString()), {
    fee: String(ctx.baseFee ?? DEFAULT_BASE_FEE),
    networkPassphrase: ctx.networkPassphrase,
    memo: toMemo(req.memo),
  });
  ops.forEach((op, i) => builder.addOperation(toOperation(op, i, relayer)));
  if (maxTime !== undefined) builder.setTimebounds(0, maxTime);
  else builder.setTimeout(0);
  let tx = builder.build();
  if (sorobanIndex >= 0) tx = await simulateAndAssemble(tx, ctx.rpc, 'operations[0]');

  return signAsSource(tx, req.max_fee, ctx, BigInt(tx.sequence), validUntilOf(maxTimeOf(tx)));
}

/** A transaction whose source is the relayer: fee checked against max_fee and the policy, then signed. */
async function signAsSource(
  tx: Transaction,
  maxFee: bigint,
  ctx: StellarBuildContext,
  sequence: bigint,
  validUntil: BuiltStellarTx['validUntil'],
): Promise<BuiltStellarTx> {
  const fee = BigInt(tx.fee);
  await enforceFees(fee, maxFee, ctx);
  await signEnvelope(tx, ctx.source);
  return { envelopeXdr: tx.toXDR(), hash: tx.hash().toString('hex'), sequence, usesRelayerSequence: true, fee, validUntil, feeBump: false };
}

function timeoutFromPolicy(policy: StellarPolicy | undefined, now: Date): number | undefined {
  if (!policy?.timeout_seconds) return undefined;
  return Math.floor(now.getTime() / 1000) + policy.timeout_seconds;
}

function decodeXdr(envelope: string, networkPassphrase: string): Transaction | FeeBumpTransaction {
  try {
    return TransactionBuilder.fromXDR(envelope, networkPassphrase);
  } catch {
    throw fieldError('transaction_xdr', 'is not a valid base64 transaction envelope');
  }
}

function isSoroban(tx: Transaction): boolean {
  return tx.operations.length === 1 && ['invokeHostFunction', 'extendFootprintTtl', 'restoreFootprint'].includes(tx.operations[0].type);
}

function hasSorobanData(tx: Transaction): boolean {
  return tx.toEnvelope().v1().tx().ext().switch() === 1;
}

/**
 * An unsigned transaction with another sequence number and, when `maxTime` is earlier than its
 * own upper time bound (or it has none), that upper bound. Only the relayer signs it, so the
 * relayer may change what its signature covers.
 */
function resequence(tx: Transaction, sequence: bigint, maxTime: number | undefined, networkPassphrase: string): Transaction {
  const env = tx.toEnvelope();
  const body = env.v1().tx();
  body.seqNum(xdr.Int64.fromString(sequence.toString()));
  const current = maxTimeOf(tx);
  if (maxTime !== undefined && (current === 0 || maxTime < current)) {
    const cond = body.cond();
    const minTime = xdr.Uint64.fromString(String(tx.timeBounds?.minTime ?? '0'));
    const bounds = new xdr.TimeBounds({ minTime, maxTime: xdr.Uint64.fromString(String(maxTime)) });
    if (cond.switch().name === 'precondV2') cond.v2().timeBounds(bounds);
    else body.cond(xdr.Preconditions.precondTime(bounds));
  }
  return new Transaction(env, networkPassphrase);
}

/**
 * Prepares a user-supplied `transaction_xdr`:
 * - unsigned: the relayer must be its source; it is simulated if it is a
 *   Soroban call without resources yet, then signed by the relayer. Its
 *   sequence is reported; pass `expectedSequence` to have it checked, or
 *   `sequence` to replace it with the one the relayer allocated (an upper time
 *   bound is then set from `valid_until` when it has none or a later one).
 * - signed with fee_bump: wrapped in a fee bump paid (and signed) by the relayer.
 *   Its source must not be the relayer: the relayer's own transactions come
 *   unsigned, so that it keeps track of its sequence numbers.
 */
export async function prepareFromXdr(
  req: StellarTransactionRequest,
  ctx: StellarBuildContext & { expectedSequence?: bigint; sequence?: bigint },
): Promise<BuiltStellarTx> {
  const relayer = ctx.source.address;
  if (req.transaction_xdr === undefined) throw fieldError('transaction_xdr', 'is required');
  checkSourceAccount(req, relayer);
  const parsed = decodeXdr(req.transaction_xdr, ctx.networkPassphrase);
  if (parsed instanceof FeeBumpTransaction) throw fieldError('transaction_xdr', 'is already a fee-bump transaction');
  if (parsed.toEnvelope().switch().name === 'envelopeTypeTxV0') {
    throw fieldError('transaction_xdr', 'uses the legacy v0 envelope; build it as a v1 transaction');
  }
  let tx = parsed;
  const now = ctx.now ?? new Date();
  const nowSeconds = Math.floor(now.getTime() / 1000);

  const maxTime = maxTimeOf(tx);
  if (maxTime > 0 && maxTime <= nowSeconds) {
    throw fieldError('transaction_xdr', `time bounds expired at ${new Date(maxTime * 1000).toISOString()}`);
  }
  const requested = parseValidUntil(req.valid_until, now);
  // valid_until cannot extend a signed XDR's bounds; it only shortens how long the relayer keeps trying.
  const deadline = [maxTime || undefined, requested].filter((t): t is number => t !== undefined);
  const validUntil = deadline.length ? validUntilOf(Math.min(...deadline)) : null;
  const signed = tx.signatures.length > 0;

  if (!signed) {
    if (req.fee_bump) throw fieldError('fee_bump', 'requires a transaction_xdr already signed by its source');
    if (tx.source !== relayer) {
      throw fieldError('transaction_xdr', `source account ${tx.source} is not the relayer ${relayer}; sign it and set fee_bump: true instead`);
    }
    if (ctx.sequence !== undefined) {
      if (ctx.sequence < 1n) throw new Error(`invalid sequence ${ctx.sequence}`);
      tx = resequence(tx, ctx.sequence, requested, ctx.networkPassphrase);
    }
    const sequence = BigInt(tx.sequence);
    if (ctx.expectedSequence !== undefined && sequence !== ctx.expectedSequence) {
      throw fieldError('transaction_xdr', `sequence number ${sequence} is not the relayer's next sequence ${ctx.expectedSequence}`);
    }
    if (isSoroban(tx) && !hasSorobanData(tx)) tx = await simulateAndAssemble(tx, ctx.rpc, 'transaction_xdr');
    return signAsSource(tx, req.max_fee, ctx, sequence, ctx.sequence !== undefined ? validUntilOf(maxTimeOf(tx)) : validUntil);
  }

  if (tx.source === relayer) {
    throw fieldError('transaction_xdr', `is signed and its source is the relayer ${relayer}; send it unsigned so the relayer assigns its sequence number`);
  }
  if (!req.fee_bump) {
    throw fieldError('fee_bump', 'must be true for an already-signed transaction_xdr (the relayer can only pay for it via a fee bump)');
  }
  const ops = tx.operations.length;
  const resourceFee = hasSorobanData(tx) ? BigInt(tx.toEnvelope().v1().tx().ext().sorobanData().resourceFee().toString()) : 0n;
  const innerRate = (BigInt(tx.fee) - resourceFee + BigInt(ops) - 1n) / BigInt(ops);
  const baseFee = BigInt(ctx.baseFee ?? DEFAULT_BASE_FEE);
  const rate = innerRate > baseFee ? innerRate : baseFee;
  const fee = rate * BigInt(ops + 1) + resourceFee;
  await enforceFees(fee, req.max_fee, ctx);
  const bump = TransactionBuilder.buildFeeBumpTransaction(relayer, rate.toString(), tx, ctx.networkPassphrase);
  await signEnvelope(bump, ctx.source);
  return {
    envelopeXdr: bump.toXDR(),
    hash: bump.hash().toString('hex'),
    sequence: BigInt(tx.sequence),
    usesRelayerSequence: tx.source === relayer,
    fee: BigInt(bump.fee),
    validUntil,
    feeBump: true,
  };
}

/**
 * Whether building this request consumes a relayer sequence number the caller must allocate:
 * transactions built from operations and unsigned XDR (the relayer is its source); not a signed
 * XDR, which the relayer only wraps in a fee bump.
 */
export function needsRelayerSequence(req: StellarTransactionRequest, networkPassphrase: string): boolean {
  if (req.operations !== undefined) return true;
  if (req.transaction_xdr === undefined) return false;
  const tx = decodeXdr(req.transaction_xdr, networkPassphrase);
  return !(tx instanceof FeeBumpTransaction) && tx.signatures.length === 0;
}

/**
 * Dispatches to buildFromOperations or prepareFromXdr. `sequence` (the relayer's allocated
 * sequence number) is required when needsRelayerSequence says so, and replaces the sequence of
 * an unsigned XDR.
 */
export async function buildStellarTransaction(req: StellarTransactionRequest, ctx: StellarBuildContext & { sequence?: bigint }): Promise<BuiltStellarTx> {
  if (req.operations) {
    if (ctx.sequence === undefined) throw new Error('a sequence number is required to build from operations');
    return buildFromOperations(req, { ...ctx, sequence: ctx.sequence });
  }
  return prepareFromXdr(req, ctx);
}

export { StellarRequestError };
