// The Solana chain family: accepts shape B requests (a transaction whose fee payer is the
// relayer) and works each through sign -> send -> track, with a fresh blockhash when one expires.
import type { Network } from '../../config/load.js';
import { signerKey } from '../../config/signers.js';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import { invalid } from '../../core/errors.js';
import { RelayerCheckError } from '../../core/errors.js';
import type { ChainFamily } from '../../core/transactions/family.js';
import type { TransactionPatch } from '../../core/transactions/store.js';
import { DEFAULT_VALIDITY_MS } from '../../core/family.js';
import { findNetwork, type Runtime } from '../../core/runtime.js';
import type { SolanaSigner } from '../../signers/index.js';
import { rpcObserver } from '../../metrics/rpc.js';
import { clientCache, contextForCheck, endpointsOf, long, relayerOfStep, saveStep } from '../step.js';
import { SolanaRequestError } from './errors.js';
import { solanaPolicySchema, type SolanaPolicy } from './policy.js';
import { prepareSolanaTx, SolanaBlockhashExpiredError, type PreparedSolanaTx, type SolanaTransactionRequest } from './prepare.js';
import { createSolanaRpc, JsonRpcError, type SolanaRpc } from './rpc.js';
import { solanaVerdict, type SolanaSigning, type SolanaVerdict } from './decide.js';
import { submitSolanaTx } from './status.js';

interface Ctx {
  relayer: Relayer;
  network: Network;
  signer: SolanaSigner;
  policy: SolanaPolicy;
  rpc: SolanaRpc;
  /** How often a sent transaction is looked up (and sent again while unseen). */
  pollMs: number;
}

/** What the pipeline keeps about the transaction (transactions.chain_state). */
interface SolanaState {
  /** The current signed wire transaction, written before it is sent so that a restart sends the same bytes. */
  wire: string;
  signature: string;
  blockhash: string;
  /** Past this block height it can no longer land; null for durable-nonce transactions. */
  lastValidBlockHeight: string | null;
  /** A node accepted this wire transaction. */
  accepted: boolean;
  /** Which signing path made the current wire transaction (names its crash points). */
  kind?: 'send' | 'resign';
  /**
   * Every signing ever made of this transaction, oldest first, each written before it was sent:
   * any of them may be the one on chain, so all are looked up.
   */
  signings?: SolanaSigning[];
  /** Published as the record's network fields (REST, webhooks, GraphQL networkData). */
  public: Record<string, unknown>;
}

const DEFAULT_SLOT_MS = 400;

const rpcFor = clientCache('solana rpc clients', (endpoints, rt) =>
  createSolanaRpc(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000, observe: rpcObserver(rt, 'solana', endpoints) }),
);

function contextOf(rt: Runtime, relayer: Relayer): Ctx {
  const network = findNetwork(rt, 'solana', relayer.network);
  if (!network) throw new Error(`solana network "${relayer.network}" of relayer ${relayer.id} is not configured`);
  const signer = rt.signers.get(signerKey(relayer.signerId, 'solana'));
  if (signer?.kind !== 'solana') throw new Error(`relayer ${relayer.id} has no solana signer`);
  return {
    relayer,
    network,
    signer,
    policy: solanaPolicySchema.parse(relayer.policies ?? {}),
    rpc: rpcFor(rt, endpointsOf(relayer, network.rpcUrls)),
    pollMs: network.averageBlocktimeMs ?? DEFAULT_SLOT_MS,
  };
}

const readRequest = (tx: Transaction) => tx.request as unknown as SolanaTransactionRequest;
const asJson = (state: SolanaState) => state as unknown as TransactionPatch['chainState'];

function prepare(c: Ctx, req: SolanaTransactionRequest, resubmit = false): Promise<PreparedSolanaTx> {
  return prepareSolanaTx(req, { signer: c.signer, rpc: c.rpc, policy: c.policy, resubmit });
}

const signingOf = (p: PreparedSolanaTx): SolanaSigning => ({
  signature: p.signature,
  blockhash: p.blockhash,
  lastValidBlockHeight: p.lastValidBlockHeight?.toString() ?? null,
});

/**
 * Every signing of the transaction: those chain_state lists, plus any signature the record lists
 * (hashes) that chain_state does not (rows written before signings were kept).
 */
function signingsOf(tx: Transaction, state: SolanaState): SolanaSigning[] {
  const list = state.signings ? [...state.signings] : [];
  const known = new Set(list.map((s) => s.signature));
  const current: SolanaSigning = { signature: state.signature, blockhash: state.blockhash, lastValidBlockHeight: state.lastValidBlockHeight };
  for (const sig of tx.hashes) {
    if (known.has(sig)) continue;
    known.add(sig);
    // Its blockhash is unknown: it expired no later than the current one (it was replaced by it).
    list.push(sig === current.signature ? current : { ...current, signature: sig });
  }
  if (!known.has(current.signature)) list.push(current);
  return list;
}

function stateOf(prepared: PreparedSolanaTx, kind: 'send' | 'resign', earlier: SolanaSigning[]): SolanaState {
  return {
    wire: prepared.wireBase64,
    signature: prepared.signature,
    blockhash: prepared.blockhash,
    lastValidBlockHeight: prepared.lastValidBlockHeight?.toString() ?? null,
    accepted: false,
    kind,
    signings: [...earlier, signingOf(prepared)],
    public: {
      signature: prepared.signature,
      recent_blockhash: prepared.blockhash,
      fee: prepared.fee === undefined ? null : long(prepared.fee),
      transaction: prepared.wireBase64,
    },
  };
}

/** What the chain says about every signing of the transaction (the height first, so "gone" holds on every fork). */
async function lookUp(c: Ctx, signings: SolanaSigning[]): Promise<SolanaVerdict> {
  const needsHeight = signings.every((s) => s.lastValidBlockHeight !== null);
  const height = needsHeight ? await c.rpc.getBlockHeight('finalized') : null;
  const statuses = await c.rpc.getSignatureStatuses(
    signings.map((s) => s.signature),
    { searchTransactionHistory: true },
  );
  return solanaVerdict(signings, statuses, height);
}

/** Records the signing found on chain as the transaction's, with the status it has there. */
async function recordLanded(rt: Runtime, c: Ctx, tx: Transaction, state: SolanaState, v: Extract<SolanaVerdict, { kind: 'landed' }>): Promise<void> {
  const publicFields = { ...state.public, signature: v.signature, slot: v.slot };
  const chainState = asJson({ ...state, accepted: true, public: publicFields });
  const landed = { hash: v.signature, chainState };
  switch (v.status) {
    case 'mined':
      await saveStep(rt, tx, { ...landed, status: 'mined', statusReason: null }, c.pollMs);
      return;
    case 'confirmed':
      await saveStep(rt, tx, { ...landed, status: 'confirmed', statusReason: null, confirmedAt: new Date() }, null);
      return;
    case 'failed':
      await saveStep(rt, tx, { ...landed, status: 'failed', statusReason: `included in slot ${v.slot} but failed: ${v.reason}` }, null);
  }
}

/**
 * Signs it again with a fresh blockhash. Only called on a 'gone' verdict: no signing is on chain
 * and none can land any more. Ends expired past valid_until.
 */
async function resign(rt: Runtime, c: Ctx, tx: Transaction, _state: SolanaState, signings: SolanaSigning[], why: string): Promise<void> {
  if (Date.now() >= tx.validUntil!.getTime()) {
    await saveStep(rt, tx, { status: 'expired', statusReason: `${why}, and valid_until has passed` }, null);
    return;
  }
  let prepared: PreparedSolanaTx;
  try {
    prepared = await prepare(c, readRequest(tx), true);
  } catch (e) {
    if (e instanceof SolanaBlockhashExpiredError) {
      await saveStep(rt, tx, { status: 'expired', statusReason: `${why}; other signers signed it, so it cannot be signed again with a fresh one` }, null);
      return;
    }
    if (e instanceof SolanaRequestError) {
      await saveStep(rt, tx, { status: 'failed', statusReason: `could not be signed again: ${e.message}` }, null);
      return;
    }
    throw e;
  }
  rt.crash('solana.resign.signed');
  rt.metrics.resubmissions.inc({ relayer_id: tx.relayerId });
  const next = stateOf(prepared, 'resign', signings);
  await saveStep(rt, tx, { hash: prepared.signature, hashes: [...tx.hashes, prepared.signature], chainState: asJson(next) }, 0);
}

async function signStep(rt: Runtime, c: Ctx, tx: Transaction): Promise<void> {
  if (Date.now() >= tx.validUntil!.getTime()) {
    await saveStep(rt, tx, { status: 'expired', statusReason: 'valid_until passed before the transaction was sent' }, null);
    return;
  }
  let prepared: PreparedSolanaTx;
  try {
    prepared = await prepare(c, readRequest(tx));
  } catch (e) {
    if (e instanceof SolanaBlockhashExpiredError) {
      await saveStep(
        rt,
        tx,
        { status: 'expired', statusReason: 'its blockhash expired before it was sent; other signers signed it, so it cannot be given a fresh one' },
        null,
      );
      return;
    }
    if (e instanceof SolanaRequestError) {
      await saveStep(rt, tx, { status: 'failed', statusReason: `could not be signed: ${e.message}` }, null);
      return;
    }
    throw e;
  }
  rt.crash('solana.send.signed');
  await saveStep(
    rt,
    tx,
    { status: 'sent', hash: prepared.signature, hashes: [...tx.hashes, prepared.signature], chainState: asJson(stateOf(prepared, 'send', [])) },
    0,
  );
}

/**
 * Broadcasts the wire transaction written by the signing step. An answer that never comes (the
 * call throws: timeout, reset, 5xx) leaves it unaccepted, so it is sent again later: it may have
 * been sent, and the same bytes can land at most once.
 */
async function sendStep(rt: Runtime, c: Ctx, tx: Transaction, state: SolanaState): Promise<void> {
  const kind = state.kind ?? 'send';
  rt.crash(`solana.${kind}.saved`);
  const outcome = await submitSolanaTx(c.rpc, state.wire);
  rt.crash(`solana.${kind}.broadcast`);
  switch (outcome.outcome) {
    case 'submitted':
      await saveStep(rt, tx, { status: 'submitted', chainState: asJson({ ...state, accepted: true }) }, c.pollMs);
      return;
    case 'expired':
    case 'rejected': {
      // An earlier signing, or an earlier broadcast of this one whose answer was lost, may be on
      // chain: look before deciding anything.
      const signings = signingsOf(tx, state);
      const v = await lookUp(c, signings);
      if (v.kind === 'landed') return recordLanded(rt, c, tx, state, v);
      if (outcome.outcome === 'rejected') {
        await saveStep(rt, tx, { status: 'failed', statusReason: `rejected by the network: ${outcome.reason}` }, null);
        return;
      }
      if (v.kind === 'gone') return resign(rt, c, tx, state, signings, 'its blockhash expired before a node accepted it');
      // The node does not know the blockhash, but it may still land elsewhere: wait and send again.
      await saveStep(rt, tx, {}, c.pollMs);
      return;
    }
  }
}

async function checkStep(rt: Runtime, c: Ctx, tx: Transaction, state: SolanaState): Promise<void> {
  const signings = signingsOf(tx, state);
  const v = await lookUp(c, signings);
  switch (v.kind) {
    case 'landed':
      if (v.status === 'mined' && tx.status === 'mined' && v.signature === tx.hash) {
        await saveStep(rt, tx, {}, c.pollMs);
        return;
      }
      return recordLanded(rt, c, tx, state, v);
    case 'gone':
      return resign(rt, c, tx, state, signings, `its blockhash expired before it was included (${v.reason})`);
    case 'open':
      // Nodes drop what they cannot forward in time: keep sending the same bytes while it can land.
      await submitSolanaTx(c.rpc, state.wire, { skipPreflight: true });
      await saveStep(rt, tx, {}, c.pollMs);
  }
}

export const solanaFamily: ChainFamily<'solana'> = {
  async accept(rt, relayer, req) {
    const c = contextOf(rt, relayer);
    try {
      // A dry run of what the pipeline will sign: fee payer, co-signatures, blockhash and policy.
      await prepare(c, req);
    } catch (e) {
      if (e instanceof SolanaRequestError) throw invalid(e.message);
      // The node refused a request about this transaction (e.g. its blockhash): the request is at fault.
      if (e instanceof JsonRpcError) throw invalid(`the network's RPC refused the transaction: ${e.message}`);
      throw e;
    }
    return {
      data: { from: relayer.address, validUntil: new Date(Date.now() + DEFAULT_VALIDITY_MS) },
      request: { transaction: req.transaction },
      takesNonce: false,
    };
  },

  async chainNonce() {
    throw new Error('solana transactions take no nonce');
  },

  async balance(rt, relayer) {
    return { balance: await contextOf(rt, relayer).rpc.getBalance(relayer.address), unit: 'lamports' };
  },

  async process(rt, tx) {
    const relayer = await relayerOfStep(rt, tx);
    if (!relayer) return;
    const c = contextOf(rt, relayer);
    const state = tx.chainState as unknown as SolanaState | null;
    if (!state?.wire) return signStep(rt, c, tx);
    if (!state.accepted) return sendStep(rt, c, tx, state);
    return checkStep(rt, c, tx, state);
  },

  async checkRelayer(rt, relayer) {
    const c = contextForCheck(() => contextOf(rt, relayer));
    try {
      await c.rpc.getLatestBlockhash();
    } catch (e) {
      throw new RelayerCheckError('RpcUnavailable', `the Solana RPC of network "${relayer.network}" does not answer: ${(e as Error).message}`);
    }
  },
};
