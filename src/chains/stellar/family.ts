// The Stellar chain family: accepts shape C requests and works each transaction through
// sign -> send -> track, with the relayer's sequence numbers allocated like EVM nonces.
import { Address, FeeBumpTransaction, TransactionBuilder, type Memo, type MemoType, type Transaction as StellarTx } from '@stellar/stellar-sdk';
import type { Network } from '../../config/load.js';
import { signerKey } from '../../config/signers.js';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import { freeNonceOfFinal, type TransactionPatch } from '../../core/transactions/store.js';
import { invalid } from '../../core/errors.js';
import { RelayerCheckError } from '../../core/errors.js';
import { parseJson, stringifyJson } from '../../lib/json.js';
import type { ChainFamily } from '../../core/transactions/family.js';
import { DEFAULT_VALIDITY_MS } from '../../core/family.js';
import { findNetwork, type Runtime } from '../../core/runtime.js';
import type { StellarSigner } from '../../signers/index.js';
import { buildStellarTransaction, needsRelayerSequence, type BuiltStellarTx } from './build.js';
import { StellarRequestError } from './errors.js';
import { stellarPolicySchema, type StellarPolicy } from './policy.js';
import { parseStellarRequest, type StellarTransactionRequest } from './request.js';
import { JsonRpcError } from '../jsonrpc.js';
import { createStellarRpc, type StellarRpc } from './rpc.js';
import { attributeSequence, nextSequenceMove, type SequenceAttribution } from './decide.js';
import { findAtSequence, type FoundAtSequence } from './sequence.js';
import { describeTransactionResult, lookUpStellarTxs, submitStellarTx, type StellarLookUp, type StellarSubmitOutcome } from './status.js';
import { rpcObserver } from '../../metrics/rpc.js';
import { clientCache, contextForCheck, endpointsOf, FINAL_STATUSES, long, relayerOfStep, saveStep } from '../step.js';
import { isUniqueViolation } from '../../db/errors.js';

interface Ctx {
  relayer: Relayer;
  network: Network;
  passphrase: string;
  signer: StellarSigner;
  policy: StellarPolicy;
  rpc: StellarRpc;
  /** How often a sent transaction is looked up: about one ledger. */
  pollMs: number;
}

/** What the pipeline keeps about the transaction's current envelope (transactions.chain_state). */
interface StellarState {
  /** The signed envelope, written before it is sent so that a restart sends the same bytes. */
  envelope: string;
  hash: string;
  sequence: string;
  /** Upper time bound of the envelope (RFC 3339); null when it has none. */
  maxTime: string | null;
  /** A node accepted this envelope (PENDING or DUPLICATE). */
  accepted: boolean;
  /** Look-ups since it was accepted; it is sent again every RESEND_EVERY while the node has no result. */
  polls: number;
  /** Included in a ledger: its sequence number is used. */
  landed?: boolean;
  /** Which signing path made the current envelope (names its crash points). */
  kind?: 'send' | 'resubmit';
  /**
   * Every signing ever made of this transaction, oldest first, each written before it was sent:
   * any of them may be the one on chain, so all are looked up.
   */
  signings?: { hash: string; sequence: string }[];
  /**
   * Why it is held: its sequence number was used on chain by a transaction not found. Nothing is
   * broadcast while it is held; it is only looked at again, for proof either way.
   */
  held?: string;
  /** Published as the record's network fields (REST, webhooks, GraphQL networkData). */
  public: Record<string, unknown>;
}

const DEFAULT_LEDGER_MS = 5_000;
const RESEND_EVERY = 5;

const rpcFor = clientCache('stellar rpc clients', (endpoints, rt) =>
  createStellarRpc(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000, observe: rpcObserver(rt, 'stellar', endpoints) }),
);

function contextOf(rt: Runtime, relayer: Relayer): Ctx {
  const network = findNetwork(rt, 'stellar', relayer.network);
  if (!network?.passphrase) throw new Error(`stellar network "${relayer.network}" of relayer ${relayer.id} is not configured`);
  const signer = rt.signers.get(signerKey(relayer.signerId, 'stellar'));
  if (signer?.kind !== 'stellar') throw new Error(`relayer ${relayer.id} has no stellar signer`);
  return {
    relayer,
    network,
    passphrase: network.passphrase,
    signer,
    policy: stellarPolicySchema.parse(relayer.policies ?? {}),
    rpc: rpcFor(rt, endpointsOf(relayer, network.rpcUrls)),
    pollMs: network.averageBlocktimeMs ?? DEFAULT_LEDGER_MS,
  };
}

/** The accepted request, stored losslessly (amounts and contract arguments may exceed 2^53). */
const storeRequest = (req: StellarTransactionRequest) => stringifyJson(req);
const readRequest = (tx: Transaction) => parseStellarRequest(parseJson(tx.request as string));

function build(c: Ctx, req: StellarTransactionRequest, validUntil: Date, sequence: bigint | undefined): Promise<BuiltStellarTx> {
  return buildStellarTransaction(
    { ...req, valid_until: validUntil.toISOString() },
    { source: c.signer, networkPassphrase: c.passphrase, rpc: c.rpc, policy: c.policy, sequence },
  );
}

function innerOf(envelope: string, passphrase: string): { outer: StellarTx | FeeBumpTransaction; inner: StellarTx } {
  const outer = TransactionBuilder.fromXDR(envelope, passphrase);
  return { outer, inner: outer instanceof FeeBumpTransaction ? outer.innerTransaction : outer };
}

function memoJson(memo: Memo<MemoType>): Record<string, unknown> {
  const v = memo.value;
  switch (memo.type) {
    case 'none':
      return { type: 'none' };
    case 'text':
      return { type: 'text', value: Buffer.isBuffer(v) ? v.toString('utf8') : v };
    case 'id':
      return { type: 'id', value: long(BigInt(v as string)) };
    default:
      return { type: memo.type, value: Array.from(v as Buffer) };
  }
}

const stroopsOf = (amount: string) => {
  const [whole, frac = ''] = amount.split('.');
  return (BigInt(whole) * 10_000_000n + BigInt(frac.padEnd(7, '0'))).toString();
};

/** The record's `to` and `value`: a single payment's destination and amount, or a single call's contract. */
function recipientOf(inner: StellarTx): { to: string | null; value: string } {
  const [op, ...rest] = inner.operations;
  if (!op || rest.length > 0) return { to: null, value: '0' };
  if (op.type === 'payment') return { to: op.destination, value: op.asset.isNative() ? stroopsOf(op.amount) : '0' };
  if (op.type === 'invokeHostFunction' && op.func.switch().name === 'hostFunctionTypeInvokeContract') {
    return { to: Address.fromScAddress(op.func.invokeContract().contractAddress()).toString(), value: '0' };
  }
  return { to: null, value: '0' };
}

function stateOf(c: Ctx, built: BuiltStellarTx, kind: 'send' | 'resubmit', earlier: StellarState['signings'] = []): StellarState {
  const { outer, inner } = innerOf(built.envelopeXdr, c.passphrase);
  return {
    envelope: built.envelopeXdr,
    hash: built.hash,
    sequence: built.sequence.toString(),
    maxTime: built.validUntil,
    accepted: false,
    polls: 0,
    kind,
    signings: [...(earlier ?? []), { hash: built.hash, sequence: built.sequence.toString() }],
    public: {
      source_account: inner.source,
      fee_payer: outer instanceof FeeBumpTransaction ? outer.feeSource : inner.source,
      sequence_number: long(built.sequence),
      fee: long(built.fee),
      fee_bump: built.feeBump,
      memo: memoJson(inner.memo),
      signed_envelope_xdr: built.envelopeXdr,
    },
  };
}

const asJson = (state: StellarState) => state as unknown as TransactionPatch['chainState'];

/** Every hash signed for this transaction, oldest first (chain_state's list and the record's). */
function signingsOf(tx: Transaction, state: StellarState): string[] {
  const all = [...(state.signings ?? []).map((s) => s.hash), ...tx.hashes, state.hash];
  return [...new Set(all.map((h) => h.toLowerCase()))];
}

/** How long a transaction whose sequence number was used by an unknown transaction waits before it is looked at again. */
const HOLD_MS = 60_000;

// Result codes in plain words; the code itself follows in brackets.
const CODE_WORDS: Record<string, string> = {
  tx_bad_auth: 'a signature is missing or invalid',
  tx_bad_auth_extra: 'it carries signatures that are not needed',
  tx_insufficient_fee: 'its fee is below what the network requires',
  tx_insufficient_balance: 'the fee payer cannot pay the fee and keep its reserve',
  tx_no_account: 'its source account does not exist',
  tx_too_early: 'its time bounds have not started yet',
  tx_too_late: 'its time bounds have passed',
  tx_bad_seq: 'its sequence number is not the next one of its source account',
  tx_failed: 'an operation failed',
  tx_missing_operation: 'it has no operations',
  tx_malformed: 'it is malformed',
  tx_not_supported: 'the network does not support it',
  tx_soroban_invalid: 'its contract resources are invalid',
};

/** "a signature is missing or invalid (tx_fee_bump_inner_failed (inner tx_bad_auth))" */
function explain(reason: string): string {
  const code = /inner (tx_\w+)/.exec(reason)?.[1] ?? /^(tx_\w+)/.exec(reason)?.[1] ?? '';
  const words = CODE_WORDS[code];
  return words ? `${words} (${reason})` : reason;
}

/** When the relayer stops trying: valid_until, else the policy's timeout_seconds, else 8 hours. */
function deadlineOf(req: StellarTransactionRequest, policy: StellarPolicy, now: Date): Date {
  if (req.valid_until) return new Date(req.valid_until);
  if (policy.timeout_seconds) return new Date(now.getTime() + policy.timeout_seconds * 1000);
  return new Date(now.getTime() + DEFAULT_VALIDITY_MS);
}

async function signStep(rt: Runtime, c: Ctx, tx: Transaction): Promise<void> {
  if (Date.now() >= tx.validUntil!.getTime()) {
    await saveStep(rt, tx, { status: 'expired', statusReason: 'valid_until passed before the transaction was sent' }, null);
    return;
  }
  let built: BuiltStellarTx;
  try {
    built = await build(c, readRequest(tx), tx.validUntil!, tx.nonce ?? undefined);
  } catch (e) {
    if (!(e instanceof StellarRequestError)) throw e;
    const expired = e.field === 'valid_until' || /time bounds expired/.test(e.message);
    await saveStep(rt, tx, { status: expired ? 'expired' : 'failed', statusReason: `could not be built: ${e.message}` }, null);
    return;
  }
  rt.crash('stellar.send.signed');
  const state = stateOf(c, built, 'send');
  await saveStep(rt, tx, { status: 'sent', hash: built.hash, hashes: [...tx.hashes, built.hash], chainState: asJson(state) }, 0);
}

/**
 * Broadcasts the envelope the signing step wrote. An answer that never comes (the call throws:
 * timeout, reset, 5xx) leaves it unaccepted, so it is sent again later: it may have been sent,
 * and the same envelope can be applied at most once.
 */
// Past its time bound the network answers tx_too_late (expired); the ledger's clock decides, not ours.
async function sendStep(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState): Promise<void> {
  const kind = state.kind ?? 'send';
  rt.crash(`stellar.${kind}.saved`);
  const outcome = await submitStellarTx(c.rpc, state.envelope);
  rt.crash(`stellar.${kind}.broadcast`);
  await afterSend(rt, c, tx, state, outcome);
}

async function afterSend(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState, outcome: StellarSubmitOutcome): Promise<void> {
  switch (outcome.outcome) {
    case 'submitted':
      await saveStep(rt, tx, { status: 'submitted', chainState: asJson({ ...state, accepted: true, polls: state.accepted ? state.polls : 0 }) }, c.pollMs);
      return;
    case 'retry':
      await saveStep(rt, tx, {}, c.pollMs);
      return;
    case 'rejected': {
      if (outcome.code === 'tx_bad_seq' && tx.nonce !== null) return reconcileSequence(rt, c, tx, state);
      if (tx.nonce === null && (outcome.code === 'tx_bad_seq' || /inner tx_bad_seq/.test(outcome.reason))) {
        return reconcileForeignSequence(rt, c, tx, state, outcome.reason);
      }
      // A refusal now says nothing about an earlier broadcast whose answer was lost, nor about an
      // earlier signing: look for every one of them on chain first.
      const look = await lookUpStellarTxs(c.rpc, signingsOf(tx, state));
      if (look.landed) return recordLanded(rt, tx, state, look.landed);
      if (outcome.code === 'tx_too_late') {
        await saveStep(rt, tx, { status: 'expired', statusReason: `not included before its time bound: ${explain(outcome.reason)}` }, null);
        return;
      }
      await saveStep(rt, tx, { status: 'failed', statusReason: `rejected by the network: ${explain(outcome.reason)}` }, null);
    }
  }
}

/** Records the signing the chain applied as the transaction's, with its result. */
/** A transaction of ours found at its sequence number by the history search: its record there is the result. */
function recordFound(rt: Runtime, tx: Transaction, state: StellarState, hash: string, r: FoundAtSequence): Promise<void> {
  if (r.status === 'SUCCESS') return recordLanded(rt, tx, state, { hash, status: 'confirmed', ledger: r.ledger });
  const { code, reason } = r.resultXdr ? describeTransactionResult(r.resultXdr) : { code: 'unknown', reason: 'failed' };
  return recordLanded(rt, tx, state, { hash, status: 'failed', ledger: r.ledger, code, reason });
}

async function recordLanded(rt: Runtime, tx: Transaction, state: StellarState, landed: NonNullable<StellarLookUp['landed']>): Promise<void> {
  const at = { ...state, hash: landed.hash, held: undefined };
  if (landed.status === 'confirmed') {
    await saveStep(
      rt,
      tx,
      {
        status: 'confirmed',
        statusReason: null,
        confirmedAt: new Date(),
        hash: landed.hash,
        chainState: asJson({ ...at, accepted: true, landed: true, public: { ...state.public, ledger: landed.ledger } }),
      },
      null,
    );
    return;
  }
  await saveStep(
    rt,
    tx,
    {
      status: 'failed',
      statusReason: `included in ledger ${landed.ledger} but failed: ${explain(landed.reason)}`,
      hash: landed.hash,
      chainState: asJson({ ...at, accepted: true, landed: true, public: { ...state.public, ledger: landed.ledger, result_code: landed.code } }),
    },
    null,
  );
}

async function checkStep(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState): Promise<void> {
  const deadline = state.maxTime ?? tx.validUntil!.toISOString();
  // The current envelope first (the one most likely to land), then every earlier signing.
  const hashes = [state.hash.toLowerCase(), ...signingsOf(tx, state).filter((h) => h !== state.hash.toLowerCase())];
  const look = await lookUpStellarTxs(c.rpc, hashes);
  if (look.landed) return recordLanded(rt, tx, state, look.landed);
  const deadlineSeconds = Math.floor(Date.parse(deadline) / 1000);
  if (look.latestLedgerCloseTime > deadlineSeconds && tx.nonce !== null) {
    // Not found is no proof by itself (the RPC keeps a limited history): when its number is used
    // on chain, find out by what first.
    const account = await c.rpc.getAccount(c.relayer.address);
    if (account && account.sequence >= tx.nonce) return reconcileSequence(rt, c, tx, state);
  }
  if (look.latestLedgerCloseTime > deadlineSeconds) {
    // Past the current envelope's time bound no ledger can include it, and every earlier signing
    // was at a number proven used by another transaction.
    await saveStep(
      rt,
      tx,
      {
        status: 'expired',
        statusReason: state.maxTime
          ? `not included before its time bound ${state.maxTime}`
          : `not included by valid_until ${deadline}; it has no time bound, so it could still be included later`,
      },
      null,
    );
    return;
  }
  const polls = state.polls + 1;
  // Nodes may drop queued transactions: send the same envelope again now and then. A node that
  // accepted it once may still hold it, so only a verdict on the sequence number or the time
  // bound changes anything; otherwise it is tracked until its time bound passes.
  if (polls % RESEND_EVERY === 0) {
    const outcome = await submitStellarTx(c.rpc, state.envelope);
    if (outcome.outcome === 'rejected' && (outcome.code === 'tx_bad_seq' || outcome.code === 'tx_too_late')) {
      return afterSend(rt, c, tx, { ...state, polls }, outcome);
    }
  }
  await saveStep(rt, tx, { chainState: asJson({ ...state, polls }) }, c.pollMs);
}

/** The first ledger worth searching for what used a sequence number: an hour before the transaction was accepted. */
function searchFrom(c: Ctx, tx: Transaction, latestLedger: number): number {
  const ledgers = Math.ceil((Date.now() - tx.createdAt.getTime() + 3_600_000) / Math.max(1, c.pollMs));
  return Math.max(1, latestLedger - ledgers);
}

/**
 * The network refused the envelope with tx_bad_seq. With the account's sequence S on chain (the
 * next valid one is S+1) and this transaction holding n, what used n is established on evidence
 * (attributeSequence), then nextSequenceMove decides:
 * - n <= S: n is used. When one of this transaction's signings used it, it landed. When the
 *   transaction found at n from the relayer's account is none of them, it takes a new number
 *   above both the counter and the chain. When nothing is found at n, nothing is re-sent: it keeps
 *   its number and is reported for a person to decide.
 * - n > S+1: a transaction below is missing. While one that may still land holds a number in
 *   between, wait for it; when none does (those rows ended without using theirs), move down to
 *   S+1, so the gap closes instead of every later transaction failing.
 */
async function reconcileSequence(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState): Promise<void> {
  const account = await c.rpc.getAccount(c.relayer.address);
  if (!account) {
    await saveStep(rt, tx, { status: 'failed', statusReason: `the relayer account ${c.relayer.address} does not exist on the network` }, null);
    return;
  }
  const chainSequence = account.sequence;
  const n = tx.nonce!;
  const signings = signingsOf(tx, state);
  let attribution: SequenceAttribution = { kind: 'unused' };
  let recorded: FoundAtSequence | null = null;
  if (n <= chainSequence) {
    const look = await lookUpStellarTxs(c.rpc, signings);
    if (look.landed) return recordLanded(rt, tx, state, look.landed);
    recorded = await findAtSequence(c.rpc, c.passphrase, {
      account: c.relayer.address,
      n,
      fromLedger: searchFrom(c, tx, look.latestLedger),
      oldestLedger: look.oldestLedger,
    });
    attribution = attributeSequence({ n, chainSequence, recorded, signings });
  }
  const counter = (await rt.prisma.relayer.findUnique({ where: { id: c.relayer.id }, select: { nextNonce: true } }))?.nextNonce ?? null;
  const openBelow =
    n > chainSequence + 1n &&
    (await rt.prisma.transaction.findMany({ where: { relayerId: c.relayer.id, nonce: { gt: chainSequence, lt: n } }, select: { status: true } })).some(
      (t) => !FINAL_STATUSES.has(t.status),
    );
  const move = nextSequenceMove({ n, chainSequence, attribution, counter, openBelow });
  const retry = () =>
    saveStep(rt, tx, { statusReason: state.held ? null : undefined, chainState: asJson({ ...state, accepted: false, held: undefined }) }, c.pollMs);
  switch (move.kind) {
    case 'landed':
      // Found by the search (getTransaction no longer knows it): its record there is the result.
      return recordFound(rt, tx, state, move.hash, recorded!);
    case 'hold':
      return hold(rt, c, tx, state, `${move.reason}; it is not sent again with another number without proof that it did not land`, n, chainSequence);
    case 'retry':
      await retry();
      return;
    case 'up':
      rt.log.info({ transactionId: tx.id, sequence: n.toString(), usedBy: move.usedBy }, 'stellar sequence number used by another transaction');
      return resequence(rt, c, tx, state, move.target, 'up', retry);
    case 'down':
      return resequence(rt, c, tx, state, move.target, 'down', retry);
  }
}

/** Keeps the transaction as it is and reports it: what used its sequence number is not known. */
async function hold(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState, why: string, n: bigint, chainSequence: bigint): Promise<void> {
  const reason = `${why}: left for a person to decide`;
  rt.log.warn(
    { transactionId: tx.id, relayerId: c.relayer.id, sequence: n.toString(), chainSequence: chainSequence.toString() },
    `stellar sequence number used by an unknown transaction: ${reason}`,
  );
  await saveStep(rt, tx, { statusReason: reason, chainState: asJson({ ...state, accepted: false, held: reason }) }, HOLD_MS);
}

/**
 * A fee bump the network refused because the inner transaction's sequence number (its source's,
 * not the relayer's) is not the next one. When that number is used on chain, what used it decides:
 * the inner transaction itself (in this or any other envelope) landed; another transaction means
 * it never can; nothing found proves nothing, so it is held and reported.
 */
async function reconcileForeignSequence(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState, refusal: string): Promise<void> {
  const { inner } = innerOf(state.envelope, c.passphrase);
  const n = BigInt(inner.sequence);
  const signings = signingsOf(tx, state);
  const look = await lookUpStellarTxs(c.rpc, signings);
  if (look.landed) return recordLanded(rt, tx, state, look.landed);
  const account = await c.rpc.getAccount(inner.source);
  const chainSequence = account?.sequence ?? 0n;
  const recorded =
    account && n <= chainSequence
      ? await findAtSequence(c.rpc, c.passphrase, {
          account: inner.source,
          n,
          fromLedger: searchFrom(c, tx, look.latestLedger),
          oldestLedger: look.oldestLedger,
        })
      : null;
  const a = attributeSequence({ n, chainSequence, recorded, signings: [...signings, inner.hash().toString('hex')] });
  switch (a.kind) {
    case 'ours':
      return recordFound(rt, tx, state, a.hash, recorded!);
    case 'unproven':
      return hold(rt, c, tx, state, `${a.reason} (the inner transaction's source ${inner.source})`, n, chainSequence);
    default:
      await saveStep(rt, tx, { status: 'failed', statusReason: `rejected by the network: ${explain(refusal)}` }, null);
  }
}

/**
 * Signs the transaction again at sequence `target` and moves it there. The number is taken first
 * (the counter, or the number given up by final rows below), then the row is saved under its
 * lease; a crash between leaves a number no row holds, a gap that closes like any other.
 */
async function resequence(
  rt: Runtime,
  c: Ctx,
  tx: Transaction,
  state: StellarState,
  target: bigint,
  direction: 'up' | 'down',
  retry: () => Promise<unknown>,
): Promise<void> {
  const n = tx.nonce!;
  if (Date.now() >= tx.validUntil!.getTime()) {
    await saveStep(
      rt,
      tx,
      {
        status: 'expired',
        statusReason: `${direction === 'up' ? `sequence number ${n} was used by another transaction` : `sequence number ${n} cannot be used before a gap below it closes`}, and valid_until has passed`,
      },
      null,
    );
    return;
  }
  let built: BuiltStellarTx;
  try {
    built = await build(c, readRequest(tx), tx.validUntil!, target);
  } catch (e) {
    if (!(e instanceof StellarRequestError)) throw e;
    await saveStep(rt, tx, { status: 'failed', statusReason: `could not be rebuilt with sequence number ${target}: ${e.message}` }, null);
    return;
  }
  rt.crash('stellar.resubmit.signed');
  const relayerId = c.relayer.id;
  if (direction === 'up') {
    const taken = await rt.prisma.$executeRaw`UPDATE relayers SET next_nonce = ${target + 1n} WHERE id = ${relayerId} AND COALESCE(next_nonce, 0) <= ${target}`;
    if (taken !== 1) return void (await retry());
  } else {
    // The rows at the target that ended without using it give it up (their records keep sequence_number).
    await freeNonceOfFinal(rt, relayerId, target);
  }
  rt.metrics.resubmissions.inc({ relayer_id: tx.relayerId });
  let saved: Transaction | null;
  try {
    saved = await saveStep(
      rt,
      tx,
      {
        nonce: target,
        hash: built.hash,
        hashes: [...tx.hashes, built.hash],
        statusReason: null,
        chainState: asJson(stateOf(c, built, 'resubmit', state.signings ?? [])),
      },
      0,
    );
  } catch (e) {
    // Another transaction took the number first: look again later.
    if (isUniqueViolation(e)) return void (await retry());
    throw e;
  }
  if (!saved) return;
  // When this one held the highest number, the counter comes down with it.
  if (direction === 'down') await rt.prisma.$executeRaw`UPDATE relayers SET next_nonce = ${n} WHERE id = ${relayerId} AND next_nonce = ${n + 1n}`;
  rt.log.info({ transactionId: tx.id, relayerId, from: n.toString(), to: target.toString() }, 'stellar sequence number reassigned');
}

export const stellarFamily: ChainFamily<'stellar'> = {
  async accept(rt, relayer, req) {
    if (req.network !== relayer.network) {
      throw invalid(`network: must be the relayer's network "${relayer.network}", got "${req.network}"`);
    }
    const c = contextOf(rt, relayer);
    try {
      const takesNonce = needsRelayerSequence(req, c.passphrase);
      const deadline = deadlineOf(req, c.policy, new Date());
      if (deadline.getTime() <= Date.now()) throw new StellarRequestError('valid_until: must be in the future', 'valid_until');
      // A dry run of what the pipeline will build: chain-level checks of the request, the fee
      // against max_fee and the policy, simulation of contract calls.
      const built = await build(c, req, deadline, takesNonce ? (relayer.nextNonce ?? 1n) : undefined);
      const { inner } = innerOf(built.envelopeXdr, c.passphrase);
      return {
        data: { from: relayer.address, ...recipientOf(inner), validUntil: built.validUntil ? new Date(built.validUntil) : deadline },
        request: storeRequest(req),
        takesNonce,
      };
    } catch (e) {
      if (e instanceof StellarRequestError) throw invalid(e.message);
      // The node refused to simulate it: the request, not the service, is at fault.
      if (e instanceof JsonRpcError) throw invalid(`the network's RPC refused the transaction: ${e.message}`);
      throw e;
    }
  },

  async chainNonce(rt, relayer) {
    const account = await contextOf(rt, relayer).rpc.getAccount(relayer.address);
    if (!account) throw invalid(`the relayer account ${relayer.address} does not exist on the network`);
    return account.sequence + 1n;
  },

  async balance(rt, relayer) {
    const account = await contextOf(rt, relayer).rpc.getAccount(relayer.address);
    return { balance: account?.balance ?? 0n, unit: 'stroops' };
  },

  async process(rt, tx) {
    const relayer = await relayerOfStep(rt, tx);
    if (!relayer) return;
    const c = contextOf(rt, relayer);
    const state = tx.chainState as unknown as StellarState | null;
    if (!state?.envelope) return signStep(rt, c, tx);
    if (state.held) return tx.nonce === null ? reconcileForeignSequence(rt, c, tx, state, 'tx_bad_seq') : reconcileSequence(rt, c, tx, state);
    if (!state.accepted) return sendStep(rt, c, tx, state);
    return checkStep(rt, c, tx, state);
  },

  async checkRelayer(rt, relayer) {
    const c = contextForCheck(() => contextOf(rt, relayer));
    let passphrase: string;
    let account: Awaited<ReturnType<StellarRpc['getAccount']>>;
    try {
      ({ passphrase } = await c.rpc.getNetwork());
      account = await c.rpc.getAccount(relayer.address);
    } catch (e) {
      throw new RelayerCheckError('RpcUnavailable', `the Stellar RPC of network "${relayer.network}" does not answer: ${(e as Error).message}`);
    }
    if (passphrase !== c.passphrase) {
      throw new RelayerCheckError(
        'NetworkMismatch',
        `the RPC serves the network "${passphrase}", but network "${relayer.network}" has passphrase "${c.passphrase}"`,
      );
    }
    if (!account) throw new RelayerCheckError('AccountNotFound', `the relayer account ${relayer.address} does not exist on network "${relayer.network}"`);
    // The account may have been used elsewhere meanwhile: never hand out a number the chain has passed.
    const next = account.sequence + 1n;
    await rt.prisma.$executeRaw`UPDATE relayers SET next_nonce = ${next} WHERE id = ${relayer.id} AND next_nonce < ${next}`;
  },
};
