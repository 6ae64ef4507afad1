// UserOperation core without a chain: reading ERC-7769 JSON, writing it back, hashes, error codes.
import { describe, expect, it } from 'vitest';
import { hexToBytes, numberToHex, type Hex } from 'viem';
import { hashAuthorization } from 'viem/utils';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { formatUserOperationRequest, getUserOperationHash, type UserOperation } from 'viem/account-abstraction';
import { ENTRY_POINT_V07, ENTRY_POINT_V08, SIMPLE_7702_ACCOUNT } from '../../../../src/chains/evm/aa/canonical.js';
import { codeOfReason, USEROP_CODES, UserOpError } from '../../../../src/chains/evm/aa/errors.js';
import {
  executionGasUsed,
  judgeValidation,
  preVerificationGas,
  readValidationData,
  unusedGasPenalty,
  type Validation,
} from '../../../../src/chains/evm/aa/simulate.js';
import { checkAuthorization, delegateOf, readUserOp, userOpHash, userOpJson } from '../../../../src/chains/evm/aa/userop.js';
import { recoverEvmAddress } from '../../../../src/signers/secp256k1.js';

/** secp256k1's order. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

const SENDER = '0x1111111111111111111111111111111111111111';
const base: UserOperation<'0.8'> = {
  sender: SENDER,
  nonce: 3n,
  callData: '0xdeadbeef',
  callGasLimit: 100_000n,
  verificationGasLimit: 150_000n,
  preVerificationGas: 50_000n,
  maxFeePerGas: 3_000_000_000n,
  maxPriorityFeePerGas: 1_000_000_000n,
  paymaster: '0x2222222222222222222222222222222222222222',
  paymasterVerificationGasLimit: 60_000n,
  paymasterPostOpGasLimit: 0n,
  paymasterData: '0x1234',
  signature: `0x${'ab'.repeat(65)}`,
};

function codeOf(f: () => unknown): number | string {
  try {
    f();
    return 'no error';
  } catch (e) {
    return e instanceof UserOpError ? e.code : String(e);
  }
}

describe('reading an operation (ERC-7769 JSON)', () => {
  it('reads what viem sends and writes back the same JSON', () => {
    const json = formatUserOperationRequest(base);
    const { op, version, entryPoint } = readUserOp([json, ENTRY_POINT_V08.toLowerCase()], 'send');
    expect(version).toBe('0.8');
    expect(entryPoint).toBe(ENTRY_POINT_V08);
    expect(op).toEqual(base);
    expect(userOpJson(op)).toEqual(json);
  });

  it("reads viem's EIP-7702 operation: factory 0x7702 and eip7702Auth (padded yParity)", async () => {
    const user = privateKeyToAccount(generatePrivateKey());
    const auth = await user.signAuthorization!({ address: SIMPLE_7702_ACCOUNT, chainId: 31337, nonce: 0 });
    const json = formatUserOperationRequest({ ...base, sender: user.address, factory: '0x7702', factoryData: '0x', authorization: auth });
    expect(json.eip7702Auth?.yParity).toMatch(/^0x0[01]$/);
    const { op } = readUserOp([json, ENTRY_POINT_V08], 'send');
    expect(op.factory).toBe('0x7702');
    expect(op.authorization).toEqual({ address: auth.address, chainId: 31337, nonce: 0, yParity: auth.yParity, r: auth.r, s: auth.s });
    await expect(checkAuthorization(op, 31337, 0)).resolves.toBeUndefined();
    await expect(checkAuthorization(op, 1, 0)).rejects.toMatchObject({ code: USEROP_CODES.invalidParams });
    await expect(checkAuthorization(op, 31337, 1)).rejects.toMatchObject({ code: USEROP_CODES.invalidParams });
    const other = { ...op, sender: SENDER as Hex };
    await expect(checkAuthorization(other, 31337, 0)).rejects.toMatchObject({ code: USEROP_CODES.signature });
    await expect(checkAuthorization(other, 31337, 0, false)).resolves.toBeUndefined();
  });

  it('refuses an authorization EIP-7702 would skip (high s, yParity not 0 or 1, nonce at 2^64 - 1), naming the field, for sending and estimating', async () => {
    const user = privateKeyToAccount(generatePrivateKey());
    const auth = await user.signAuthorization!({ address: SIMPLE_7702_ACCOUNT, chainId: 31337, nonce: 0 });
    const json = formatUserOperationRequest({ ...base, sender: user.address, factory: '0x7702', factoryData: '0x', authorization: auth });
    // The high-s twin: s' = n - s with yParity flipped recovers to the same signer, so only an explicit check refuses it.
    const twin = { ...auth, s: numberToHex(N - BigInt(auth.s), { size: 32 }), yParity: 1 - auth.yParity! };
    expect(recoverEvmAddress(hexToBytes(hashAuthorization(twin)), twin as never)).toBe(user.address);
    const withAuth = (a: object) => ({ ...json, eip7702Auth: { ...json.eip7702Auth, ...a } });
    const cases: [object, RegExp][] = [
      [{ s: twin.s, yParity: numberToHex(twin.yParity) }, /^eip7702Auth\.s: is above secp256k1n\/2, and EIP-7702 skips such an authorization/],
      [{ yParity: '0x1b' }, /^eip7702Auth\.yParity: must be 0 or 1$/],
      [{ nonce: numberToHex(2n ** 64n - 1n) }, /^eip7702Auth\.nonce: must be below 2\^64 - 1$/],
    ];
    for (const mode of ['send', 'estimate'] as const) {
      expect(readUserOp([json, ENTRY_POINT_V08], mode).op.authorization).toMatchObject({ s: auth.s, yParity: auth.yParity });
      for (const [a, message] of cases) {
        let err: unknown;
        try {
          readUserOp([withAuth(a), ENTRY_POINT_V08], mode);
        } catch (e) {
          err = e;
        }
        expect(err, `${mode} ${JSON.stringify(a)}`).toBeInstanceOf(UserOpError);
        expect((err as UserOpError).code).toBe(-32602);
        expect((err as UserOpError).message).toMatch(message);
      }
    }
    // s at exactly n/2 is low (EIP-2's bound is inclusive).
    expect(readUserOp([withAuth({ s: numberToHex(N / 2n) }), ENTRY_POINT_V08], 'send').op.authorization?.s).toBe(numberToHex(N / 2n, { size: 32 }));
  });

  it('for estimation, gas fields and the signature may be absent', () => {
    const { callGasLimit: _c, verificationGasLimit: _v, preVerificationGas: _p, signature: _s, ...partial } = formatUserOperationRequest(base);
    const { op } = readUserOp([partial, ENTRY_POINT_V07], 'estimate');
    expect(op).toMatchObject({ callGasLimit: 0n, verificationGasLimit: 0n, preVerificationGas: 0n, signature: '0x' });
    expect(codeOf(() => readUserOp([partial, ENTRY_POINT_V07], 'send'))).toBe(-32602);
  });

  it('refuses malformed input with -32602 and says what is wrong', () => {
    const json = formatUserOperationRequest(base);
    const cases: [unknown, RegExp][] = [
      [[json], /expected \[userOperation, entryPoint\]/],
      [[json, '0x0000000000000000000000000000000000000001'], /entryPoint: not supported/],
      ['nope', /expected/],
      [[[], ENTRY_POINT_V08], /must be an object/],
      [[{ ...json, nonce: '12' }, ENTRY_POINT_V08], /nonce: must be a 0x-prefixed hex quantity/],
      [[{ ...json, sender: '0x12' }, ENTRY_POINT_V08], /sender: must be a 20-byte/],
      [[{ ...json, callData: '0xabc' }, ENTRY_POINT_V08], /callData: must be 0x-prefixed hex bytes/],
      [[{ ...json, initCode: '0x' }, ENTRY_POINT_V08], /not initCode or paymasterAndData/],
      [[{ ...json, factory: '0x7702' }, ENTRY_POINT_V07], /needs EntryPoint v0.8/],
      [[{ ...json, maxPriorityFeePerGas: numberToHex(base.maxFeePerGas + 1n) }, ENTRY_POINT_V08], /must not exceed maxFeePerGas/],
      [[{ ...json, callGasLimit: numberToHex(1n << 128n) }, ENTRY_POINT_V08], /callGasLimit: must fit in 128 bits/],
      [[{ ...json, paymaster: undefined }, ENTRY_POINT_V08], /need a paymaster/],
      [[{ ...json, factoryData: '0x12' }, ENTRY_POINT_V08], /without a factory/],
    ];
    for (const [params, message] of cases) {
      let err: unknown;
      try {
        readUserOp(params, 'send');
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(params).slice(0, 80)).toBeInstanceOf(UserOpError);
      expect((err as UserOpError).code).toBe(-32602);
      expect((err as UserOpError).message).toMatch(message);
    }
  });
});

describe('hashes', () => {
  it("v0.7 and v0.8 hashes are viem's (v0.8: EIP-712 with the EntryPoint as domain): they differ", () => {
    const v7 = { ...base } as unknown as UserOperation<'0.7'>;
    expect(userOpHash(v7, '0.7', 1)).toBe(
      getUserOperationHash({ userOperation: v7, entryPointAddress: ENTRY_POINT_V07, entryPointVersion: '0.7', chainId: 1 }),
    );
    expect(userOpHash(base, '0.8', 1)).not.toBe(userOpHash(v7, '0.7', 1));
    expect(userOpHash(base, '0.8', 1)).not.toBe(userOpHash(base, '0.8', 2));
  });

  it("written out, they are viem's for operations of every shape, on any chain", () => {
    const auth = { address: SIMPLE_7702_ACCOUNT, chainId: 31337, nonce: 5, r: '0x' as Hex, s: '0x' as Hex, yParity: 0 };
    const shapes: UserOperation<'0.8'>[] = [
      base,
      { ...base, paymaster: undefined, paymasterData: undefined, paymasterVerificationGasLimit: undefined, paymasterPostOpGasLimit: undefined },
      { ...base, factory: '0x3333333333333333333333333333333333333333', factoryData: '0xcafe', nonce: (7n << 64n) | 9n },
      { ...base, factory: '0x7702', factoryData: '0x', authorization: auth },
      { ...base, factory: '0x7702', factoryData: '0xbeef', authorization: auth, maxFeePerGas: (1n << 128n) - 1n },
    ];
    for (const [version, entryPointAddress] of [
      ['0.7', ENTRY_POINT_V07],
      ['0.8', ENTRY_POINT_V08],
    ] as const)
      for (const chainId of [1, 31337, 2 ** 40])
        for (const op of shapes)
          expect(userOpHash(op, version, chainId)).toBe(
            getUserOperationHash({ userOperation: op as never, entryPointAddress, entryPointVersion: version, chainId }),
          );
  });

  it('an EIP-7702 operation without an authorization hashes with the delegate read from its code', () => {
    const op = { ...base, factory: '0x7702' as const, factoryData: '0x' as Hex };
    const code = `0xef0100${SIMPLE_7702_ACCOUNT.slice(2).toLowerCase()}` as Hex;
    expect(delegateOf(code)).toBe(SIMPLE_7702_ACCOUNT);
    expect(delegateOf('0x6080')).toBeUndefined();
    const withAuth = { ...op, authorization: { address: SIMPLE_7702_ACCOUNT, chainId: 1, nonce: 0, r: '0x' as Hex, s: '0x' as Hex, yParity: 0 } };
    expect(userOpHash(op, '0.8', 1, SIMPLE_7702_ACCOUNT)).toBe(userOpHash(withAuth, '0.8', 1));
    expect(userOpHash(op, '0.8', 1)).not.toBe(userOpHash(withAuth, '0.8', 1));
  });
});

describe('EntryPoint results', () => {
  it('validationData: aggregator or signature failure, and the window', () => {
    expect(readValidationData(0n)).toEqual({ aggregator: 'none', validAfter: 0, validUntil: 0 });
    expect(readValidationData(1n | (1000n << 160n) | (500n << 208n))).toEqual({ aggregator: 'sigFailed', validAfter: 500, validUntil: 1000 });
    expect(readValidationData(0x1234n).aggregator).toBe('0x0000000000000000000000000000000000001234');
  });

  it("FailedOp reasons map to the ERC's codes", () => {
    expect(codeOfReason("AA21 didn't pay prefund")).toBe(-32500);
    expect(codeOfReason('AA23 reverted')).toBe(-32500);
    expect(codeOfReason('AA24 signature error')).toBe(-32507);
    expect(codeOfReason('AA22 expired or not due')).toBe(-32503);
    expect(codeOfReason('AA31 paymaster deposit too low')).toBe(-32501);
    expect(codeOfReason('AA33 reverted')).toBe(-32501);
    expect(codeOfReason('AA34 signature error')).toBe(-32507);
    expect(codeOfReason('AA32 paymaster expired or not due')).toBe(-32503);
    expect(codeOfReason('AA96 invalid aggregator')).toBe(-32506);
    expect(codeOfReason('something else')).toBe(-32500);
  });

  it('judging validation: signature, aggregator, window', () => {
    const ok: Validation = { preOpGas: 1n, prefund: 1n, account: readValidationData(0n), paymaster: readValidationData(0n), paymasterContext: '0x' };
    const now = 1_800_000_000;
    expect(codeOf(() => judgeValidation(ok, now))).toBe('no error');
    expect(codeOf(() => judgeValidation({ ...ok, account: readValidationData(1n) }, now))).toBe(-32507);
    expect(codeOf(() => judgeValidation({ ...ok, paymaster: readValidationData(1n) }, now))).toBe(-32507);
    expect(codeOf(() => judgeValidation({ ...ok, account: readValidationData(0xabcn) }, now))).toBe(-32506);
    expect(codeOf(() => judgeValidation({ ...ok, paymaster: readValidationData(BigInt(now + 5) << 160n) }, now))).toBe(-32503);
    expect(codeOf(() => judgeValidation({ ...ok, paymaster: readValidationData(BigInt(now + 3600) << 160n) }, now))).toBe('no error');
    expect(codeOf(() => judgeValidation({ ...ok, account: readValidationData(BigInt(now + 60) << 208n) }, now))).toBe(-32503);
  });

  it('the unused-gas penalty, and execution gas recovered from a charge that includes it', () => {
    expect(unusedGasPenalty('0.8', 100_000n, 70_000n)).toBe(0n);
    expect(unusedGasPenalty('0.8', 100_000n, 50_000n)).toBe(5_000n);
    expect(unusedGasPenalty('0.7', 100_000n, 70_000n)).toBe(3_000n);
    for (const version of ['0.7', '0.8'] as const) {
      for (const used of [0n, 1n, 21_337n, 99_999n, 1_234_567n]) {
        const limit = 10_000_000n;
        const charged = used + unusedGasPenalty(version, limit, used);
        const found = executionGasUsed(version, limit, charged);
        expect(found - used).toBeGreaterThanOrEqual(0n);
        expect(found - used).toBeLessThanOrEqual(1n);
        expect(found + unusedGasPenalty(version, limit, found)).toBe(charged);
      }
    }
  });

  it('preVerificationGas pays calldata, overhead, and an authorization', () => {
    const plain = preVerificationGas(base);
    expect(plain).toBeGreaterThan(21_000n + 18_300n);
    const longer = preVerificationGas({ ...base, callData: `0x${'ff'.repeat(100)}` });
    // 96 more non-zero bytes at 16, less the zero padding they replace.
    expect(longer - plain).toBeGreaterThanOrEqual(96n * 12n);
    expect(longer - plain).toBeLessThanOrEqual(96n * 16n + 4n * 32n);
    const auth = preVerificationGas({ ...base, authorization: { address: SIMPLE_7702_ACCOUNT, chainId: 1, nonce: 0, r: '0x', s: '0x', yParity: 0 } });
    expect(auth - plain).toBe(25_000n);
  });
});
