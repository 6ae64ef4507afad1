// The Solana chain family: accepts shape B requests (a transaction whose fee payer is the
// relayer) and works each through sign -> send -> track, with a fresh blockhash when one expires.
import type { Network } from '../../config/load.js';
import { signerKey } from '../../config/signers.js';
import type { Prisma, Relayer, Transaction } from '../../generated/prisma/client.js';
import { invalid } from '../../core/errors.js';
import { RelayerCheckError } from '../../core/errors.js';
import type { ChainFamily } from '../../modules/transactions/family.js';
import { DEFAULT_VALIDITY_MS } from '../../core/family.js';
import { findNetwork, type Runtime } from '../../runtime.js';
import type { SolanaSigner } from '../../signers/index.js';
import { clientCache, contextForCheck, endpointsOf, long, relayerOfStep, saveStep } from '../step.js';
import { SolanaRequestError } from './errors.js';
import { solanaPolicySchema, type SolanaPolicy } from './policy.js';
import { prepareSolanaTx, SolanaBlockhashExpiredError, type PreparedSolanaTx, type SolanaTransactionRequest } from './prepare.js';
import { createSolanaRpc, JsonRpcError, type SolanaRpc } from './rpc.js';
import { checkSolanaTx, submitSolanaTx } from './status.js';

interface Ctx {
  relayer: Relayer;
  network: Network;
  signer: SolanaSigner;
  policy: SolanaPolicy;
  rpc: SolanaRpc;
  /** How often a sent transaction is looked up (and sent again while unseen). */
  pollMs: number;
}

/** What the pipeline keeps about the transaction's current signed form (transactions.chain_state). */
interface SolanaState {
  /** The signed wire transaction, written before it is sent so that a restart sends the same bytes. */
  wire: string;
  signature: string;
  blockhash: string;
  /** Past this block height it can no longer land; null for durable-nonce transactions. */
  lastValidBlockHeight: string | null;
  /** A node accepted this wire transaction. */
  accepted: boolean;
  /** Published as the record's network fields (REST, webhooks, GraphQL networkData). */
  public: Record<string, unknown>;
}

const DEFAULT_SLOT_MS = 400;

const rpcFor = clientCache('solana rpc clients', (endpoints) => createSolanaRpc(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000 }));

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
const asJson = (state: SolanaState) => state as unknown as Prisma.InputJsonObject;

function prepare(c: Ctx, req: SolanaTransactionRequest, resubmit = false): Promise<PreparedSolanaTx> {
  return prepareSolanaTx(req, { signer: c.signer, rpc: c.rpc, policy: c.policy, resubmit });
}

function stateOf(prepared: PreparedSolanaTx): SolanaState {
  return {
    wire: prepared.wireBase64,
    signature: prepared.signature,
    blockhash: prepared.blockhash,
    lastValidBlockHeight: prepared.lastValidBlockHeight?.toString() ?? null,
    accepted: false,
    public: {
      signature: prepared.signature,
      recent_blockhash: prepared.blockhash,
      fee: prepared.fee === undefined ? null : long(prepared.fee),
      transaction: prepared.wireBase64,
    },
  };
}

/** Signs it with a fresh blockhash (the previous one can no longer land), until valid_until. */
async function renew(rt: Runtime, c: Ctx, tx: Transaction, why: string): Promise<void> {
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
  await saveStep(rt, tx, { hash: prepared.signature, hashes: { push: prepared.signature }, chainState: asJson(stateOf(prepared)) }, 0);
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
      await saveStep(rt, tx, { status: 'expired', statusReason: 'its blockhash expired before it was sent; other signers signed it, so it cannot be given a fresh one' }, null);
      return;
    }
    if (e instanceof SolanaRequestError) {
      await saveStep(rt, tx, { status: 'failed', statusReason: `could not be signed: ${e.message}` }, null);
      return;
    }
    throw e;
  }
  await saveStep(rt, tx, { status: 'sent', hash: prepared.signature, hashes: { push: prepared.signature }, chainState: asJson(stateOf(prepared)) }, 0);
}

async function sendStep(rt: Runtime, c: Ctx, tx: Transaction, state: SolanaState): Promise<void> {
  const outcome = await submitSolanaTx(c.rpc, state.wire);
  switch (outcome.outcome) {
    case 'submitted':
      await saveStep(rt, tx, { status: 'submitted', sentAt: tx.sentAt ?? new Date(), chainState: asJson({ ...state, accepted: true }) }, c.pollMs);
      return;
    case 'expired':
      // Never accepted by a node, so the old signature cannot land.
      return renew(rt, c, tx, 'its blockhash expired before a node accepted it');
    case 'rejected':
      await saveStep(rt, tx, { status: 'failed', statusReason: `rejected by the network: ${outcome.reason}` }, null);
  }
}

async function checkStep(rt: Runtime, c: Ctx, tx: Transaction, state: SolanaState): Promise<void> {
  const lastValidBlockHeight = state.lastValidBlockHeight === null ? null : BigInt(state.lastValidBlockHeight);
  const result = await checkSolanaTx(c.rpc, state.signature, { lastValidBlockHeight });
  const landedAt = (slot: number) => asJson({ ...state, public: { ...state.public, slot } });
  switch (result.status) {
    case 'pending':
      // Nodes drop what they cannot forward in time: keep sending the same bytes while it can land.
      await submitSolanaTx(c.rpc, state.wire, { skipPreflight: true });
      await saveStep(rt, tx, {}, c.pollMs);
      return;
    case 'mined':
      await saveStep(rt, tx, { status: 'mined', statusReason: null, chainState: landedAt(result.slot) }, c.pollMs);
      return;
    case 'confirmed':
      await saveStep(rt, tx, { status: 'confirmed', statusReason: null, confirmedAt: new Date(), chainState: landedAt(result.slot) }, null);
      return;
    case 'failed':
      await saveStep(rt, tx, { status: 'failed', statusReason: `included in slot ${result.slot} but failed: ${result.reason}`, chainState: landedAt(result.slot) }, null);
      return;
    case 'expired':
      return renew(rt, c, tx, `its blockhash expired before it was included (${result.reason})`);
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
