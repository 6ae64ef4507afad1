// The Solana chain family: accepts shape B requests (a transaction whose fee payer is the
// relayer) and works each through sign -> send -> track, with a fresh blockhash when one expires.
import { CustodyError } from '../../signers/custody.js';
import type { Network } from '../../core/settings.js';
import { signerKey } from '../../core/signers.js';
import type { Relayer } from '../../generated/prisma/client.js';
import { invalid, unavailable } from '../../core/domain-error.js';
import { RelayerCheckError } from '../../core/domain-error.js';
import type { ChainFamily, Steps } from '../../core/transactions/pipeline.js';
import { DEFAULT_VALIDITY_MS } from '../../core/family-spec.js';
import type { Runtime } from '../../core/runtime.js';
import { findNetwork } from '../../core/networks.js';
import type { SolanaSigner } from '../../signers/index.js';
import { rpcObserver } from '../rpc-observer.js';
import { clientCache, contextForCheck, endpointsOf } from '../plumbing.js';
import { checkFeePaid } from './gasless.js';
import { SolanaRequestError } from './request-error.js';
import { decodeSolanaTx } from './transaction.js';
import { solanaPolicySchema, type SolanaPolicy } from './policy.js';
import { prepareSolanaTx, SolanaBlockhashExpiredError, type PreparedSolanaTx, type SolanaTransactionRequest } from './prepare.js';
import { createSolanaRpc, JsonRpcError, RpcUnavailableError, type SolanaRpc } from './rpc-client.js';
import {
  decideSolana,
  FINAL,
  recordSolana,
  signingsOf,
  solanaVerdict,
  stateOf,
  type SolanaDecision,
  type SolanaEffect,
  type SolanaOutcome,
  type SolanaPace,
  type SolanaSigning,
  type SolanaVerdict,
} from './decide.js';
import { submitSolanaTx } from './status.js';

interface Ctx {
  relayer: Relayer;
  network: Network;
  signer: SolanaSigner;
  policy: SolanaPolicy;
  rpc: SolanaRpc;
  /** How often a sent transaction is looked up (and sent again while unseen). */
  pollMs: number;
  log: Runtime['log'];
}

const DEFAULT_SLOT_MS = 400;

const rpcFor = clientCache('solana rpc clients', (endpoints, rt) =>
  createSolanaRpc(endpoints, { timeoutMs: 8_000, cooldownMs: 15_000, observe: rpcObserver(rt, 'solana', endpoints) }),
);

export function contextOf(rt: Runtime, relayer: Relayer): Ctx {
  const network = findNetwork(rt, 'solana', relayer.network);
  if (!network) throw new Error(`solana network "${relayer.network}" of relayer ${relayer.id} is not configured`);
  const signer = rt.signers.loaded.get(signerKey(relayer.signerId, 'solana'));
  if (signer?.kind !== 'solana') throw new Error(`relayer ${relayer.id} has no solana signer`);
  return {
    relayer,
    network,
    signer,
    policy: solanaPolicySchema.parse(relayer.policies ?? {}),
    rpc: rpcFor(rt, endpointsOf(relayer, network.rpcUrls)),
    pollMs: network.averageBlocktimeMs ?? DEFAULT_SLOT_MS,
    log: rt.log.child({ relayerId: relayer.id }),
  };
}

/** Prepares and signs the transaction; a dry run (`unsigned`) checks everything but asks the signer nothing. */
function prepare(c: Ctx, req: SolanaTransactionRequest, resubmit = false, unsigned = false): Promise<PreparedSolanaTx> {
  const signer = unsigned ? { ...c.signer, sign: async () => new Uint8Array(64) } : c.signer;
  return prepareSolanaTx(req, { signer, rpc: c.rpc, policy: c.policy, resubmit });
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

/** Runs `fn` for each item at once; one that throws gives `{ error }` (logged), not the others' failure. */
function each<T, R>(c: Ctx, items: T[], fn: (item: T) => Promise<R>): Promise<(R | { error: string; reason?: string })[]> {
  return Promise.all(
    items.map((item) =>
      fn(item).catch((err: Error) => {
        c.log.error({ err }, 'solana step effect failed; retrying later');
        return { error: err.message, reason: err instanceof CustodyError ? `could not be signed: ${err.message}` : undefined };
      }),
    ),
  );
}

async function perform(c: Ctx, e: SolanaEffect): Promise<SolanaOutcome> {
  switch (e.stage) {
    case 'sign':
      try {
        const p = await prepare(c, e.request as SolanaTransactionRequest, e.resubmit);
        const signing = { signature: p.signature, blockhash: p.blockhash, lastValidBlockHeight: p.lastValidBlockHeight?.toString() ?? null };
        return { signed: true, signing: { ...signing, wire: p.wireBase64, fee: p.fee } };
      } catch (err) {
        if (err instanceof SolanaRequestError) return { signed: false, refused: err.message, blockhashExpired: err instanceof SolanaBlockhashExpiredError };
        throw err;
      }
    case 'send': {
      // An answer that never comes (the call throws: timeout, reset, 5xx) leaves it unaccepted, so
      // it is sent again later: it may have been sent, and the same bytes can land at most once.
      const outcome = await submitSolanaTx(c.rpc, e.wire, e.again ? { skipPreflight: true } : {});
      return outcome.outcome === 'submitted' ? { submitted: 'submitted' } : { submitted: outcome.outcome, reason: outcome.reason };
    }
    case 'read':
      return { verdict: await lookUp(c, e.signings) };
  }
}

const steps: Steps<Ctx, { pace: SolanaPace; verdicts: Map<string, SolanaVerdict | { error: string }> }, SolanaEffect, SolanaOutcome, SolanaDecision> = {
  context: contextOf,
  async observe(c, rows) {
    const open = rows.flatMap((tx) => {
      const state = stateOf(tx);
      return !FINAL.includes(tx.status) && state?.accepted ? [{ tx, state }] : [];
    });
    const verdicts = await each(c, open, ({ tx, state }) => lookUp(c, signingsOf(tx, state)));
    return { pace: { pollMs: c.pollMs }, verdicts: new Map(open.map(({ tx }, i) => [tx.id, verdicts[i]])) };
  },
  decide: (rows, seen, now) => rows.map((tx) => decideSolana(tx, seen.verdicts.get(tx.id), seen.pace, now)),
  perform: (c, todo) => each(c, todo, ({ effect }) => perform(c, effect)),
  record: recordSolana,
};

export const solanaFamily: ChainFamily<'solana'> = {
  async accept(rt, relayer, req) {
    const c = contextOf(rt, relayer);
    try {
      // A dry run of what the pipeline will sign: fee payer, co-signatures, blockhash and policy.
      await prepare(c, req, false, true);
      // A relayer whose users pay its fees (gasless) sends only what pays it.
      if (c.policy.fee_payment_strategy === 'user') await checkFeePaid({ ...c, rt }, decodeSolanaTx(req.transaction));
    } catch (e) {
      if (e instanceof SolanaRequestError) throw invalid(e.message);
      // The node refused a request about this transaction (e.g. its blockhash): the request is at fault.
      if (e instanceof JsonRpcError) throw Object.assign(invalid(`the network's RPC refused the transaction: ${e.message}`), { cause: e });
      if (e instanceof RpcUnavailableError) throw Object.assign(unavailable(`the network's Solana RPC does not answer: ${e.message}`), { cause: e });
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

  steps,

  async checkRelayer(rt, relayer) {
    const c = contextForCheck(() => contextOf(rt, relayer));
    try {
      await c.rpc.getLatestBlockhash();
    } catch (e) {
      throw new RelayerCheckError('RpcUnavailable', `the Solana RPC of network "${relayer.network}" does not answer: ${(e as Error).message}`);
    }
  },
};
