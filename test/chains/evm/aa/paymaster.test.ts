// The relayer's verifying paymaster on anvil, with the canonical EntryPoints: what it pays for and
// what it refuses, through real handleOps calls.
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BaseError, ContractFunctionRevertedError, encodeFunctionData, hashTypedData, parseAbi, parseEventLogs, type Address } from 'viem';
import { generatePrivateKey, privateKeyToAccount, type LocalAccount } from 'viem/accounts';
import { entryPoint07Abi, entryPoint08Abi, getUserOperationHash, toPackedUserOperation, type UserOperation } from 'viem/account-abstraction';
import {
  aaArtifact,
  canonicalDeployments,
  ENTRY_POINT_V07,
  ENTRY_POINT_V08,
  placeCanonicalContracts,
  SIMPLE_7702_ACCOUNT,
} from '../../../../src/chains/evm/aa/canonical.js';
import {
  approvalTypedData,
  paymasterData,
  paymasterDeployment,
  readPaymasterData,
  relayerPaymasterAbi,
  STUB_SIGNATURE,
  type Window,
} from '../../../../src/chains/evm/aa/paymaster.js';
import { startAaChain, type AaChain } from './support.js';

let a: AaChain;
let b: AaChain;
afterAll(async () => {
  await Promise.all([a?.anvil.stop(), b?.anvil.stop()]);
});

const RELAYER = 1; // owns the paymaster; its key approves operations
const BUNDLER = 2; // sends handleOps
const OTHER = 3;
const BENEFICIARY: Address = '0x000000000000000000000000000000000000bEEF';
const ONE_ETH = 10n ** 18n;
const accountAbi = parseAbi(['function execute(address target, uint256 value, bytes data)']);
const factoryAbi = parseAbi([
  'constructor(address entryPoint)',
  'function createAccount(address owner, uint256 salt) returns (address)',
  'function getAddress(address owner, uint256 salt) view returns (address)',
]);

async function deployPaymaster(c: AaChain, entryPoint: Address): Promise<Address> {
  const relayer = c.account(RELAYER);
  const d = paymasterDeployment(entryPoint, relayer.address, relayer.address);
  if (!(await c.pub.getCode({ address: d.address }))) {
    const hash = await c.wallet(RELAYER).sendTransaction({ to: d.to, data: d.data });
    expect((await c.pub.waitForTransactionReceipt({ hash })).status).toBe('success');
  }
  const hash = await c.wallet(RELAYER).writeContract({ address: d.address, abi: relayerPaymasterAbi, functionName: 'deposit', value: ONE_ETH });
  await c.pub.waitForTransactionReceipt({ hash });
  return d.address;
}

const deposit = (c: AaChain, pm: Address) => c.pub.readContract({ address: pm, abi: relayerPaymasterAbi, functionName: 'getDeposit' }) as Promise<bigint>;

async function fees(c: AaChain) {
  const block = await c.pub.getBlock();
  return { maxFeePerGas: block.baseFeePerGas! * 2n + 1_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
}

/** Signs `op`'s paymaster approval with `approver` for `chainId` and the user's part for `c`. */
async function sponsor<V extends '0.7' | '0.8'>(
  c: AaChain,
  version: V,
  op: UserOperation<V>,
  user: LocalAccount,
  opts: { approver?: LocalAccount; chainId?: number; window?: Window } = {},
): Promise<UserOperation<V>> {
  const approver = opts.approver ?? c.account(RELAYER);
  const w = opts.window ?? { validUntil: Math.floor(Date.now() / 1000) + 600, validAfter: 0 };
  const typed = approvalTypedData(toPackedUserOperation(op), (op as UserOperation<'0.8'>).paymaster!, opts.chainId ?? c.chain.id, w);
  const signed = { ...op, paymasterData: paymasterData(w, await approver.signTypedData(typed)) };
  const entryPointAddress = version === '0.7' ? ENTRY_POINT_V07 : ENTRY_POINT_V08;
  const hash = getUserOperationHash({ userOperation: signed as never, entryPointAddress, entryPointVersion: version, chainId: c.chain.id });
  const signature = version === '0.7' ? await user.signMessage({ message: { raw: hash } }) : await user.sign!({ hash });
  return { ...signed, signature };
}

/** handleOps as an eth_call: the EntryPoint's refusal (FailedOp's reason), or null if it would pass. */
async function refusal(c: AaChain, entryPoint: Address, ops: UserOperation[]): Promise<string | null> {
  try {
    await c.pub.simulateContract({
      account: c.account(BUNDLER),
      address: entryPoint,
      abi: entryPoint08Abi,
      functionName: 'handleOps',
      args: [ops.map((o) => toPackedUserOperation(o)), BENEFICIARY],
    });
    return null;
  } catch (e) {
    const reverted = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : null;
    if (reverted instanceof ContractFunctionRevertedError && reverted.data) return `${reverted.data.errorName}(${reverted.data.args?.join(', ')})`;
    throw e;
  }
}

async function handleOps(c: AaChain, entryPoint: Address, ops: UserOperation[]) {
  const hash = await c.wallet(BUNDLER).writeContract({
    address: entryPoint,
    abi: entryPoint08Abi,
    functionName: 'handleOps',
    args: [ops.map((o) => toPackedUserOperation(o)), BENEFICIARY],
    gas: 2_000_000n,
  });
  const receipt = await c.pub.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe('success');
  return { receipt, events: parseEventLogs({ abi: entryPoint08Abi, logs: receipt.logs, eventName: 'UserOperationEvent' }) };
}

describe('canonical ERC-4337 contracts', () => {
  it('the installed packages and the salts give the canonical addresses', () => {
    expect(canonicalDeployments().map((d) => [d.name, d.address])).toEqual([
      ['EntryPointV07', '0x0000000071727De22E5E9d8BAf0edAc6f37da032'],
      ['EntryPointV08', '0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108'],
      ['Simple7702Account', '0xe6Cae83BdE06E4c305530e199D7217f42808555B'],
      ['SimpleAccountFactoryV07', '0x91E60e0613810449d098b0b5Ec8b51A0FE8c8985'],
    ]);
  });
});

describe('RelayerPaymaster on anvil', () => {
  let pm08: Address;
  let target: Address;
  let user: LocalAccount;

  beforeAll(async () => {
    [a, b] = await Promise.all([startAaChain(31337), startAaChain(31338)]);
    [pm08, target] = await Promise.all([deployPaymaster(a, ENTRY_POINT_V08), a.recorder()]);
    user = privateKeyToAccount(generatePrivateKey());
    // The user's EOA delegates to Simple7702Account (on every chain: chainId 0); the bundler pays.
    const auth = await user.signAuthorization!({ address: SIMPLE_7702_ACCOUNT, chainId: 0, nonce: 0 });
    for (const c of [a, b]) {
      const hash = await c.wallet(BUNDLER).sendTransaction({ to: user.address, authorizationList: [auth] });
      await c.pub.waitForTransactionReceipt({ hash });
    }
  });

  it('placing the contracts again does nothing; their code is there', async () => {
    expect(await placeCanonicalContracts(a.anvil.url, generatePrivateKey())).toEqual([]);
    for (const d of canonicalDeployments()) expect(((await a.pub.getCode({ address: d.address })) ?? '0x').length).toBeGreaterThan(1000);
    expect(await a.pub.getCode({ address: user.address })).toBe(`0xef0100${SIMPLE_7702_ACCOUNT.slice(2).toLowerCase()}`);
  });

  async function op08(c: AaChain, pm: Address, to: Address): Promise<UserOperation<'0.8'>> {
    const nonce = (await c.pub.readContract({ address: ENTRY_POINT_V08, abi: entryPoint08Abi, functionName: 'getNonce', args: [user.address, 0n] })) as bigint;
    return {
      sender: user.address,
      nonce,
      callData: encodeFunctionData({ abi: accountAbi, functionName: 'execute', args: [to, 0n, '0x'] }),
      callGasLimit: 100_000n,
      verificationGasLimit: 150_000n,
      preVerificationGas: 60_000n,
      ...(await fees(c)),
      paymaster: pm,
      paymasterVerificationGasLimit: 60_000n,
      paymasterPostOpGasLimit: 0n,
      paymasterData: '0x',
      signature: '0x',
    };
  }

  it('the digest the contract computes is the EIP-712 digest the signer signs', async () => {
    const op = await op08(a, pm08, target);
    const w = { validUntil: 1_900_000_000, validAfter: 1_700_000_000 };
    const onChain = await a.pub.readContract({
      address: pm08,
      abi: relayerPaymasterAbi,
      functionName: 'approvalDigest',
      args: [toPackedUserOperation(op), w.validUntil, w.validAfter],
    });
    expect(onChain).toBe(hashTypedData(approvalTypedData(toPackedUserOperation(op), pm08, a.chain.id, w)));
    const data = paymasterData(w, STUB_SIGNATURE);
    expect(readPaymasterData(data)).toEqual({ ...w, signature: STUB_SIGNATURE });
  });

  it('pays for an operation its signer approved: the target sees the user, the user keeps 0 ETH', async () => {
    const before = await deposit(a, pm08);
    const op = await sponsor(a, '0.8', await op08(a, pm08, target), user);
    expect(await refusal(a, ENTRY_POINT_V08, [op])).toBeNull();
    const { events } = await handleOps(a, ENTRY_POINT_V08, [op]);
    expect(events).toHaveLength(1);
    expect(events[0]!.args).toMatchObject({ sender: user.address, paymaster: pm08, success: true });
    expect(await a.pub.getStorageAt({ address: target, slot: '0x0' })).toBe(`0x${user.address.slice(2).toLowerCase().padStart(64, '0')}`);
    expect(await a.pub.getBalance({ address: user.address })).toBe(0n);
    const after = await deposit(a, pm08);
    expect(before - after).toBe(events[0]!.args.actualGasCost);
    expect(after).toBeLessThan(before);
  });

  it('refuses an approval by another key', async () => {
    const op = await sponsor(a, '0.8', await op08(a, pm08, target), user, { approver: a.account(OTHER) });
    expect(await refusal(a, ENTRY_POINT_V08, [op])).toBe('FailedOp(0, AA34 signature error)');
  });

  it('refuses an approval whose window has passed, or has not begun', async () => {
    const now = Math.floor(Date.now() / 1000);
    const expired = await sponsor(a, '0.8', await op08(a, pm08, target), user, { window: { validUntil: now - 60, validAfter: 0 } });
    expect(await refusal(a, ENTRY_POINT_V08, [expired])).toBe('FailedOp(0, AA32 paymaster expired or not due)');
    const early = await sponsor(a, '0.8', await op08(a, pm08, target), user, { window: { validUntil: 0, validAfter: now + 3600 } });
    expect(await refusal(a, ENTRY_POINT_V08, [early])).toBe('FailedOp(0, AA32 paymaster expired or not due)');
  });

  it('refuses an operation changed after approval', async () => {
    const op = await sponsor(a, '0.8', await op08(a, pm08, target), user);
    const changed = { ...op, callGasLimit: op.callGasLimit + 1n };
    const hash = getUserOperationHash({ userOperation: changed, entryPointAddress: ENTRY_POINT_V08, entryPointVersion: '0.8', chainId: a.chain.id });
    expect(await refusal(a, ENTRY_POINT_V08, [{ ...changed, signature: await user.sign!({ hash }) }])).toBe('FailedOp(0, AA34 signature error)');
  });

  it('refuses an approval made for another chain, at the same paymaster address there', async () => {
    const pmB = await deployPaymaster(b, ENTRY_POINT_V08);
    expect(pmB).toBe(pm08);
    const targetB = await b.recorder();
    const op = await sponsor(b, '0.8', await op08(b, pmB, targetB), user, { chainId: a.chain.id });
    expect(await refusal(b, ENTRY_POINT_V08, [op])).toBe('FailedOp(0, AA34 signature error)');
    const good = await sponsor(b, '0.8', await op08(b, pmB, targetB), user);
    expect(await refusal(b, ENTRY_POINT_V08, [good])).toBeNull();
  });

  it('only the relayer account withdraws the deposit; anyone may add to it', async () => {
    const other = a.wallet(OTHER);
    await expect(
      a.pub.simulateContract({
        account: a.account(OTHER),
        address: pm08,
        abi: relayerPaymasterAbi,
        functionName: 'withdrawTo',
        args: [other.account.address, 1n],
      }),
    ).rejects.toThrow(/NotOwner/);
    let hash = await other.writeContract({ address: pm08, abi: relayerPaymasterAbi, functionName: 'deposit', value: 5n });
    await a.pub.waitForTransactionReceipt({ hash });
    const before = await deposit(a, pm08);
    hash = await a.wallet(RELAYER).writeContract({ address: pm08, abi: relayerPaymasterAbi, functionName: 'withdrawTo', args: [BENEFICIARY, 1000n] });
    await a.pub.waitForTransactionReceipt({ hash });
    expect(await deposit(a, pm08)).toBe(before - 1000n);
  });

  it('only the EntryPoint calls validation', async () => {
    const op = await op08(a, pm08, target);
    await expect(
      a.pub.readContract({
        account: a.account(OTHER),
        address: pm08,
        abi: relayerPaymasterAbi,
        functionName: 'validatePaymasterUserOp',
        args: [toPackedUserOperation(op), `0x${'00'.repeat(32)}`, 0n],
      }),
    ).rejects.toThrow(/NotEntryPoint/);
  });

  it('pays for a v0.7 account created in the operation (SimpleAccount from its factory)', async () => {
    const pm07 = await deployPaymaster(a, ENTRY_POINT_V07);
    const factoryArt = aaArtifact('0.7', 'SimpleAccountFactory');
    const deploy = await a.wallet(4).deployContract({ abi: factoryAbi, bytecode: factoryArt.bytecode, args: [ENTRY_POINT_V07] });
    const factory = (await a.pub.waitForTransactionReceipt({ hash: deploy })).contractAddress!;
    const owner = privateKeyToAccount(generatePrivateKey());
    const sender = (await a.pub.readContract({ address: factory, abi: factoryAbi, functionName: 'getAddress', args: [owner.address, 0n] })) as Address;
    const op: UserOperation<'0.7'> = {
      sender,
      nonce: 0n,
      factory,
      factoryData: encodeFunctionData({ abi: factoryAbi, functionName: 'createAccount', args: [owner.address, 0n] }),
      callData: encodeFunctionData({ abi: accountAbi, functionName: 'execute', args: [target, 0n, '0x'] }),
      callGasLimit: 100_000n,
      verificationGasLimit: 500_000n,
      preVerificationGas: 60_000n,
      ...(await fees(a)),
      paymaster: pm07,
      paymasterVerificationGasLimit: 60_000n,
      paymasterPostOpGasLimit: 0n,
      paymasterData: '0x',
      signature: '0x',
    };
    const signed = await sponsor(a, '0.7', op, owner);
    const hash = await a.wallet(BUNDLER).writeContract({
      address: ENTRY_POINT_V07,
      abi: entryPoint07Abi,
      functionName: 'handleOps',
      args: [[toPackedUserOperation(signed)], BENEFICIARY],
      gas: 2_000_000n,
    });
    const receipt = await a.pub.waitForTransactionReceipt({ hash });
    const events = parseEventLogs({ abi: entryPoint07Abi, logs: receipt.logs, eventName: 'UserOperationEvent' });
    expect(events[0]!.args).toMatchObject({ sender, paymaster: pm07, success: true });
    expect(await a.pub.getStorageAt({ address: target, slot: '0x0' })).toBe(`0x${sender.slice(2).toLowerCase().padStart(64, '0')}`);
    expect(await a.pub.getBalance({ address: sender })).toBe(0n);
  });

  it('the committed artifact is what the Solidity source compiles to', () => {
    const out = execFileSync('node', ['scripts/compile-paymaster.mjs', '--check'], { encoding: 'utf8' });
    expect(out).toMatch(/is current/);
  });
});
