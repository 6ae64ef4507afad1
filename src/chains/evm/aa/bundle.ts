// A bundle: accepted operations of one EntryPoint in one handleOps, checked again just before it is
// sent (an operation valid at acceptance can be invalid now: its nonce used, its deposit spent), and
// read back from the mined transaction's logs.
import {
  encodeFunctionData,
  getAbiItem,
  isAddressEqual,
  parseEventLogs,
  toEventSelector,
  type Address,
  type Hex,
  type Log,
  type SignedAuthorization,
} from 'viem';
import type { EvmRpc } from '../rpc-client.js';
import { delegationCode, entryPointAbi, FailedOpError, entryPointFailure, type Rpc } from './simulate.js';
import { delegateOf, ENTRY_POINTS, packUserOp, type EntryPointVersion, type UserOp } from './userop.js';

export type BundleItem = { id: string; op: UserOp };

export type Bundle = {
  items: BundleItem[];
  dropped: { id: string; reason: string }[];
  /** handleOps(ops, beneficiary); empty when every operation was dropped. */
  data: Hex;
  /** The operations' EIP-7702 authorizations, for a type-4 transaction (empty: an ordinary one). */
  authorizationList: SignedAuthorization[];
  gasLimit: bigint;
};

export const handleOpsData = (ops: UserOp[], beneficiary: Address): Hex =>
  encodeFunctionData({ abi: entryPointAbi, functionName: 'handleOps', args: [ops.map(packUserOp), beneficiary] });

/**
 * Gas for the bundle transaction: every operation's limits (the EntryPoint refuses a bundle that
 * cannot give each its limits), its preVerificationGas (which covers the intrinsic and calldata
 * gas), and the EntryPoint's own work around them.
 */
export function bundleGasLimit(ops: UserOp[]): bigint {
  let gas = 50_000n;
  for (const op of ops) {
    gas +=
      op.preVerificationGas +
      op.verificationGasLimit +
      op.callGasLimit +
      (op.paymasterVerificationGasLimit ?? 0n) +
      (op.paymasterPostOpGasLimit ?? 0n) +
      20_000n;
  }
  return gas;
}

/**
 * The senders' code as the bundle's authorizations will make it: an eth_call carries no
 * authorization list. Not read first (for a sender delegated there already it is the same code).
 */
function delegations(ops: UserOp[]): Record<string, { code: Hex }> {
  const out: Record<string, { code: Hex }> = {};
  for (const op of ops) if (op.authorization) out[op.sender] = { code: delegationCode(op.authorization.address) };
  return out;
}

/**
 * What becomes of an operation's EIP-7702 authorization in a bundle, from its sender's account
 * nonce now and (when that moved on) the delegate its code names. At that nonce it is carried. Past
 * it, the node would skip it: harmless when the sender is delegated there already (a bundle that
 * reverted still applied its authorizations), else the operation would fail inside the bundle and
 * revert it, every time it was bundled again.
 */
export function authorizationFate(a: SignedAuthorization, accountNonce: bigint, delegate: Address | undefined): 'carry' | 'delegated' | { stale: string } {
  if (BigInt(a.nonce) === accountNonce) return 'carry';
  if (delegate && isAddressEqual(delegate, a.address)) return 'delegated';
  return {
    stale: `eip7702Auth: its nonce ${a.nonce} is not the sender's account nonce (${accountNonce}) any more, and the sender is not delegated to ${a.address}: the authorization would be skipped`,
  };
}

export type BundleRpc = Rpc & Pick<EvmRpc, 'batch'>;

/** One read of each item's sender, in one batch. */
async function readEach(rpc: BundleRpc, method: string, items: BundleItem[]): Promise<Hex[]> {
  if (items.length === 0) return [];
  return (await rpc.batch<Hex>(items.map((i) => ({ method, params: [i.op.sender, 'latest'] })))).map((o) => {
    if (!o.ok) throw new Error(`${method}: ${o.error.message}`);
    return o.result;
  });
}

/** The items as they can go now: authorizations the chain made moot left out, stale ones dropped with their reason. */
async function withAuthorizations(rpc: BundleRpc, items: BundleItem[]): Promise<{ left: BundleItem[]; dropped: Bundle['dropped'] }> {
  const signed = items.filter((i) => i.op.authorization);
  const nonces = (await readEach(rpc, 'eth_getTransactionCount', signed)).map((n) => BigInt(n));
  const fates = signed.map((i, k) => authorizationFate(i.op.authorization!, nonces[k]!, undefined));
  // The code only of those whose nonce moved on.
  const moved = fates.flatMap((f, k) => (f === 'carry' ? [] : [k]));
  const codes = await readEach(
    rpc,
    'eth_getCode',
    moved.map((k) => signed[k]!),
  );
  moved.forEach((k, j) => {
    fates[k] = authorizationFate(signed[k]!.op.authorization!, nonces[k]!, delegateOf(codes[j]));
  });
  const fateOf = new Map(signed.map((i, k) => [i.id, fates[k]!]));
  const left: BundleItem[] = [];
  const dropped: Bundle['dropped'] = [];
  for (const item of items) {
    const fate = fateOf.get(item.id) ?? 'carry';
    if (fate === 'carry') left.push(item);
    else if (fate === 'delegated') left.push({ ...item, op: { ...item.op, authorization: undefined } });
    else dropped.push({ id: item.id, reason: fate.stale });
  }
  return { left, dropped };
}

/**
 * Builds the bundle of `items` (in order) as `from` would send it: handleOps is run by eth_call,
 * and while the EntryPoint refuses an operation (FailedOp(index)) that one is dropped with its
 * reason and the rest tried again. First, each EIP-7702 authorization is checked against the
 * chain (authorizationFate).
 */
export async function prepareBundle(rpc: BundleRpc, version: EntryPointVersion, items: BundleItem[], from: Address, beneficiary: Address): Promise<Bundle> {
  const checked = await withAuthorizations(rpc, items);
  const dropped = checked.dropped;
  let left = checked.left;
  while (left.length > 0) {
    const ops = left.map((i) => i.op);
    const data = handleOpsData(ops, beneficiary);
    const gasLimit = bundleGasLimit(ops);
    try {
      await rpc.request('eth_call', [{ from, to: ENTRY_POINTS[version], data, gas: `0x${gasLimit.toString(16)}` }, 'latest', delegations(ops)]);
      const authorizationList = ops.flatMap((o) => (o.authorization ? [o.authorization] : []));
      return { items: left, dropped, data, authorizationList, gasLimit };
    } catch (e) {
      const failure = entryPointFailure(e);
      if (!(failure instanceof FailedOpError) || failure.index >= left.length) throw failure;
      dropped.push({ id: left[failure.index]!.id, reason: failure.message });
      left = left.filter((_, k) => k !== failure.index);
    }
  }
  return { items: [], dropped, data: '0x', authorizationList: [], gasLimit: 0n };
}

export type OpOutcome = {
  userOpHash: Hex;
  sender: Address;
  success: boolean;
  actualGasCost: bigint;
  actualGasUsed: bigint;
  /** The call's revert data, when it reverted. */
  revertReason?: Hex;
};

/** UserOperationEvent's topic 0 (its first indexed field, topic 1, is the userOpHash). */
export const USER_OPERATION_EVENT = toEventSelector(getAbiItem({ abi: entryPointAbi, name: 'UserOperationEvent' }));

/** Each operation's outcome in a mined bundle, from the EntryPoint's UserOperationEvent logs. */
export function outcomesOf(logs: Log[], version: EntryPointVersion): Map<string, OpOutcome> {
  const ep = ENTRY_POINTS[version].toLowerCase();
  const mine = logs.filter((l) => l.address.toLowerCase() === ep);
  const reasons = new Map<string, Hex>();
  for (const l of parseEventLogs({ abi: entryPointAbi, logs: mine, eventName: 'UserOperationRevertReason' })) {
    reasons.set(l.args.userOpHash.toLowerCase(), l.args.revertReason);
  }
  const out = new Map<string, OpOutcome>();
  for (const l of parseEventLogs({ abi: entryPointAbi, logs: mine, eventName: 'UserOperationEvent' })) {
    const h = l.args.userOpHash.toLowerCase();
    out.set(h, {
      userOpHash: l.args.userOpHash,
      sender: l.args.sender,
      success: l.args.success,
      actualGasCost: l.args.actualGasCost,
      actualGasUsed: l.args.actualGasUsed,
      ...(reasons.has(h) ? { revertReason: reasons.get(h) } : {}),
    });
  }
  return out;
}
