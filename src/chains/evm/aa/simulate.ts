// Simulating UserOperations the v0.7+ way: eth_call of EntryPointSimulations placed at the
// EntryPoint's address by a state override (it keeps the EntryPoint's storage: deposits, nonces).
// Also the gas estimate built on it, and the reading of validationData.
import { decodeErrorResult, decodeFunctionResult, encodeFunctionData, parseAbi, size, toHex, type Address, type Hex } from 'viem';
import { aaArtifact } from './canonical.js';
import { codeOfReason, USEROP_CODES, UserOpError } from './errors.js';
import { ENTRY_POINTS, packUserOp, type EntryPointVersion, type UserOp } from './userop.js';

/** What of the project's EVM RPC client this needs. */
export type Rpc = { request<T = unknown>(method: string, params?: unknown[]): Promise<T> };

/** The EntryPoint and EntryPointSimulations interface, the same in v0.7 and v0.8. */
export const entryPointAbi = parseAbi([
  'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
  'struct ReturnInfo { uint256 preOpGas; uint256 prefund; uint256 accountValidationData; uint256 paymasterValidationData; bytes paymasterContext; }',
  'struct StakeInfo { uint256 stake; uint256 unstakeDelaySec; }',
  'struct AggregatorStakeInfo { address aggregator; StakeInfo stakeInfo; }',
  'struct ValidationResult { ReturnInfo returnInfo; StakeInfo senderInfo; StakeInfo factoryInfo; StakeInfo paymasterInfo; AggregatorStakeInfo aggregatorInfo; }',
  'struct ExecutionResult { uint256 preOpGas; uint256 paid; uint256 accountValidationData; uint256 paymasterValidationData; bool targetSuccess; bytes targetResult; }',
  'function simulateValidation(PackedUserOperation userOp) returns (ValidationResult)',
  'function simulateHandleOp(PackedUserOperation op, address target, bytes targetCallData) returns (ExecutionResult)',
  'function handleOps(PackedUserOperation[] ops, address beneficiary)',
  'function getNonce(address sender, uint192 key) view returns (uint256)',
  'function balanceOf(address account) view returns (uint256)',
  'error FailedOp(uint256 opIndex, string reason)',
  'error FailedOpWithRevert(uint256 opIndex, string reason, bytes inner)',
  'error PostOpReverted(bytes returnData)',
  'error SignatureValidationFailed(address aggregator)',
  'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
  'event UserOperationRevertReason(bytes32 indexed userOpHash, address indexed sender, uint256 nonce, bytes revertReason)',
]);

/** validationData: 0 valid, 1 signature failed, else an aggregator; and the window (0 until = no end). */
export type ValidationData = { aggregator: Address | 'none' | 'sigFailed'; validAfter: number; validUntil: number };

export function readValidationData(v: bigint): ValidationData {
  const low = v & ((1n << 160n) - 1n);
  const validUntil = Number((v >> 160n) & ((1n << 48n) - 1n));
  const validAfter = Number(v >> 208n);
  const aggregator = low === 0n ? 'none' : low === 1n ? 'sigFailed' : (toHex(low, { size: 20 }) as Address);
  return { aggregator, validAfter, validUntil };
}

/** The EntryPoint's refusal of the operation at `index` (FailedOp), as the ERC's error. */
export class FailedOpError extends UserOpError {
  constructor(
    readonly index: number,
    readonly reason: string,
    readonly inner?: Hex,
  ) {
    super(codeOfReason(reason), inner && inner !== '0x' ? `${reason} (${inner})` : reason, inner ? { reason, revertData: inner } : { reason });
  }
}

/** The EntryPoint's revert out of the node's error, as a FailedOpError where it is one. */
export function entryPointFailure(e: unknown): Error {
  const data = revertData(e);
  if (data) {
    try {
      const d = decodeErrorResult({ abi: entryPointAbi, data });
      if (d.errorName === 'FailedOp') return new FailedOpError(Number(d.args[0]), d.args[1]);
      if (d.errorName === 'FailedOpWithRevert') return new FailedOpError(Number(d.args[0]), d.args[1], d.args[2]);
      if (d.errorName === 'SignatureValidationFailed') return new UserOpError(USEROP_CODES.aggregator, `aggregator ${d.args[0]} refused the signature`);
    } catch {}
    return new UserOpError(USEROP_CODES.rejected, `the EntryPoint reverted: ${data}`);
  }
  return e instanceof Error ? e : new Error(String(e));
}

function revertData(e: unknown): Hex | undefined {
  const d = (e as { data?: unknown })?.data;
  if (typeof d === 'string' && /^0x[0-9a-fA-F]*$/.test(d) && size(d as Hex) >= 4) return d as Hex;
  if (d && typeof d === 'object' && typeof (d as { data?: unknown }).data === 'string') return revertData(d);
  return undefined;
}

type Overrides = Record<string, { code?: Hex; balance?: Hex }>;

/** The sender's code once its EIP-7702 authorization is in effect: the delegation designator. */
export const delegationCode = (delegate: Address): Hex => `0xef0100${delegate.slice(2).toLowerCase()}` as Hex;

/**
 * The state the simulation runs on: EntryPointSimulations at the EntryPoint, and for an EIP-7702
 * operation the sender's code as its authorization makes it. Not read first: when the sender is
 * already delegated there, the override is the code it has (one eth_getCode less an operation).
 */
function overrides(op: UserOp, version: EntryPointVersion, extra: Overrides = {}): Overrides {
  const o: Overrides = { [ENTRY_POINTS[version]]: { code: aaArtifact(version, 'EntryPointSimulations').deployedBytecode } };
  if (op.authorization) o[op.sender] = { code: delegationCode(op.authorization.address) };
  for (const [k, v] of Object.entries(extra)) o[k] = { ...o[k], ...v };
  return o;
}

async function simCall(rpc: Rpc, version: EntryPointVersion, data: Hex, state: Overrides): Promise<Hex> {
  try {
    // No gas given: the node's call cap; simulations of large operations need more than a block's share.
    return await rpc.request<Hex>('eth_call', [{ to: ENTRY_POINTS[version], data }, 'latest', state]);
  } catch (e) {
    throw entryPointFailure(e);
  }
}

export type Validation = {
  preOpGas: bigint;
  prefund: bigint;
  account: ValidationData;
  paymaster: ValidationData;
  paymasterContext: Hex;
};

/** simulateValidation's eth_call: the account's and the paymaster's validation, as the EntryPoint would run them. */
export function validationCall(op: UserOp, version: EntryPointVersion): { method: string; params: unknown[] } {
  const data = encodeFunctionData({ abi: entryPointAbi, functionName: 'simulateValidation', args: [packUserOp(op)] });
  // No gas given: the node's call cap; simulations of large operations need more than a block's share.
  return { method: 'eth_call', params: [{ to: ENTRY_POINTS[version], data }, 'latest', overrides(op, version)] };
}

/** The validation validationCall's answer says; the EntryPoint's refusal as its error. */
export function readValidation(out: Hex): Validation {
  const r = decodeFunctionResult({ abi: entryPointAbi, functionName: 'simulateValidation', data: out });
  return {
    preOpGas: r.returnInfo.preOpGas,
    prefund: r.returnInfo.prefund,
    account: readValidationData(r.returnInfo.accountValidationData),
    paymaster: readValidationData(r.returnInfo.paymasterValidationData),
    paymasterContext: r.returnInfo.paymasterContext,
  };
}

/** simulateValidation on its own. */
export async function simulateValidation(rpc: Rpc, op: UserOp, version: EntryPointVersion): Promise<Validation> {
  const call = validationCall(op, version);
  try {
    return readValidation(await rpc.request<Hex>(call.method, call.params));
  } catch (e) {
    throw entryPointFailure(e);
  }
}

/** The latest block: the EntryPoint judges windows by `block.timestamp`, not by this machine's clock. */
export const LATEST_BLOCK = { method: 'eth_getBlockByNumber', params: ['latest', false] };
/**
 * The chain's time for what is sent now, in seconds: the latest block's timestamp, or this
 * machine's clock when that is later (a block mined from now on is no earlier, and an idle chain's
 * latest block can be long past).
 */
export const timeAfter = (latest: unknown): number => Math.max(Number(BigInt((latest as { timestamp: Hex }).timestamp)), Math.floor(Date.now() / 1000));
/** timeAfter the latest block, read. */
export const chainTime = async (rpc: Rpc): Promise<number> => timeAfter(await rpc.request(LATEST_BLOCK.method, LATEST_BLOCK.params));

/** How soon before its end a window is too short to be bundled in. */
export const WINDOW_MARGIN_S = 30;

/** Refuses, with the ERC's code, what validation says would fail on chain (signature, aggregator, window). */
export function judgeValidation(v: Validation, nowS: number): void {
  for (const [who, d] of [
    ['account', v.account],
    ['paymaster', v.paymaster],
  ] as const) {
    if (d.aggregator === 'sigFailed') throw new UserOpError(USEROP_CODES.signature, `the ${who}'s signature check failed`);
    if (d.aggregator !== 'none')
      throw new UserOpError(USEROP_CODES.aggregator, `the ${who} asks for signature aggregator ${d.aggregator}, which this bundler does not support`);
    if (d.validUntil !== 0 && d.validUntil < nowS + WINDOW_MARGIN_S)
      throw new UserOpError(USEROP_CODES.timeRange, `the ${who}'s validity ends at ${d.validUntil}, too soon (now ${nowS})`, { validUntil: d.validUntil });
    if (d.validAfter > nowS)
      throw new UserOpError(USEROP_CODES.timeRange, `the ${who}'s validity begins at ${d.validAfter} (now ${nowS})`, { validAfter: d.validAfter });
  }
}

/** Where the operation's validity ends: the earlier of the account's and the paymaster's ends (null: neither ends). */
export function windowEnd(v: Pick<Validation, 'account' | 'paymaster'>): Date | null {
  const ends = [v.account.validUntil, v.paymaster.validUntil].filter((u) => u !== 0);
  return ends.length ? new Date(Math.min(...ends) * 1000) : null;
}

export type Execution = { preOpGas: bigint; paid: bigint };

/** simulateHandleOp: validation (signature failures ignored) and execution of one operation. */
export async function simulateHandleOp(rpc: Rpc, op: UserOp, version: EntryPointVersion, extra?: Overrides): Promise<Execution> {
  const data = encodeFunctionData({
    abi: entryPointAbi,
    functionName: 'simulateHandleOp',
    args: [packUserOp(op), '0x0000000000000000000000000000000000000000', '0x'],
  });
  const out = await simCall(rpc, version, data, overrides(op, version, extra));
  const r = decodeFunctionResult({ abi: entryPointAbi, functionName: 'simulateHandleOp', data: out });
  return { preOpGas: r.preOpGas, paid: r.paid };
}

/**
 * The EntryPoint's charge for unused execution gas (limit - used): 10%, in v0.8 only beyond the
 * first 40,000.
 */
export function unusedGasPenalty(version: EntryPointVersion, limit: bigint, used: bigint): bigint {
  if (limit <= used) return 0n;
  if (version === '0.8' && limit <= used + 40_000n) return 0n;
  return ((limit - used) * 10n) / 100n;
}

/**
 * The execution gas used, from what was charged for execution (used + penalty). The penalty rounds
 * down, so neighbouring amounts can give one charge: the largest is taken (the safe side for a limit).
 */
export function executionGasUsed(version: EntryPointVersion, limit: bigint, charged: bigint): bigint {
  let lo = 0n;
  let hi = charged + 1n;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if (mid + unusedGasPenalty(version, limit, mid) > charged) hi = mid;
    else lo = mid + 1n;
  }
  return lo - 1n;
}

export type GasEstimate = {
  preVerificationGas: bigint;
  verificationGasLimit: bigint;
  callGasLimit: bigint;
  paymasterVerificationGasLimit?: bigint;
  paymasterPostOpGasLimit?: bigint;
};

// Generous limits for the estimating simulation: it must not run out where the real one would not.
const EST_VERIFICATION = 3_000_000n;
const EST_PAYMASTER_VERIFICATION = 1_000_000n;
const EST_CALL = 10_000_000n;

/**
 * preVerificationGas: what the bundle transaction spends on the operation outside the EntryPoint's
 * metering: its calldata (16 per non-zero byte, 4 per zero byte, of the packed operation's ABI
 * words), a per-operation overhead, an even share of the transaction's 21,000 in a bundle of one,
 * and EIP-7702's 25,000 for an authorization.
 */
export function preVerificationGas(op: UserOp): bigint {
  const packed = packUserOp({ ...op, signature: op.signature === '0x' ? (`0x${'ff'.repeat(65)}` as Hex) : op.signature });
  const encoded = encodeFunctionData({ abi: entryPointAbi, functionName: 'handleOps', args: [[packed], '0x0000000000000000000000000000000000000000'] });
  let calldata = 0n;
  for (let i = 2; i < encoded.length; i += 2) calldata += encoded.slice(i, i + 2) === '00' ? 4n : 16n;
  return 21_000n + 18_300n + calldata + (op.authorization ? 25_000n : 0n);
}

/**
 * Gas limits for an operation (its signature may be a dummy: simulateHandleOp ignores signature
 * failures). Runs it once with generous limits at a gas price of 1 wei, so that what the EntryPoint
 * charges is the gas itself: validation is preOpGas, execution is the rest less the penalty.
 */
export async function estimateGas(rpc: Rpc, op: UserOp, version: EntryPointVersion): Promise<GasEstimate> {
  const pvg = preVerificationGas(op);
  const trial: UserOp = {
    ...op,
    preVerificationGas: pvg,
    verificationGasLimit: EST_VERIFICATION,
    callGasLimit: EST_CALL,
    maxFeePerGas: 1n,
    maxPriorityFeePerGas: 1n,
  };
  if (op.paymaster) {
    trial.paymasterVerificationGasLimit = op.paymasterVerificationGasLimit || EST_PAYMASTER_VERIFICATION;
    trial.paymasterPostOpGasLimit = op.paymasterPostOpGasLimit ?? 0n;
  }
  // Without a paymaster the account pays its prefund (a few wei at this price) from its balance.
  const extra: Overrides = op.paymaster ? {} : { [op.sender]: { balance: toHex(10n ** 18n) } };
  const r = await simulateHandleOp(rpc, trial, version, extra);
  const validation = r.preOpGas - pvg;
  const limit = EST_CALL + (trial.paymasterPostOpGasLimit ?? 0n);
  const used = executionGasUsed(version, limit, r.paid - r.preOpGas);
  const out: GasEstimate = {
    preVerificationGas: pvg,
    // preOpGas covers the account's and the paymaster's validation together: each limit gets it all.
    verificationGasLimit: (validation * 13n) / 10n + 10_000n,
    callGasLimit: (used * 11n) / 10n + 5_000n,
  };
  if (op.paymaster) {
    out.paymasterVerificationGasLimit = op.paymasterVerificationGasLimit || (validation * 13n) / 10n + 10_000n;
    out.paymasterPostOpGasLimit = op.paymasterPostOpGasLimit ?? 0n;
  }
  return out;
}
