import { describe, expect, it } from 'vitest';
import { encodeFunctionData, parseAbi } from 'viem';
import { ENTRY_POINT_V07, ENTRY_POINT_V08 } from '../../../../src/chains/evm/aa/canonical.js';
import { USEROP_CODES } from '../../../../src/chains/evm/aa/errors.js';
import { paymasterDeployment } from '../../../../src/chains/evm/aa/paymaster.js';
import { userOperationsPolicy } from '../../../../src/chains/evm/aa/policy.js';
import { callTargets, checkEntryPoint, checkSenderRate, checkSponsorship, maxCost, relayerPaymaster } from '../../../../src/chains/evm/aa/sponsor.js';
import type { UserOp } from '../../../../src/chains/evm/aa/userop.js';

const A = '0x00000000000000000000000000000000000000aa';
const B = '0x00000000000000000000000000000000000000bb';
const RELAYER = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const abi = parseAbi([
  'function execute(address target, uint256 value, bytes data)',
  'struct Call { address target; uint256 value; bytes data; }',
  'function executeBatch(Call[] calls)',
  'function executeBatch(address[] dest, uint256[] value, bytes[] func)',
]);
const execute = (to: string) => encodeFunctionData({ abi, functionName: 'execute', args: [to as never, 0n, '0x'] });

const op = (callData: `0x${string}`, gas: Partial<UserOp> = {}): UserOp => ({
  sender: RELAYER,
  nonce: 0n,
  callData,
  callGasLimit: 100n,
  verificationGasLimit: 200n,
  preVerificationGas: 300n,
  maxFeePerGas: 10n,
  maxPriorityFeePerGas: 1n,
  signature: '0x',
  paymasterVerificationGasLimit: 400n,
  paymasterPostOpGasLimit: 0n,
  ...gas,
});
const policy = (p: object) => userOperationsPolicy.parse({ paymaster: { address: A }, ...p });
const codeOf = (f: () => void) => {
  try {
    f();
  } catch (e) {
    return [(e as { code: number }).code, (e as Error).message] as const;
  }
  return null;
};

describe('sponsorship decisions', () => {
  it('reads the targets of execute and of both executeBatch forms; not of other calls', () => {
    expect(callTargets(execute(A))).toEqual([expect.stringMatching(new RegExp(A.slice(2), 'i'))]);
    const v08 = encodeFunctionData({
      abi,
      functionName: 'executeBatch',
      args: [
        [
          { target: A, value: 0n, data: '0x' },
          { target: B, value: 1n, data: '0x' },
        ],
      ],
    });
    expect(callTargets(v08)?.map((t) => t.toLowerCase())).toEqual([A, B]);
    const v07 = encodeFunctionData({
      abi,
      functionName: 'executeBatch',
      args: [
        [A, B],
        [0n, 0n],
        ['0x', '0x'],
      ],
    });
    expect(callTargets(v07)?.map((t) => t.toLowerCase())).toEqual([A, B]);
    expect(callTargets('0x12345678')).toBeUndefined();
  });

  it('allowed_targets: every target must be allowed, and a call it cannot read is refused', () => {
    const p = policy({ sponsorship: { allowed_targets: [A] } });
    expect(codeOf(() => checkSponsorship(p, op(execute(A)), true))).toBeNull();
    expect(codeOf(() => checkSponsorship(p, op(execute(B)), true))).toEqual([
      USEROP_CODES.paymaster,
      expect.stringMatching(/not in the relayer's allowed_targets/),
    ]);
    const both = encodeFunctionData({
      abi,
      functionName: 'executeBatch',
      args: [
        [
          { target: A, value: 0n, data: '0x' },
          { target: B, value: 0n, data: '0x' },
        ],
      ],
    });
    expect(codeOf(() => checkSponsorship(p, op(both), true))?.[0]).toBe(USEROP_CODES.paymaster);
    expect(codeOf(() => checkSponsorship(p, op('0xdeadbeef'), true))?.[1]).toMatch(/cannot be checked/);
    expect(codeOf(() => checkSponsorship(policy({}), op('0xdeadbeef'), true))).toBeNull();
  });

  it('max_cost_per_operation: every gas limit at the maximum fee, checked once the limits are known', () => {
    expect(maxCost(op(execute(A)))).toBe((100n + 200n + 300n + 400n) * 10n);
    const p = policy({ sponsorship: { max_cost_per_operation: '10000' } });
    expect(codeOf(() => checkSponsorship(p, op(execute(A)), true))).toBeNull();
    expect(codeOf(() => checkSponsorship(p, op(execute(A), { maxFeePerGas: 11n }), true))).toEqual([
      USEROP_CODES.paymaster,
      expect.stringMatching(/may cost 11000 wei, above the relayer's max_cost_per_operation of 10000 wei/),
    ]);
    expect(codeOf(() => checkSponsorship(p, op(execute(A), { maxFeePerGas: 11n }), false))).toBeNull();
  });

  it('max_operations_per_sender_per_hour: throttled at the limit', () => {
    const p = policy({ sponsorship: { max_operations_per_sender_per_hour: 2 } });
    expect(codeOf(() => checkSenderRate(p, 1))).toBeNull();
    expect(codeOf(() => checkSenderRate(p, 2))?.[0]).toBe(USEROP_CODES.throttled);
    expect(codeOf(() => checkSenderRate(policy({}), 1000))).toBeNull();
  });

  it("the relayer's paymaster: the policy's address, or its deterministic deployment per EntryPoint", () => {
    expect(relayerPaymaster(policy({}), ENTRY_POINT_V08, RELAYER)).toBe(A);
    const deploy = userOperationsPolicy.parse({ paymaster: { deploy: true, deposit: '1' } });
    expect(relayerPaymaster(deploy, ENTRY_POINT_V08, RELAYER)).toBe(paymasterDeployment(ENTRY_POINT_V08, RELAYER, RELAYER).address);
    expect(relayerPaymaster(deploy, ENTRY_POINT_V07, RELAYER)).not.toBe(relayerPaymaster(deploy, ENTRY_POINT_V08, RELAYER));
  });

  it('serves only the EntryPoints the policy names', () => {
    expect(codeOf(() => checkEntryPoint(policy({}), ENTRY_POINT_V07))).toBeNull();
    expect(codeOf(() => checkEntryPoint(policy({ entry_points: [ENTRY_POINT_V08] }), ENTRY_POINT_V07))?.[0]).toBe(USEROP_CODES.invalidParams);
  });
});
