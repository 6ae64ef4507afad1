// The Stellar chain family: accepts shape C requests and works each transaction through
// sign -> send -> track, with the relayer's sequence numbers allocated like EVM nonces.
import { CustodyError } from '../../signers/custody.js';
import { Address, FeeBumpTransaction, TransactionBuilder, type Memo, type MemoType, type Transaction as StellarTx } from '@stellar/stellar-base';
import type { Network } from '../../core/settings.js';
import { signerKey } from '../../core/signers.js';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import { freeNonceOfFinal } from '../../core/transactions/store.js';
import { invalid, unavailable } from '../../core/domain-error.js';
import { RelayerCheckError } from '../../core/domain-error.js';
import { parseJson, stringifyJson } from '../../lib/json.js';
import type { ChainFamily, Steps } from '../../core/transactions/pipeline.js';
import { DEFAULT_VALIDITY_MS } from '../../core/family-spec.js';
import type { Runtime } from '../../core/runtime.js';
import { findNetwork } from '../../core/networks.js';
import type { StellarSigner } from '../../signers/index.js';
import { buildStellarTransaction, needsRelayerSequence, type BuiltStellarTx } from './build.js';
import { StellarRequestError } from './request-error.js';
import { stellarPolicySchema, type StellarPolicy } from './policy.js';
import { parseStellarRequest, type StellarTransactionRequest } from './request.js';
import { JsonRpcError, RpcUnavailableError } from '../jsonrpc.js';
import { createStellarRpc, type StellarRpc } from './rpc-client.js';
import {
  checkOrder,
  decideStellar,
  FINAL,
  recordStellar,
  signingsOf,
  stateOf as chainStateOf,
  type Landed,
  type Reconciliation,
  type StellarDecision,
  type StellarEffect,
  type StellarOutcome,
  type StellarPace,
  type StellarState,
} from './decide.js';
import { findAtSequence, type FoundAtSequence } from './sequence.js';
import { checkFeePaid } from './gasless.js';
import { prepareSorobanSubmission } from './gasless-soroban.js';
import { rpcObserver } from '../rpc-observer.js';
import { describeTransactionResult, lookUpStellarTxs, submitStellarTx, type StellarLookUp } from './status.js';
import { clientCache, contextForCheck, endpointsOf, long } from '../plumbing.js';

export interface Ctx {
  rt: Runtime;
  relayer: Relayer;
  network: Network;
  passphrase: string;
  signer: StellarSigner;
  policy: StellarPolicy;
  rpc: StellarRpc;
  /** How often a sent transaction is looked up: about one ledger. */
  pollMs: number;
}

const DEFAULT_LEDGER_MS = 5_000;

const rpcFor = clientCache('stellar rpc clients', (endpoints, rt) =>
  createStellarRpc(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000, observe: rpcObserver(rt, 'stellar', endpoints) }),
);

export function contextOf(rt: Runtime, relayer: Relayer): Ctx {
  const network = findNetwork(rt, 'stellar', relayer.network);
  if (!network?.passphrase) throw new Error(`stellar network "${relayer.network}" of relayer ${relayer.id} is not configured`);
  const signer = rt.signers.loaded.get(signerKey(relayer.signerId, 'stellar'));
  if (signer?.kind !== 'stellar') throw new Error(`relayer ${relayer.id} has no stellar signer`);
  return {
    rt,
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

/** Builds and signs the transaction; a dry run (`unsigned`) checks everything but asks the signer nothing. */
function build(c: Ctx, req: StellarTransactionRequest, validUntil: Date, sequence: bigint | undefined, unsigned = false): Promise<BuiltStellarTx> {
  const source = unsigned ? { kind: 'stellar' as const, address: c.signer.address, sign: async () => null } : c.signer;
  return buildStellarTransaction(
    { ...req, valid_until: validUntil.toISOString() },
    { source, networkPassphrase: c.passphrase, rpc: c.rpc, policy: c.policy, sequence },
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

/** When the relayer stops trying: valid_until, else the policy's timeout_seconds, else 8 hours. */
function deadlineOf(req: StellarTransactionRequest, policy: StellarPolicy, now: Date): Date {
  if (req.valid_until) return new Date(req.valid_until);
  if (policy.timeout_seconds) return new Date(now.getTime() + policy.timeout_seconds * 1000);
  return new Date(now.getTime() + DEFAULT_VALIDITY_MS);
}

/** The first ledger worth searching for what used a sequence number: an hour before the transaction was accepted. */
function searchFrom(c: Ctx, tx: Transaction, latestLedger: number): number {
  const ledgers = Math.ceil((Date.now() - tx.createdAt.getTime() + 3_600_000) / Math.max(1, c.pollMs));
  return Math.max(1, latestLedger - ledgers);
}

const landedOf = (r: FoundAtSequence): Landed => {
  if (r.status === 'SUCCESS') return { hash: r.hash, status: 'confirmed', ledger: r.ledger };
  const { code, reason } = r.resultXdr ? describeTransactionResult(r.resultXdr) : { code: 'unknown', reason: 'failed' };
  return { hash: r.hash, status: 'failed', ledger: r.ledger, code, reason };
};

/** Reads what reconciling the row's sequence number needs (see reconciled in decide.ts). */
async function reconcile(c: Ctx, tx: Transaction, state: StellarState, which: 'own' | 'foreign'): Promise<Reconciliation> {
  const signings = signingsOf(tx, state);
  const search = async (account: string, n: bigint, look: StellarLookUp) => {
    const found = await findAtSequence(c.rpc, c.passphrase, { account, n, fromLedger: searchFrom(c, tx, look.latestLedger), oldestLedger: look.oldestLedger });
    return found && { ...found, landed: landedOf(found) };
  };
  const none = { landed: null, recorded: null, counter: null, openBelow: false };
  if (which === 'foreign') {
    const { inner } = innerOf(state.envelope, c.passphrase);
    const n = BigInt(inner.sequence);
    const all = [...signings, inner.hash().toString('hex')];
    const look = await lookUpStellarTxs(c.rpc, signings);
    if (look.landed) return { ...none, n, chainSequence: null, signings: all, landed: look.landed, foreign: inner.source };
    const account = await c.rpc.getAccount(inner.source);
    const chainSequence = account?.sequence ?? 0n;
    const recorded = account && n <= chainSequence ? await search(inner.source, n, look) : null;
    return { ...none, n, chainSequence, signings: all, recorded, foreign: inner.source };
  }
  const n = tx.nonce!;
  const account = await c.rpc.getAccount(c.relayer.address);
  if (!account) return { ...none, n, chainSequence: null, signings };
  const chainSequence = account.sequence;
  let recorded: Reconciliation['recorded'] = null;
  if (n <= chainSequence) {
    const look = await lookUpStellarTxs(c.rpc, signings);
    if (look.landed) return { ...none, n, chainSequence, signings, landed: look.landed };
    recorded = await search(c.relayer.address, n, look);
  }
  const counter = (await c.rt.db.prisma.relayer.findUnique({ where: { id: c.relayer.id }, select: { nextNonce: true } }))?.nextNonce ?? null;
  const openBelow =
    n > chainSequence + 1n &&
    (await c.rt.db.prisma.transaction.findMany({ where: { relayerId: c.relayer.id, nonce: { gt: chainSequence, lt: n } }, select: { status: true } })).some(
      (t) => !FINAL.includes(t.status),
    );
  return { n, chainSequence, landed: null, recorded, signings, counter, openBelow };
}

/** What a step starts from: a check of an accepted envelope, or a held one reconciled again. */
async function observeRow(c: Ctx, tx: Transaction, state: StellarState) {
  if (state.held) return { reconciled: await reconcile(c, tx, state, tx.nonce === null ? 'foreign' : 'own') };
  const looked = await lookUpStellarTxs(c.rpc, checkOrder(tx, state));
  const deadline = Math.floor(Date.parse(state.maxTime ?? tx.validUntil!.toISOString()) / 1000);
  const past = !looked.landed && looked.latestLedgerCloseTime > deadline && tx.nonce !== null;
  const chainSequence = past ? ((await c.rpc.getAccount(c.relayer.address))?.sequence ?? null) : null;
  return { looked, chainSequence };
}

async function perform(c: Ctx, e: StellarEffect, tx: Transaction, state: StellarState | null): Promise<StellarOutcome> {
  if (e.stage === 'sign') {
    try {
      const built = await build(c, readRequest(tx), tx.validUntil!, e.sequence);
      return { signed: true, state: stateOf(c, built, e.point, e.move ? [] : undefined) };
    } catch (err) {
      if (!(err instanceof StellarRequestError)) throw err;
      return { signed: false, refused: err.message, expired: err.field === 'valid_until' || /time bounds expired/.test(err.message) };
    }
  }
  if ('take' in e) {
    const { target, direction } = e.take;
    if (direction === 'up') {
      const taken = await c.rt.db.prisma
        .$executeRaw`UPDATE relayers SET next_nonce = ${target + 1n} WHERE id = ${c.relayer.id} AND COALESCE(next_nonce, 0) <= ${target}`;
      return { taken: taken === 1 };
    }
    // The rows at the target that ended without using it give it up (their records keep sequence_number).
    await freeNonceOfFinal(c.rt, c.relayer.id, target);
    return { taken: true };
  }
  if ('look' in e) return { looked: await lookUpStellarTxs(c.rpc, e.look) };
  if ('reconcile' in e) return { reconciled: await reconcile(c, tx, state!, e.reconcile) };
  if ('lower' in e) {
    await c.rt.db.prisma.$executeRaw`UPDATE relayers SET next_nonce = ${e.lower} WHERE id = ${c.relayer.id} AND next_nonce = ${e.lower + 1n}`;
    return { lowered: true };
  }
  return { submitted: await submitStellarTx(c.rpc, e.envelope) };
}

/** Runs `fn` for each item at once; one that throws gives `{ error }` (logged), not the others' failure. */
function each<T, R>(c: Ctx, items: T[], fn: (item: T) => Promise<R>): Promise<(R | { error: string; reason?: string })[]> {
  return Promise.all(
    items.map((item) =>
      fn(item).catch((err: Error) => {
        c.rt.log.error({ err, relayerId: c.relayer.id }, 'stellar step effect failed; retrying later');
        return { error: err.message, reason: err instanceof CustodyError ? `could not be signed: ${err.message}` : undefined };
      }),
    ),
  );
}

type Seen = Awaited<ReturnType<typeof observeRow>> | { error: string };

const steps: Steps<Ctx, { pace: StellarPace; seen: Map<string, Seen> }, StellarEffect, StellarOutcome, StellarDecision> = {
  context: contextOf,
  async observe(c, rows) {
    const open = rows.flatMap((tx) => {
      const state = chainStateOf(tx);
      return !FINAL.includes(tx.status) && state?.envelope && (state.held || state.accepted) ? [{ tx, state }] : [];
    });
    const seen = await each(c, open, ({ tx, state }) => observeRow(c, tx, state));
    return { pace: { pollMs: c.pollMs }, seen: new Map(open.map(({ tx }, i) => [tx.id, seen[i]])) };
  },
  decide: (rows, { pace, seen }, now) => rows.map((tx) => decideStellar(tx, seen.get(tx.id), pace, now)),
  perform: (c, todo) => each(c, todo, ({ effect, d }) => perform(c, effect, d.tx, d.state)),
  record: recordStellar,
  settled(c, ds) {
    for (const d of ds) if (d.note) c.rt.log[d.note.level]({ ...d.note.fields, transactionId: d.tx.id, relayerId: c.relayer.id }, d.note.msg);
  },
};

export const stellarFamily: ChainFamily<'stellar'> = {
  async accept(rt, relayer, req) {
    if (req.network !== relayer.network) {
      throw invalid(`network: must be the relayer's network "${relayer.network}", got "${req.network}"`);
    }
    const c = contextOf(rt, relayer);
    try {
      // A gasless Soroban call: checked, the user's signed entry put in; then sent as the relayer's own.
      let onceKey: string | undefined;
      if (req.signed_auth_entry !== undefined)
        ({ req, once: onceKey } = await prepareSorobanSubmission(c, { ...req, signed_auth_entry: req.signed_auth_entry }));
      const takesNonce = needsRelayerSequence(req, c.passphrase);
      if (c.policy.fee_payment_strategy === 'user' && req.fee_bump && req.transaction_xdr !== undefined) {
        const tx = TransactionBuilder.fromXDR(req.transaction_xdr, c.passphrase);
        if (!(tx instanceof FeeBumpTransaction)) await checkFeePaid(c, tx);
      }
      const deadline = deadlineOf(req, c.policy, new Date());
      if (deadline.getTime() <= Date.now()) throw new StellarRequestError('valid_until: must be in the future', 'valid_until');
      // A dry run of what the pipeline will build: chain-level checks of the request, the fee
      // against max_fee and the policy, simulation of contract calls.
      const built = await build(c, req, deadline, takesNonce ? (relayer.nextNonce ?? 1n) : undefined, true);
      const { inner } = innerOf(built.envelopeXdr, c.passphrase);
      return {
        data: { from: relayer.address, ...recipientOf(inner), validUntil: built.validUntil ? new Date(built.validUntil) : deadline },
        request: storeRequest(req),
        takesNonce,
        ...(onceKey ? { onceKey } : {}),
      };
    } catch (e) {
      if (e instanceof StellarRequestError) throw invalid(e.message);
      // The node refused to simulate it: the request, not the service, is at fault.
      if (e instanceof JsonRpcError) throw invalid(`the network's RPC refused the transaction: ${e.message}`);
      if (e instanceof RpcUnavailableError) throw unavailable(`the network's Stellar RPC does not answer: ${e.message}`);
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

  steps,

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
    await rt.db.prisma.$executeRaw`UPDATE relayers SET next_nonce = ${next} WHERE id = ${relayer.id} AND next_nonce < ${next}`;
  },
};
