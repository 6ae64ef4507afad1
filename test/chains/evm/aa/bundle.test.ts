// Bundles on anvil: several users' operations in one type-4 handleOps; one invalidated after it was
// accepted is dropped with the EntryPoint's reason and the others land; outcomes come from the logs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFunctionData, parseAbi, toFunctionSelector } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC } from '../../../../src/chains/evm/anvil.js';
import { authorizationToJson, unsignedTransaction } from '../../../../src/chains/evm/unsigned.js';
import { createLocalSigner, type EvmSigner } from '../../../../src/signers/index.js';
import { relayerPaymasterAbi } from '../../../../src/chains/evm/aa/paymaster.js';
import { ENTRY_POINT_V08, SIMPLE_7702_ACCOUNT } from '../../../../src/chains/evm/aa/canonical.js';
import { outcomesOf, prepareBundle } from '../../../../src/chains/evm/aa/bundle.js';
import { simulateValidation } from '../../../../src/chains/evm/aa/simulate.js';
import { userOpHash } from '../../../../src/chains/evm/aa/userop.js';
import { gaslessKit, startAaChain, type AaChain, type GaslessKit } from './support.js';

const RELAYER = 1;
const BENEFICIARY = '0x000000000000000000000000000000000000bEEF';

let c: AaChain;
let kit: GaslessKit;
afterAll(() => c?.anvil.stop());
beforeAll(async () => {
  c = await startAaChain();
  kit = await gaslessKit(c, RELAYER);
});

async function accepted() {
  const { user, op } = await kit.estimated();
  const signed = await kit.sign(op, user);
  await simulateValidation(kit.rpc, signed, '0.8'); // as eth_sendUserOperation would
  return { user, op: signed };
}

describe('bundles', () => {
  it('three accepted operations, one invalidated since: the bundle drops it with its reason and the other two land', async () => {
    const ops = await Promise.all([accepted(), accepted(), accepted()]);
    // The second user's operation is included by someone else first: its nonce is used.
    const relayer = c.account(RELAYER).address;
    const other = await prepareBundle(kit.rpc, '0.8', [{ id: 'elsewhere', op: ops[1]!.op }], relayer, BENEFICIARY);
    const hash0 = await c.wallet(3).sendTransaction({ to: ENTRY_POINT_V08, data: other.data, authorizationList: other.authorizationList, gas: other.gasLimit });
    expect((await c.pub.waitForTransactionReceipt({ hash: hash0 })).status).toBe('success');

    const items = ops.map((o, i) => ({ id: `op${i}`, op: o.op }));
    const bundle = await prepareBundle(kit.rpc, '0.8', items, relayer, BENEFICIARY);
    expect(bundle.dropped).toEqual([{ id: 'op1', reason: 'AA25 invalid account nonce' }]);
    expect(bundle.items.map((i) => i.id)).toEqual(['op0', 'op2']);
    expect(bundle.authorizationList).toEqual([ops[0]!.op.authorization, ops[2]!.op.authorization]);

    const before = await c.pub.getBalance({ address: relayer });
    const hash = await c
      .wallet(RELAYER)
      .sendTransaction({ to: ENTRY_POINT_V08, data: bundle.data, authorizationList: bundle.authorizationList, gas: bundle.gasLimit });
    const receipt = await c.pub.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
    expect(receipt.type).toBe('eip7702');
    const outcomes = outcomesOf(receipt.logs, '0.8');
    expect(outcomes.size).toBe(2);
    for (const k of [0, 2]) {
      const o = outcomes.get(userOpHash(ops[k]!.op, '0.8', c.chain.id));
      expect(o).toMatchObject({ sender: ops[k]!.user.address, success: true });
      expect(o!.actualGasCost).toBeGreaterThan(0n);
      expect(await c.pub.getBalance({ address: ops[k]!.user.address })).toBe(0n);
    }
    // The relayer paid the transaction (the paymaster's deposit paid the operations, to the beneficiary).
    expect(await c.pub.getBalance({ address: relayer })).toBeLessThan(before);
    expect(receipt.gasUsed).toBeLessThan(bundle.gasLimit);
  });

  it('an operation whose call reverts is included, not successful, with the revert data', async () => {
    const { user, op } = await kit.estimated();
    // The user asks the paymaster for its deposit: refused with NotOwner().
    const withdraw = encodeFunctionData({ abi: relayerPaymasterAbi, functionName: 'withdrawTo', args: [user.address, 1n] });
    const callData = encodeFunctionData({
      abi: parseAbi(['function execute(address target, uint256 value, bytes data)']),
      functionName: 'execute',
      args: [kit.pm, 0n, withdraw],
    });
    const signed = await kit.sign({ ...op, callData }, user);
    const bundle = await prepareBundle(kit.rpc, '0.8', [{ id: 'r', op: signed }], c.account(RELAYER).address, BENEFICIARY);
    expect(bundle.dropped).toEqual([]);
    const hash = await c
      .wallet(RELAYER)
      .sendTransaction({ to: ENTRY_POINT_V08, data: bundle.data, authorizationList: bundle.authorizationList, gas: bundle.gasLimit });
    const outcome = outcomesOf((await c.pub.waitForTransactionReceipt({ hash })).logs, '0.8').get(userOpHash(signed, '0.8', c.chain.id));
    expect(outcome).toMatchObject({ success: false });
    expect(outcome!.revertReason).toContain(toFunctionSelector('NotOwner()').slice(2));
  });

  it("an authorization past its sender's nonce: left out when the sender is delegated there already, else its operation dropped", async () => {
    const [moot, stale, fresh] = await Promise.all([accepted(), accepted(), accepted()]);
    // The first user's authorization applied by someone else's type-4 transaction (as a bundle that
    // reverted would); the second user's account nonce moved on without it.
    const applied = await c.wallet(3).sendTransaction({ to: c.account(3).address, authorizationList: [moot.op.authorization!], gas: 100_000n });
    expect((await c.pub.waitForTransactionReceipt({ hash: applied })).status).toBe('success');
    await c.pub.request({ method: 'anvil_setNonce' as never, params: [stale.user.address, '0x1'] as never });
    const items = [moot, stale, fresh].map((o, i) => ({ id: `op${i}`, op: o.op }));
    const bundle = await prepareBundle(kit.rpc, '0.8', items, c.account(RELAYER).address, BENEFICIARY);
    expect(bundle.dropped).toEqual([
      { id: 'op1', reason: expect.stringMatching(/^eip7702Auth: its nonce 0 is not the sender's account nonce \(1\) any more/) },
    ]);
    expect(bundle.items.map((i) => i.id)).toEqual(['op0', 'op2']);
    expect(bundle.authorizationList).toEqual([fresh.op.authorization]);
    const hash = await c
      .wallet(RELAYER)
      .sendTransaction({ to: ENTRY_POINT_V08, data: bundle.data, authorizationList: bundle.authorizationList, gas: bundle.gasLimit });
    const outcomes = outcomesOf((await c.pub.waitForTransactionReceipt({ hash })).logs, '0.8');
    expect([...outcomes.values()].map((o) => [o.sender, o.success])).toEqual([
      [moot.user.address, true],
      [fresh.user.address, true],
    ]);
  });

  it('a bundle whose every operation fails is empty', async () => {
    const { user, op } = await kit.estimated();
    const stale = await kit.sign({ ...op, nonce: 9n }, user);
    const bundle = await prepareBundle(kit.rpc, '0.8', [{ id: 'x', op: stale }], c.account(RELAYER).address, BENEFICIARY);
    expect(bundle).toMatchObject({ items: [], dropped: [{ id: 'x', reason: 'AA25 invalid account nonce' }], data: '0x' });
  });
});

describe("the EVM pipeline's transaction for a bundle", () => {
  it("is type 4 when the request carries authorizations, signed by the project's signer, and lands", async () => {
    const { user, op } = await kit.estimated();
    const signed = await kit.sign(op, user);
    const relayer = c.account(RELAYER);
    const bundle = await prepareBundle(kit.rpc, '0.8', [{ id: 'p', op: signed }], relayer.address, BENEFICIARY);
    const signer = createLocalSigner(mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: RELAYER }).getHdKey().privateKey!, 'evm') as EvmSigner;
    expect(signer.address).toBe(relayer.address);
    const authorizations = bundle.authorizationList.map(authorizationToJson);
    const block = await c.pub.getBlock();
    const fees = { maxFeePerGas: block.baseFeePerGas! * 2n + 1n, maxPriorityFeePerGas: 1n };
    const body = {
      chainId: c.chain.id,
      nonce: await c.pub.getTransactionCount({ address: relayer.address }),
      gas: bundle.gasLimit,
      to: ENTRY_POINT_V08,
      value: 0n,
      data: bundle.data,
    };
    const unsigned = unsignedTransaction(body, fees, authorizations);
    expect(unsigned.type).toBe('eip7702');
    expect(unsignedTransaction(body, fees).type).toBe('eip1559');
    expect(unsignedTransaction(body, { gasPrice: 5n }, authorizations)).toMatchObject({ type: 'eip7702', maxFeePerGas: 5n, maxPriorityFeePerGas: 5n });
    const { raw, hash } = await signer.signTransaction(unsigned);
    expect(await c.pub.sendRawTransaction({ serializedTransaction: raw })).toBe(hash);
    const receipt = await c.pub.waitForTransactionReceipt({ hash });
    expect(receipt.type).toBe('eip7702');
    expect(outcomesOf(receipt.logs, '0.8').get(userOpHash(signed, '0.8', c.chain.id))?.success).toBe(true);
    expect(await c.pub.getCode({ address: user.address })).toBe(`0xef0100${SIMPLE_7702_ACCOUNT.slice(2).toLowerCase()}`);
  });
});
