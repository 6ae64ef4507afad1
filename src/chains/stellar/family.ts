// The Stellar chain family: accepts shape C requests and works each transaction through
// sign -> send -> track, with the relayer's sequence numbers allocated like EVM nonces.
import { Address, FeeBumpTransaction, TransactionBuilder, type Memo, type MemoType, type Transaction as StellarTx } from '@stellar/stellar-sdk';
import type { Network } from '../../config/load.js';
import { signerKey } from '../../config/signers.js';
import { Prisma, type Relayer, type Transaction } from '../../generated/prisma/client.js';
import { invalid } from '../../core/errors.js';
import { RelayerCheckError } from '../../core/errors.js';
import { parseJson, stringifyJson } from '../../lib/json.js';
import type { ChainFamily } from '../../modules/transactions/family.js';
import { DEFAULT_VALIDITY_MS } from '../../core/family.js';
import { findNetwork, type Runtime } from '../../runtime.js';
import type { StellarSigner } from '../../signers/index.js';
import { buildStellarTransaction, needsRelayerSequence, type BuiltStellarTx } from './build.js';
import { StellarRequestError } from './errors.js';
import { stellarPolicySchema, type StellarPolicy } from './policy.js';
import { parseStellarRequest, type StellarTransactionRequest } from './request.js';
import { JsonRpcError } from '../jsonrpc.js';
import { createStellarRpc, type StellarRpc } from './rpc.js';
import { checkStellarTx, submitStellarTx, type StellarSubmitOutcome } from './status.js';
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
  /** Published as the record's network fields (REST, webhooks, GraphQL networkData). */
  public: Record<string, unknown>;
}

const DEFAULT_LEDGER_MS = 5_000;
const RESEND_EVERY = 5;

const rpcFor = clientCache('stellar rpc clients', (endpoints) => createStellarRpc(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000 }));

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

function stateOf(c: Ctx, built: BuiltStellarTx): StellarState {
  const { outer, inner } = innerOf(built.envelopeXdr, c.passphrase);
  return {
    envelope: built.envelopeXdr,
    hash: built.hash,
    sequence: built.sequence.toString(),
    maxTime: built.validUntil,
    accepted: false,
    polls: 0,
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

const asJson = (state: StellarState) => state as unknown as Prisma.InputJsonObject;

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
  const state = stateOf(c, built);
  await saveStep(rt, tx, { status: 'sent', hash: built.hash, hashes: { push: built.hash }, chainState: asJson(state) }, 0);
}

// Past its time bound the network answers tx_too_late (expired); the ledger's clock decides, not ours.
async function sendStep(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState): Promise<void> {
  const outcome = await submitStellarTx(c.rpc, state.envelope);
  await afterSend(rt, c, tx, state, outcome);
}

async function afterSend(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState, outcome: StellarSubmitOutcome): Promise<void> {
  switch (outcome.outcome) {
    case 'submitted':
      await saveStep(
        rt,
        tx,
        { status: 'submitted', sentAt: tx.sentAt ?? new Date(), chainState: asJson({ ...state, accepted: true, polls: state.accepted ? state.polls : 0 }) },
        c.pollMs,
      );
      return;
    case 'retry':
      await saveStep(rt, tx, {}, c.pollMs);
      return;
    case 'rejected':
      if (outcome.code === 'tx_bad_seq' && tx.nonce !== null) return reconcileSequence(rt, c, tx, state);
      if (outcome.code === 'tx_too_late') {
        await saveStep(rt, tx, { status: 'expired', statusReason: `not included before its time bound: ${explain(outcome.reason)}` }, null);
        return;
      }
      await saveStep(rt, tx, { status: 'failed', statusReason: `rejected by the network: ${explain(outcome.reason)}` }, null);
  }
}

async function checkStep(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState): Promise<void> {
  const deadline = state.maxTime ?? tx.validUntil!.toISOString();
  const result = await checkStellarTx(c.rpc, state.hash, { validUntil: deadline });
  switch (result.status) {
    case 'confirmed':
      await saveStep(
        rt,
        tx,
        { status: 'confirmed', statusReason: null, confirmedAt: new Date(), chainState: asJson({ ...state, landed: true, public: { ...state.public, ledger: result.ledger } }) },
        null,
      );
      return;
    case 'failed':
      await saveStep(
        rt,
        tx,
        {
          status: 'failed',
          statusReason: `included in ledger ${result.ledger} but failed: ${explain(result.reason)}`,
          chainState: asJson({ ...state, landed: true, public: { ...state.public, ledger: result.ledger, result_code: result.code } }),
        },
        null,
      );
      return;
    case 'expired':
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
    case 'pending': {
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
  }
}

/**
 * The network refused the envelope with tx_bad_seq. With the account's sequence S on chain
 * (the next valid one is S+1) and this transaction holding n:
 * - n <= S: n was used by another transaction of the account (outside this service): take a new
 *   number above both the counter and the chain.
 * - n > S+1: a transaction below is missing. While one that may still land holds a number in
 *   between, wait for it; when none does (those rows ended without using theirs), move down to S+1,
 *   so the gap closes instead of every later transaction failing.
 */
async function reconcileSequence(rt: Runtime, c: Ctx, tx: Transaction, state: StellarState): Promise<void> {
  const account = await c.rpc.getAccount(c.relayer.address);
  if (!account) {
    await saveStep(rt, tx, { status: 'failed', statusReason: `the relayer account ${c.relayer.address} does not exist on the network` }, null);
    return;
  }
  const chainSeq = account.sequence;
  const n = tx.nonce!;
  const retry = () => saveStep(rt, tx, { chainState: asJson({ ...state, accepted: false }) }, c.pollMs);
  if (n <= chainSeq) {
    const landed = await checkStellarTx(c.rpc, state.hash);
    if (landed.status === 'confirmed' || landed.status === 'failed') {
      await saveStep(rt, tx, { status: 'submitted', sentAt: tx.sentAt ?? new Date(), chainState: asJson({ ...state, accepted: true }) }, 0);
      return;
    }
    const counter = await rt.prisma.relayer.findUnique({ where: { id: c.relayer.id }, select: { nextNonce: true } });
    const target = counter?.nextNonce != null && counter.nextNonce > chainSeq + 1n ? counter.nextNonce : chainSeq + 1n;
    return resequence(rt, c, tx, target, 'up', retry);
  }
  if (n === chainSeq + 1n) return void (await retry());
  const between = await rt.prisma.transaction.findMany({
    where: { relayerId: c.relayer.id, nonce: { gt: chainSeq, lt: n } },
    select: { status: true },
  });
  if (between.some((t) => !FINAL_STATUSES.has(t.status))) return void (await retry());
  return resequence(rt, c, tx, chainSeq + 1n, 'down', retry);
}

class Lost extends Error {}

/** Signs the transaction again at sequence `target` and switches it there in one database transaction. */
async function resequence(rt: Runtime, c: Ctx, tx: Transaction, target: bigint, direction: 'up' | 'down', retry: () => Promise<unknown>): Promise<void> {
  const n = tx.nonce!;
  let built: BuiltStellarTx;
  try {
    built = await build(c, readRequest(tx), tx.validUntil!, target);
  } catch (e) {
    if (!(e instanceof StellarRequestError)) throw e;
    await saveStep(rt, tx, { status: 'failed', statusReason: `could not be rebuilt with sequence number ${target}: ${e.message}` }, null);
    return;
  }
  const relayerId = c.relayer.id;
  try {
    await rt.prisma.$transaction(async (db) => {
      if (direction === 'up') {
        const taken = await db.$executeRaw`UPDATE relayers SET next_nonce = ${target + 1n} WHERE id = ${relayerId} AND COALESCE(next_nonce, 0) <= ${target}`;
        if (taken !== 1) throw new Lost();
      } else {
        // The rows below that ended without using their numbers give them up (their records keep
        // sequence_number); when this one held the highest number, the counter comes down with it.
        await db.$executeRaw`UPDATE transactions SET nonce = NULL
          WHERE relayer_id = ${relayerId} AND nonce = ${target} AND status IN ('confirmed', 'failed', 'expired', 'canceled')`;
        await db.$executeRaw`UPDATE relayers SET next_nonce = ${n} WHERE id = ${relayerId} AND next_nonce = ${n + 1n}`;
      }
      const moved = await db.transaction.updateMany({
        where: { id: tx.id, nonce: n, status: tx.status },
        data: {
          nonce: target,
          hash: built.hash,
          hashes: { push: built.hash },
          chainState: asJson(stateOf(c, built)),
          dueAt: new Date(),
          leaseOwner: null,
          leaseUntil: null,
        },
      });
      if (moved.count !== 1) throw new Lost();
    });
  } catch (e) {
    // Another transaction took the number first: look again later.
    if (e instanceof Lost || isUniqueViolation(e)) return void (await retry());
    throw e;
  }
  rt.log.info({ transactionId: tx.id, relayerId, from: n.toString(), to: target.toString() }, 'stellar sequence number reassigned');
  rt.wake();
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

  async process(rt, tx) {
    const relayer = await relayerOfStep(rt, tx);
    if (!relayer) return;
    const c = contextOf(rt, relayer);
    const state = tx.chainState as unknown as StellarState | null;
    if (!state?.envelope) return signStep(rt, c, tx);
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
      throw new RelayerCheckError('NetworkMismatch', `the RPC serves the network "${passphrase}", but network "${relayer.network}" has passphrase "${c.passphrase}"`);
    }
    if (!account) throw new RelayerCheckError('AccountNotFound', `the relayer account ${relayer.address} does not exist on network "${relayer.network}"`);
    // The account may have been used elsewhere meanwhile: never hand out a number the chain has passed.
    const next = account.sequence + 1n;
    await rt.prisma.$executeRaw`UPDATE relayers SET next_nonce = ${next} WHERE id = ${relayer.id} AND next_nonce < ${next}`;
  },
};
