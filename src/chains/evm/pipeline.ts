import type { Hex } from 'viem';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import { invalid, unavailable } from '../../core/domain-error.js';
import { RelayerCheckError } from '../../core/domain-error.js';
import type { Accepted, ChainFamily } from '../../core/transactions/pipeline.js';
import { FINAL_STATUSES } from '../../core/transactions/service.js';
import { saveTransactions } from '../../core/transactions/store.js';
import type { TransactionPatch } from '../../core/transactions/rows.js';
import type { Runtime } from '../../core/runtime.js';
import { acceptEvm, evmContextOrRefuse } from './accept.js';
import { startPaymasterFunding } from './aa/funding.js';
import { type EvmContext, evmContext, EvmSetupError } from './context.js';
import { reconcileNonces } from './nonces.js';
import { RpcUnavailableError } from './rpc-client.js';
import { evmSteps } from './steps.js';
import { heldFrom } from './watch.js';
import { startBundler } from './aa/bundling.js';
import { payloadSigned, readState, type EvmState } from './state.js';

/** The start-up check: the network is configured and reachable on the right chain, the signer is loaded, nonces agree. */
async function checkRelayer(rt: Runtime, relayer: Relayer): Promise<void> {
  let ctx: EvmContext;
  try {
    ctx = evmContext(rt, relayer);
  } catch (e) {
    if (e instanceof EvmSetupError) throw new RelayerCheckError(e.type, e.message);
    throw e;
  }
  if (!ctx.signer) {
    throw new RelayerCheckError(
      'SignerUnavailable',
      `signer "${relayer.signerId}" is not loaded for EVM, or its address is not the relayer's (${relayer.address})`,
    );
  }
  let chainId: number;
  try {
    chainId = Number(BigInt(await ctx.rpc.request<Hex>('eth_chainId')));
  } catch (e) {
    if (e instanceof RpcUnavailableError)
      throw new RelayerCheckError('RpcUnavailable', `no RPC endpoint of network "${ctx.network.name}" answers: ${e.message}`);
    throw new RelayerCheckError('RpcUnavailable', `eth_chainId failed: ${(e as Error).message}`);
  }
  if (chainId !== ctx.chainId) {
    throw new RelayerCheckError(
      'ChainIdMismatch',
      `the RPC endpoint reports chain id ${chainId}, but network "${ctx.network.name}" has chain_id ${ctx.chainId}`,
    );
  }
  try {
    await reconcileNonces(rt, ctx);
  } catch (e) {
    throw new RelayerCheckError('NonceSyncFailed', `the nonce could not be synchronised with the chain: ${(e as Error).message}`);
  }
}

async function chainNonce(rt: Runtime, relayer: Relayer): Promise<bigint> {
  const ctx = evmContextOrRefuse(rt, relayer);
  try {
    return BigInt(await ctx.rpc.request<Hex>('eth_getTransactionCount', [relayer.address, 'pending']));
  } catch (e) {
    if (e instanceof RpcUnavailableError) throw unavailable(`relayer ${relayer.id}: its network cannot be reached to read the account's nonce; try again`);
    throw e;
  }
}

async function balance(rt: Runtime, relayer: Relayer) {
  const ctx = evmContextOrRefuse(rt, relayer);
  try {
    return { balance: BigInt(await ctx.rpc.request<Hex>('eth_getBalance', [relayer.address, 'latest'])), unit: 'wei' };
  } catch (e) {
    if (e instanceof RpcUnavailableError) throw unavailable(`relayer ${relayer.id}: its network cannot be reached to read the balance; try again`);
    throw e;
  }
}

const inFlight = (tx: Transaction) => !FINAL_STATUSES.includes(tx.status) && tx.status !== 'mined';

async function save(rt: Runtime, tx: Transaction, owner: string, patch: TransactionPatch): Promise<Transaction> {
  const saved = await saveTransactions(rt, owner, [{ before: tx, patch: { ...patch, dueAt: new Date() }, release: true }]);
  const row = saved.get(tx.id);
  if (!row) throw new Error(`lease of transaction ${tx.id} lost`);
  rt.work.to?.wake();
  return row;
}

/**
 * Cancel: a transaction nothing was signed for ends canceled now (its nonce still gets a NOOP);
 * otherwise a 0-value self-transfer with higher fees is sent at its nonce, and it ends canceled
 * when that is mined (or mined/confirmed if the original wins the race).
 */
async function cancel(rt: Runtime, tx: Transaction, owner: string): Promise<Transaction> {
  if (!inFlight(tx)) throw invalid(`cannot cancel a transaction in status ${tx.status}`);
  const st = readState(tx);
  if (st.goal === 'noop') {
    if (st.outcome?.status === 'canceled') return tx;
    throw invalid('cannot cancel: the transaction is already being replaced because its valid_until passed');
  }
  const next: EvmState = { ...st, goal: 'noop', phase: 'new', waiting: undefined };
  if (!payloadSigned(st)) {
    const reason = 'canceled before it was sent; a 0-value self-transfer takes its nonce';
    next.outcome = { status: 'canceled', reason };
    return save(rt, tx, owner, { status: 'canceled', statusReason: reason, chainState: next as never });
  }
  next.outcome = { status: 'canceled', reason: 'canceled: replaced by a 0-value self-transfer' };
  next.note = 'cancellation requested: replacing it with a 0-value self-transfer at the same nonce';
  return save(rt, tx, owner, { statusReason: next.note, chainState: next as never });
}

/** Replace: a new payload at the same nonce; once signed, it goes out with fees at least 10% above the last broadcast. */
async function replace(rt: Runtime, tx: Transaction, accepted: Accepted, owner: string): Promise<Transaction> {
  if (!inFlight(tx)) throw invalid(`cannot replace a transaction in status ${tx.status}`);
  const st = readState(tx);
  if (st.goal === 'noop') throw invalid(`cannot replace a transaction that is being ${st.outcome?.status === 'expired' ? 'expired' : 'canceled'}`);
  const next: EvmState = { ...st, phase: 'new', waiting: undefined };
  if (payloadSigned(st)) {
    next.previous = { ...(st.previous ?? {}), [String(st.version)]: { to: tx.to, value: tx.value, data: tx.data, gasLimit: tx.gasLimit?.toString() ?? null } };
    next.version = st.version + 1;
    next.note = `replaced by the client: the new payload goes out at nonce ${tx.nonce}`;
  }
  const d = accepted.data;
  return save(rt, tx, owner, {
    to: d.to ?? null,
    value: String(d.value ?? '0'),
    data: (d.data as string | null | undefined) ?? null,
    gasLimit: (d.gasLimit as bigint | null | undefined) ?? null,
    gasPrice: (d.gasPrice as string | null | undefined) ?? null,
    maxFeePerGas: (d.maxFeePerGas as string | null | undefined) ?? null,
    maxPriorityFeePerGas: (d.maxPriorityFeePerGas as string | null | undefined) ?? null,
    speed: (d.speed as Transaction['speed'] | undefined) ?? null,
    validUntil: d.validUntil,
    request: accepted.request as never,
    statusReason: next.note ?? null,
    chainState: next as never,
  });
}

export const evmFamily: ChainFamily<'evm'> = {
  accept: acceptEvm,
  chainNonce,
  balance,
  steps: evmSteps,
  checkRelayer,
  cancel,
  replace,
  heldFrom,
  startWorkers: (rt) => {
    const loops = [startBundler(rt), startPaymasterFunding(rt)];
    return { stop: async () => void (await Promise.all(loops.map((l) => l.stop()))) };
  },
};
