// The EVM relayer's bundler JSON-RPC (ERC-7769) and paymaster JSON-RPC (ERC-7677): the EVM half of
// core/relayers/bundler.ts. Acceptance of an operation: the policy, the relayer's paymaster, the
// EntryPoint's simulation, then a durable row; bundling is bundling.ts's.
import { getAddress, numberToHex, type Address, type Hex, type Log } from 'viem';
import type { Relayer } from '../../../generated/prisma/client.js';
import type { BundlerAnswer, BundlerOps } from '../../../core/relayers/direct.js';
import type { Runtime } from '../../../core/runtime.js';
import { slot } from '../../../core/state.js';
import { evmContext, EvmSetupError, type EvmContext } from '../context.js';
import { readEvmPolicy } from '../request.js';
import { RpcUnavailableError } from '../rpc-client.js';
import { USER_OPERATION_EVENT } from './bundle.js';
import { wakeBundler } from './bundling.js';
import { invalidParams, USEROP_CODES, UserOpError } from './errors.js';
import { publishOps } from './lifecycle.js';
import { approvalTypedData, paymasterData, STUB_SIGNATURE, type Window } from './paymaster.js';
import { servedEntryPoints, type UserOperationsPolicy } from './policy.js';
import {
  chainTime,
  entryPointFailure,
  estimateGas,
  judgeValidation,
  LATEST_BLOCK,
  readValidation,
  timeAfter,
  validationCall,
  windowEnd,
  type Validation,
} from './simulate.js';
import { checkEntryPoint, checkSenderRate, checkSponsorship, relayerPaymaster } from './sponsor.js';
import { keepUserOps, userOpByHash, userOpsByHash, type UserOpReceipt, type UserOpRow } from './store.js';
import { checkAuthorization, delegateOf, packUserOp, readUserOp, userOpHash, userOpJson, type UserOp } from './userop.js';

const METHODS: Record<string, 'read' | 'write'> = {
  eth_sendUserOperation: 'write',
  pm_getPaymasterStubData: 'write',
  pm_getPaymasterData: 'write',
  eth_estimateUserOperationGas: 'read',
  eth_getUserOperationByHash: 'read',
  eth_getUserOperationReceipt: 'read',
  eth_supportedEntryPoints: 'read',
  eth_chainId: 'read',
};

/** How long the paymaster's approval lasts: long enough to be bundled, short enough not to be hoarded. */
export const APPROVAL_S = 15 * 60;

const policyOf = (relayer: Relayer): UserOperationsPolicy | undefined => readEvmPolicy(relayer.policies).user_operations;

type Call = {
  rt: Runtime;
  relayer: Relayer;
  ctx: EvmContext;
  policy: UserOperationsPolicy;
  params: unknown[];
  /** The rows a batch's reads name, read at once (by lower-case hash; null: no such row). */
  rows?: Map<string, UserOpRow | null>;
};

/** The paymaster's approval window, from the chain's time (which the EntryPoint checks it by; read at most once a second). */
async function window(ctx: EvmContext): Promise<Window> {
  const now = await ctx.rpc.memo('latest block time', 1000, () => chainTime(ctx.rpc));
  return { validUntil: now + APPROVAL_S, validAfter: 0 };
}

async function accountNonce(ctx: EvmContext, sender: Address): Promise<number> {
  return Number(BigInt(await ctx.rpc.request<Hex>('eth_getTransactionCount', [sender, 'latest'])));
}

/** The operation's hash: an EIP-7702 account already delegated, sent without its authorization, hashes with the delegate its code names. */
async function hashOf(ctx: EvmContext, op: UserOp, version: '0.7' | '0.8'): Promise<Hex> {
  const delegate = op.factory === '0x7702' && !op.authorization ? delegateOf(await ctx.rpc.request<Hex>('eth_getCode', [op.sender, 'latest'])) : undefined;
  if (op.factory === '0x7702' && !op.authorization && !delegate) throw invalidParams('eip7702Auth: required, the sender is not delegated yet');
  return userOpHash(op, version, ctx.chainId, delegate);
}

function checkChain(ctx: EvmContext, given: unknown): void {
  if (given === undefined) return;
  let id: bigint | undefined;
  try {
    id = typeof given === 'string' || typeof given === 'number' ? BigInt(given) : undefined;
  } catch {}
  if (id !== BigInt(ctx.chainId)) throw invalidParams(`chainId: ${String(given)} is not this relayer's chain (${numberToHex(ctx.chainId)})`);
}

// A deployed paymaster's address is a CREATE2 hash of its whole creation code (about 0.4 ms):
// computed once per relayer account and EntryPoint.
const PAYMASTERS = slot('evm relayer paymasters', () => new Map<string, Address>());

function paymasterOf(c: Pick<Call, 'rt' | 'policy' | 'relayer'>, entryPoint: Address): Address {
  if ('address' in c.policy.paymaster) return relayerPaymaster(c.policy, entryPoint, c.relayer.address as Address);
  const known = c.rt.state(PAYMASTERS);
  const key = `${entryPoint.toLowerCase()} ${c.relayer.address.toLowerCase()}`;
  let pm = known.get(key);
  if (!pm) known.set(key, (pm = relayerPaymaster(c.policy, entryPoint, c.relayer.address as Address)));
  return pm;
}

function ownPaymaster(c: Call, op: UserOp, entryPoint: Address): Address {
  const pm = paymasterOf(c, entryPoint);
  if (!op.paymaster || op.paymaster.toLowerCase() !== pm.toLowerCase())
    throw invalidParams(`paymaster: this bundler takes operations its relayer's paymaster ${pm} pays for${op.paymaster ? `, not ${op.paymaster}` : ''}`);
  return pm;
}

/** An operation read, checked against the policy and hashed, waiting for its group. */
type Sent = { c: Call; op: UserOp; version: '0.7' | '0.8'; entryPoint: Address; hash: Hex; resolve(h: Hex): void; reject(e: unknown): void };

/** Operations of one group at most. */
const MAX_GROUP = 200;
/**
 * Calls of one HTTP request of a group's batch (the requests go at once): each simulation carries
 * EntryPointSimulations' code (tens of kilobytes), and nodes bound a request's size.
 */
const BATCH_CHUNK = 16;

// A relayer's sends waiting while a group of its sends is being accepted; they go together next.
const INTAKE = slot('evm bundler intake', () => new Map<string, { busy: boolean; waiting: Sent[] }>());

/**
 * eth_sendUserOperation: the checks that need nothing but the operation at once, then acceptance
 * with the sends that arrive meanwhile (acceptGroup). A lone send is accepted at once.
 */
async function sendUserOperation(c: Call): Promise<Hex> {
  const { op, version, entryPoint } = readUserOp(c.params, 'send');
  checkEntryPoint(c.policy, entryPoint);
  ownPaymaster(c, op, entryPoint);
  checkSponsorship(c.policy, op, true);
  const hash = (await hashOf(c.ctx, op, version)).toLowerCase() as Hex;
  const intake = c.rt.state(INTAKE);
  let q = intake.get(c.relayer.id);
  if (!q) intake.set(c.relayer.id, (q = { busy: false, waiting: [] }));
  const queue = q;
  return new Promise<Hex>((resolve, reject) => {
    queue.waiting.push({ c, op, version, entryPoint, hash, resolve, reject });
    if (queue.busy) return;
    queue.busy = true;
    void (async () => {
      while (queue.waiting.length) {
        const group = queue.waiting.splice(0, MAX_GROUP);
        await acceptGroup(group).catch((e: unknown) => {
          for (const s of group) s.reject(e);
        });
      }
      queue.busy = false;
    })();
  });
}

const keyOf = (entryPoint: string, hash: string) => `${entryPoint.toLowerCase()} ${hash}`;

/**
 * Accepts a group of sends of one relayer, each with its own answer: one read of the rows their
 * hashes already have, one JSON-RPC batch (the chain's time, the nonces EIP-7702 authorizations
 * are checked against, every simulation), one database transaction keeping those accepted, then
 * the answers. The same operation twice (in the group, or already kept and not failed) is one row
 * and the same answer; one that failed is considered again.
 */
async function acceptGroup(group: Sent[]): Promise<void> {
  const { rt, ctx, relayer, policy } = group[0]!.c;
  const calls: { method: string; params: unknown[] }[] = [LATEST_BLOCK];
  const at = group.map((s) => {
    const nonce = s.op.authorization ? calls.push({ method: 'eth_getTransactionCount', params: [s.op.sender, 'latest'] }) - 1 : -1;
    return { nonce, validation: calls.push(validationCall(s.op, s.version)) - 1 };
  });
  const [rows, outcomes] = await Promise.all([
    userOpsByHash(rt.db, ctx.chainId, [...new Set(group.map((s) => s.hash))]),
    ctx.rpc.batch(calls, { chunk: BATCH_CHUNK }),
  ]);
  const known = new Map(rows.map((r) => [keyOf(r.entryPoint, r.hash), r]));
  const block = outcomes[0]!;
  if (!block.ok) throw block.error;
  // Windows are the EntryPoint's: judged by the chain's time, not this machine's.
  const chainNow = timeAfter(block.result);
  /** The first accepted send of each operation, and the same operation's sends after it. */
  const leaders = new Map<string, { s: Sent; again: UserOpRow | undefined; v: Validation; followers: Sent[] }>();
  const refused: { s: Sent; e: unknown }[] = [];
  for (const [i, s] of group.entries()) {
    const key = keyOf(s.entryPoint, s.hash);
    const row = known.get(key);
    if (row && row.status !== 'failed') {
      s.resolve(s.hash);
      continue;
    }
    const leader = leaders.get(key);
    if (leader) {
      leader.followers.push(s);
      continue;
    }
    try {
      const n = at[i]!.nonce >= 0 ? outcomes[at[i]!.nonce]! : undefined;
      if (n && !n.ok) throw n.error;
      if (n) await checkAuthorization(s.op, ctx.chainId, Number(BigInt(n.result as Hex)));
      const sim = outcomes[at[i]!.validation]!;
      if (!sim.ok) throw entryPointFailure(sim.error);
      const v = readValidation(sim.result as Hex);
      judgeValidation(v, chainNow);
      leaders.set(key, { s, again: row, v, followers: [] });
    } catch (e) {
      refused.push({ s, e });
    }
  }
  // Refused now, perhaps because its first copy (another instance's, at once) was already bundled: that one's answer.
  const recheck = refused.filter(({ s, e }) => e instanceof UserOpError && !known.has(keyOf(s.entryPoint, s.hash)));
  const now = recheck.length ? await userOpsByHash(rt.db, ctx.chainId, [...new Set(recheck.map(({ s }) => s.hash))]) : [];
  const bundled = new Set(now.filter((r) => r.status !== 'failed').map((r) => keyOf(r.entryPoint, r.hash)));
  for (const { s, e } of refused) {
    if (bundled.has(keyOf(s.entryPoint, s.hash))) s.resolve(s.hash);
    else s.reject(e);
  }
  if (leaders.size === 0) return;
  const max = policy.sponsorship?.max_operations_per_sender_per_hour;
  const limit = max !== undefined ? { max, since: new Date(Date.now() - 3_600_000) } : undefined;
  const all = [...leaders.values()];
  let kept: Awaited<ReturnType<typeof keepUserOps>>;
  try {
    kept = await keepUserOps(
      rt.db,
      all.map(({ s, again, v }) => ({
        relayerId: relayer.id,
        chainId: ctx.chainId,
        entryPoint: s.entryPoint,
        hash: s.hash,
        sender: s.op.sender,
        nonce: s.op.nonce,
        operation: userOpJson(s.op),
        validUntil: windowEnd(v),
        revive: again?.id,
      })),
      limit,
    );
  } catch (e) {
    for (const { s, followers } of all) for (const x of [s, ...followers]) x.reject(e);
    return;
  }
  const accepted: UserOpRow[] = [];
  for (const [i, { s, followers }] of all.entries()) {
    const k = kept[i]!;
    if ('throttled' in k) {
      let e: unknown;
      try {
        checkSenderRate(policy, k.throttled);
      } catch (x) {
        e = x;
      }
      for (const x of [s, ...followers]) e ? x.reject(e) : x.resolve(x.hash);
      continue;
    }
    if (k.created) accepted.push(k.row);
    for (const x of [s, ...followers]) x.resolve(x.hash);
  }
  if (accepted.length) {
    rt.metrics.userOperations.inc({ relayer_id: relayer.id, outcome: 'accepted' }, accepted.length);
    publishOps(rt, accepted);
    wakeBundler(rt);
  }
}

async function estimateUserOperationGas(c: Call) {
  const { op, version, entryPoint } = readUserOp(c.params, 'estimate');
  checkEntryPoint(c.policy, entryPoint);
  if (op.authorization) await checkAuthorization(op, c.ctx.chainId, await accountNonce(c.ctx, op.sender), false);
  const g = await estimateGas(c.ctx.rpc, op, version);
  return Object.fromEntries(Object.entries(g).map(([k, v]) => [k, numberToHex(v as bigint)]));
}

/** ERC-7677's params: [userOperation, entryPoint, chainId, context]. */
function paymasterRequest(c: Call) {
  const [raw, ep, chainId] = c.params;
  const { op, entryPoint } = readUserOp([raw, ep], 'estimate');
  checkEntryPoint(c.policy, entryPoint);
  checkChain(c.ctx, chainId);
  const pm = paymasterOf(c, entryPoint);
  if (op.paymaster && op.paymaster.toLowerCase() !== pm.toLowerCase())
    throw invalidParams(`paymaster: ${op.paymaster} is not this relayer's paymaster (${pm})`);
  return { op, pm };
}

async function getPaymasterStubData(c: Call) {
  const { op, pm } = paymasterRequest(c);
  checkSponsorship(c.policy, op, false);
  // No gas limits: the estimate fills them, and pm_getPaymasterData approves them.
  return { paymaster: pm, paymasterData: paymasterData(await window(c.ctx), STUB_SIGNATURE), isFinal: false, sponsor: { name: `relayer ${c.relayer.id}` } };
}

async function getPaymasterData(c: Call) {
  const { op, pm } = paymasterRequest(c);
  const mine: UserOp = {
    ...op,
    paymaster: pm,
    paymasterVerificationGasLimit: op.paymasterVerificationGasLimit ?? 0n,
    paymasterPostOpGasLimit: op.paymasterPostOpGasLimit ?? 0n,
    paymasterData: '0x',
  };
  checkSponsorship(c.policy, mine, true);
  const signer = c.ctx.signer;
  if (!signer) throw new UserOpError(USEROP_CODES.paymaster, `relayer ${c.relayer.id} has no signer loaded on this service to approve with`);
  const w = await window(c.ctx);
  const signature = await signer.account.signTypedData(approvalTypedData(packUserOp(mine), pm, c.ctx.chainId, w));
  return { paymaster: pm, paymasterData: paymasterData(w, signature) };
}

function readHash(params: unknown[]): Hex {
  const h = params[0];
  if (typeof h !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(h)) throw invalidParams('userOpHash: must be 32 bytes of 0x-prefixed hex');
  return h.toLowerCase() as Hex;
}

async function ownRow(c: Call, hash: Hex): Promise<UserOpRow | null> {
  const row = c.rows?.has(hash) ? c.rows.get(hash)! : await userOpByHash(c.rt.db, c.ctx.chainId, hash);
  return row && row.relayerId === c.relayer.id ? row : null;
}

const READS = new Set(['eth_getUserOperationByHash', 'eth_getUserOperationReceipt']);

/**
 * The rows a batch of reads names, in one query (a client polling many operations sends one batch
 * of them; each read on its own was a query). Nothing for fewer than two reads.
 */
async function batchRows(rt: Runtime, ctx: EvmContext, calls: { method: string; params: unknown }[]): Promise<Map<string, UserOpRow | null> | undefined> {
  const hashes = new Set<string>();
  for (const { method, params } of calls) {
    const h = Array.isArray(params) ? params[0] : undefined;
    if (READS.has(method) && typeof h === 'string' && /^0x[0-9a-fA-F]{64}$/.test(h)) hashes.add(h.toLowerCase());
  }
  if (hashes.size < 2) return undefined;
  const rows = await rt.db.prisma.userOperation.findMany({ where: { chainId: ctx.chainId, hash: { in: [...hashes] } } });
  const out = new Map<string, UserOpRow | null>([...hashes].map((h) => [h, null]));
  for (const r of rows) if (!out.get(r.hash)) out.set(r.hash, r);
  return out;
}

async function getUserOperationByHash(c: Call) {
  const row = await ownRow(c, readHash(c.params));
  if (!row) return null;
  const r = row.status === 'included' ? (row.receipt as UserOpReceipt | null) : null;
  return {
    userOperation: row.operation,
    entryPoint: getAddress(row.entryPoint),
    transactionHash: r?.transactionHash ?? null,
    blockHash: r?.blockHash ?? null,
    blockNumber: r?.blockNumber ?? null,
  };
}

/**
 * The logs of one operation in its bundle: from the previous operation's event (or the start) to its
 * own. Events are told by their topics (UserOperationEvent's first indexed field is the hash).
 */
function opLogs(logs: Log[], entryPoint: string, hash: string): Log[] {
  const ep = entryPoint.toLowerCase();
  let start = 0;
  for (let i = 0; i < logs.length; i++) {
    const l = logs[i]!;
    if (l.address.toLowerCase() !== ep || l.topics[0] !== USER_OPERATION_EVENT || l.topics.length !== 4) continue;
    if (l.topics[1]?.toLowerCase() === hash) return logs.slice(start, i + 1);
    start = i + 1;
  }
  return [];
}

type ChainReceipt = { status: Hex; transactionHash: Hex; blockNumber: Hex; blockHash: Hex; logs: Log[] } & Record<string, unknown>;

class NotMined extends Error {}

/**
 * A transaction's receipt, or null. Callers asking at once (a client polling a bundle's operations)
 * share one call, and a receipt found is kept a second; "not mined yet" is not kept.
 */
async function chainReceipt(ctx: EvmContext, hash: string): Promise<ChainReceipt | null> {
  try {
    return await ctx.rpc.memo(`receipt ${hash.toLowerCase()}`, 1000, async () => {
      const r = await ctx.rpc.request<ChainReceipt | null>('eth_getTransactionReceipt', [hash]);
      if (!r) throw new NotMined();
      return r;
    });
  } catch (e) {
    if (e instanceof NotMined) return null;
    throw e;
  }
}

async function getUserOperationReceipt(c: Call) {
  const row = await ownRow(c, readHash(c.params));
  if (row?.status !== 'included' || !row.receipt) return null;
  const r = row.receipt as UserOpReceipt;
  const receipt = await chainReceipt(c.ctx, r.transactionHash);
  if (!receipt) return null;
  const op = row.operation as { paymaster?: string };
  return {
    userOpHash: row.hash,
    entryPoint: getAddress(row.entryPoint),
    sender: row.sender,
    nonce: numberToHex(BigInt(row.nonce)),
    paymaster: op.paymaster ?? null,
    actualGasCost: numberToHex(BigInt(r.actualGasCost)),
    actualGasUsed: numberToHex(BigInt(r.actualGasUsed)),
    success: r.success,
    reason: r.success ? '' : (r.reason ?? ''),
    logs: opLogs(receipt.logs, row.entryPoint, row.hash),
    receipt,
  };
}

const HANDLERS: Record<string, (c: Call) => Promise<unknown>> = {
  eth_sendUserOperation: sendUserOperation,
  eth_estimateUserOperationGas: estimateUserOperationGas,
  pm_getPaymasterStubData: getPaymasterStubData,
  pm_getPaymasterData: getPaymasterData,
  eth_getUserOperationByHash: getUserOperationByHash,
  eth_getUserOperationReceipt: getUserOperationReceipt,
  eth_supportedEntryPoints: async (c) => servedEntryPoints(c.policy).map((a) => getAddress(a)),
  eth_chainId: async (c) => numberToHex(c.ctx.chainId),
};

function answerOf(rt: Runtime, relayer: Relayer, method: string, e: unknown): BundlerAnswer {
  if (e instanceof UserOpError) return { ok: false, error: { code: e.code, message: e.message, ...(e.data !== undefined ? { data: e.data } : {}) } };
  if (e instanceof RpcUnavailableError) return { ok: false, error: { code: -32603, message: "the relayer's network cannot be reached right now; try again" } };
  rt.log.error({ err: e, relayerId: relayer.id, method }, 'bundler method failed');
  return { ok: false, error: { code: -32603, message: `Internal error: ${method} failed` } };
}

export const evmBundler: BundlerOps = {
  method: (name) => METHODS[name],
  refusal(rt, relayer) {
    if (!policyOf(relayer)) return `relayer ${relayer.id} has no user_operations policy: its bundler and paymaster are off`;
    try {
      evmContext(rt, relayer);
    } catch (e) {
      if (e instanceof EvmSetupError) return `relayer ${relayer.id} cannot bundle: ${e.message}`;
      throw e;
    }
    return null;
  },
  async call(rt, relayer, calls) {
    const ctx = evmContext(rt, relayer);
    const policy = policyOf(relayer)!;
    const rows = await batchRows(rt, ctx, calls);
    return Promise.all(
      calls.map(async ({ method, params }): Promise<BundlerAnswer> => {
        try {
          return { ok: true, result: await HANDLERS[method]!({ rt, relayer, ctx, policy, params: params as unknown[], rows }) };
        } catch (e) {
          return answerOf(rt, relayer, method, e);
        }
      }),
    );
  },
};
