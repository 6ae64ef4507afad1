// Simulation and gas estimation of UserOperations against the real EntryPoint on anvil: what they
// accept lands on chain as estimated; what they refuse carries the ERC's code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEventLogs, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { ENTRY_POINT_V08 } from '../../../../src/chains/evm/aa/canonical.js';
import { USEROP_CODES, UserOpError } from '../../../../src/chains/evm/aa/errors.js';
import { paymasterDeployment, type Window } from '../../../../src/chains/evm/aa/paymaster.js';
import { entryPointAbi, estimateGas, FailedOpError, judgeValidation, simulateValidation } from '../../../../src/chains/evm/aa/simulate.js';
import { packUserOp, userOpHash } from '../../../../src/chains/evm/aa/userop.js';
import type { EvmRpc } from '../../../../src/chains/evm/rpc-client.js';
import { gaslessKit, startAaChain, type AaChain, type GaslessKit } from './support.js';

const RELAYER = 1;
const BUNDLER = 2;
const OTHER = 3;

let c: AaChain;
let kit: GaslessKit;
let rpc: EvmRpc;
let pm: Address;
let target: Address;
afterAll(() => c?.anvil.stop());

beforeAll(async () => {
  c = await startAaChain();
  kit = await gaslessKit(c, RELAYER);
  ({ rpc, pm, target } = kit);
});

const soon = (): Window => ({ validUntil: Math.floor(Date.now() / 1000) + 600, validAfter: 0 });
const firstOp = () => kit.firstOp();
const sign = (...a: Parameters<GaslessKit['sign']>) => kit.sign(...a);
const estimated = () => kit.estimated();

describe('simulation and estimation on the EntryPoint v0.8', () => {
  it("estimates a fresh EIP-7702 account's operation from viem's dummy signature; signed, it passes validation and lands", async () => {
    const { user, op: est } = await estimated();
    expect(est.verificationGasLimit).toBeGreaterThan(20_000n);
    expect(est.callGasLimit).toBeGreaterThan(20_000n);
    expect(est.paymasterVerificationGasLimit).toBeGreaterThan(0n);
    const op = await sign(est, user);
    const v = await simulateValidation(rpc, op, '0.8');
    expect(() => judgeValidation(v, Math.floor(Date.now() / 1000))).not.toThrow();

    const hash = await c.wallet(BUNDLER).writeContract({
      address: ENTRY_POINT_V08,
      abi: entryPointAbi,
      functionName: 'handleOps',
      args: [[packUserOp(op)], c.account(BUNDLER).address],
      authorizationList: [op.authorization!],
      gas: 1_500_000n,
    });
    const receipt = await c.pub.waitForTransactionReceipt({ hash });
    expect(receipt.type).toBe('eip7702');
    const [ev] = parseEventLogs({ abi: entryPointAbi, logs: receipt.logs, eventName: 'UserOperationEvent' });
    expect(ev?.args).toMatchObject({ userOpHash: userOpHash(op, '0.8', c.chain.id), sender: user.address, paymaster: pm, success: true });
    // The limits were enough and not far above what it used.
    const limits = op.verificationGasLimit + op.callGasLimit + op.paymasterVerificationGasLimit! + op.preVerificationGas;
    expect(ev!.args.actualGasUsed).toBeLessThan(limits);
    expect(ev!.args.actualGasUsed * 3n).toBeGreaterThan(limits);
    expect(await c.pub.getStorageAt({ address: target, slot: '0x0' })).toBe(`0x${user.address.slice(2).toLowerCase().padStart(64, '0')}`);
    expect(await c.pub.getBalance({ address: user.address })).toBe(0n);
  });

  it("refuses a wrong account signature with -32507 and the paymaster's with -32507", async () => {
    const { user, op } = await estimated();
    const byOther = await sign(op, privateKeyToAccount(generatePrivateKey()));
    await expect(simulateValidation(rpc, byOther, '0.8').then((v) => judgeValidation(v, Math.floor(Date.now() / 1000)))).rejects.toMatchObject({
      code: USEROP_CODES.signature,
      message: "the account's signature check failed",
    });
    const badApproval = await sign(op, user, soon(), c.account(OTHER));
    await expect(simulateValidation(rpc, badApproval, '0.8').then((v) => judgeValidation(v, Math.floor(Date.now() / 1000)))).rejects.toMatchObject({
      code: USEROP_CODES.signature,
      message: "the paymaster's signature check failed",
    });
  });

  it('refuses an approval that is over, or ends too soon, with -32503', async () => {
    const { user, op } = await estimated();
    const now = Math.floor(Date.now() / 1000);
    for (const validUntil of [now - 10, now + 5]) {
      const signed = await sign(op, user, { validUntil, validAfter: 0 });
      const err = await simulateValidation(rpc, signed, '0.8')
        .then((v) => judgeValidation(v, now))
        .catch((e) => e);
      expect(err).toBeInstanceOf(UserOpError);
      expect(err.code).toBe(USEROP_CODES.timeRange);
    }
  });

  it("gives the EntryPoint's FailedOp its code: a paymaster without deposit is -32501, a wrong nonce -32500", async () => {
    const { user, op } = await estimated();
    const relayer = c.account(RELAYER).address;
    const poor = paymasterDeployment(ENTRY_POINT_V08, relayer, c.account(OTHER).address);
    await c.pub.waitForTransactionReceipt({ hash: await c.wallet(RELAYER).sendTransaction({ to: poor.to, data: poor.data }) });
    const err = await simulateValidation(rpc, { ...op, paymaster: poor.address }, '0.8').catch((e) => e);
    expect(err).toBeInstanceOf(FailedOpError);
    expect(err).toMatchObject({ code: USEROP_CODES.paymaster, reason: 'AA31 paymaster deposit too low', index: 0 });

    const wrongNonce = await sign({ ...op, nonce: 5n }, user);
    const err2 = await simulateValidation(rpc, wrongNonce, '0.8').catch((e) => e);
    expect(err2).toMatchObject({ code: USEROP_CODES.rejected, reason: 'AA25 invalid account nonce' });
  });

  it('estimation reports an operation the EntryPoint refuses', async () => {
    const { op } = await firstOp();
    const err = await estimateGas(rpc, { ...op, nonce: 7n }, '0.8').catch((e) => e);
    expect(err).toMatchObject({ code: USEROP_CODES.rejected, reason: 'AA25 invalid account nonce' });
  });
});
