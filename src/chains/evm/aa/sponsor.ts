// What the relayer's paymaster agrees to pay for (its `user_operations` policy), decided from the
// operation alone: pure, so each rule is tested without a chain.
import { decodeFunctionData, parseAbi, type Address } from 'viem';
import { USEROP_CODES, UserOpError } from './errors.js';
import { paymasterDeployment } from './paymaster.js';
import { servedEntryPoints, type UserOperationsPolicy } from './policy.js';
import type { UserOp } from './userop.js';

// The call shapes of the accounts clients use: Simple7702Account (v0.8) and SimpleAccount (v0.7)
// share execute; their executeBatch differ.
const accountAbi = parseAbi([
  'function execute(address target, uint256 value, bytes data)',
  'struct Call { address target; uint256 value; bytes data; }',
  'function executeBatch(Call[] calls)',
  'function executeBatch(address[] dest, uint256[] value, bytes[] func)',
]);

/** The addresses an account's callData calls, or undefined when its shape is not one of these. */
export function callTargets(callData: UserOp['callData']): Address[] | undefined {
  let d: ReturnType<typeof decodeFunctionData<typeof accountAbi>>;
  try {
    d = decodeFunctionData({ abi: accountAbi, data: callData });
  } catch {
    return undefined;
  }
  if (d.functionName === 'execute') return [d.args[0]];
  const [first] = d.args;
  if (first.length > 0 && typeof first[0] === 'object') return (first as readonly { target: Address }[]).map((c) => c.target);
  return [...(first as readonly Address[])];
}

/** The most the operation can cost its paymaster: every gas limit at its maximum fee. */
export function maxCost(op: UserOp): bigint {
  const gas = op.callGasLimit + op.verificationGasLimit + op.preVerificationGas + (op.paymasterVerificationGasLimit ?? 0n) + (op.paymasterPostOpGasLimit ?? 0n);
  return gas * op.maxFeePerGas;
}

/**
 * The relayer's paymaster at `entryPoint`: the policy's address, or the one it deploys (owner and
 * signer the relayer's address). funding.ts (the automatic deployment) computes the same address.
 */
export function relayerPaymaster(policy: UserOperationsPolicy, entryPoint: Address, relayer: Address): Address {
  return 'address' in policy.paymaster ? (policy.paymaster.address as Address) : paymasterDeployment(entryPoint, relayer, relayer).address;
}

/** Refuses an EntryPoint the policy does not serve (-32602). */
export function checkEntryPoint(policy: UserOperationsPolicy, entryPoint: Address): void {
  if (!servedEntryPoints(policy).includes(entryPoint.toLowerCase()))
    throw new UserOpError(
      USEROP_CODES.invalidParams,
      `entryPoint: ${entryPoint} is not served by this relayer (served: ${servedEntryPoints(policy).join(', ')})`,
    );
}

/**
 * The sponsorship rules on the operation itself: every call target allowed, and (once its gas
 * limits are known: `withCost`) its maximum cost within the policy's. Refused with -32501, the
 * paymaster's code.
 */
export function checkSponsorship(policy: UserOperationsPolicy, op: UserOp, withCost: boolean): void {
  const s = policy.sponsorship;
  if (!s) return;
  if (s.allowed_targets) {
    const targets = callTargets(op.callData);
    if (!targets)
      throw new UserOpError(
        USEROP_CODES.paymaster,
        'sponsorship: the call is not an execute/executeBatch of a known account, so its targets cannot be checked against allowed_targets',
      );
    const allowed = new Set(s.allowed_targets.map((a) => a.toLowerCase()));
    const refused = targets.find((t) => !allowed.has(t.toLowerCase()));
    if (refused) throw new UserOpError(USEROP_CODES.paymaster, `sponsorship: target ${refused} is not in the relayer's allowed_targets`);
  }
  if (withCost && s.max_cost_per_operation !== undefined) {
    const cost = maxCost(op);
    if (cost > BigInt(s.max_cost_per_operation))
      throw new UserOpError(
        USEROP_CODES.paymaster,
        `sponsorship: the operation may cost ${cost} wei, above the relayer's max_cost_per_operation of ${s.max_cost_per_operation} wei`,
      );
  }
}

/** The per-sender limit, given how many operations the sender sent in the last hour (-32504, throttled). */
export function checkSenderRate(policy: UserOperationsPolicy, sentLastHour: number): void {
  const max = policy.sponsorship?.max_operations_per_sender_per_hour;
  if (max !== undefined && sentLastHour >= max)
    throw new UserOpError(
      USEROP_CODES.throttled,
      `sponsorship: the sender sent ${sentLastHour} operations in the last hour, the relayer's max_operations_per_sender_per_hour is ${max}`,
    );
}
