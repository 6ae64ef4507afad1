// The FeeForwarder call and its authorizations: arguments in the contract's order, the entries the
// user and the relayer authorize, and signatures interoperable with the Stellar SDK's authorizeEntry.
import { Address, authorizeEntry, Keypair, StrKey, xdr } from '@stellar/stellar-sdk';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  authPayload,
  entryAccount,
  expirationLedger,
  forwardHostFunction,
  maxFeeWithSlippage,
  readForward,
  relayerInvocation,
  sameXdr,
  signatureVerifies,
  unsignedEntry,
  userInvocation,
  withSignature,
  type ForwardCall,
} from '../../../src/chains/stellar/fee-forwarder.js';

const PASSPHRASE = 'FeeForwarder Unit Test Network';
const contract = () => StrKey.encodeContract(randomBytes(32));
const user = Keypair.random();
const relayer = Keypair.random();

const call: ForwardCall = {
  forwarder: contract(),
  feeToken: contract(),
  feeAmount: 1_234n,
  maxFeeAmount: maxFeeWithSlippage(1_234n),
  expirationLedger: 5_024,
  target: contract(),
  targetFn: 'transfer',
  targetArgs: [Address.fromString(user.publicKey()).toScVal(), xdr.ScVal.scvU32(7)],
  user: user.publicKey(),
  relayer: relayer.publicKey(),
};

describe('the FeeForwarder call', () => {
  it("uses the reference's 5% max-fee slippage (rounded down) and its ledger window (rounded up, at least one)", () => {
    expect(maxFeeWithSlippage(1_000n)).toBe(1_050n);
    expect(maxFeeWithSlippage(1_234n)).toBe(1_295n);
    expect(expirationLedger(5_000, 120)).toBe(5_024);
    expect(expirationLedger(5_000, 121)).toBe(5_025);
    expect(expirationLedger(5_000, 0)).toBe(5_001);
  });

  it('reads back the forward call it builds, and nothing else', () => {
    const fn = forwardHostFunction(call);
    const back = readForward(fn, call.forwarder)!;
    expect({ ...back, targetArgs: undefined }).toEqual({ ...call, targetArgs: undefined });
    expect(sameXdr(xdr.ScVal.scvVec(back.targetArgs), xdr.ScVal.scvVec(call.targetArgs))).toBe(true);
    expect(readForward(fn, contract())).toBeNull();
    const other = xdr.HostFunction.hostFunctionTypeInvokeContract(
      new xdr.InvokeContractArgs({ contractAddress: Address.fromString(call.forwarder).toScAddress(), functionName: 'forward', args: [] }),
    );
    expect(readForward(other, call.forwarder)).toBeNull();
  });

  it('asks the user for forward without fee_amount and relayer, with the approve of the max fee and the call under it', () => {
    const inv = userInvocation(call);
    const args = inv.function().contractFn().args();
    expect(args).toHaveLength(6);
    expect(args[1].toXDR()).toEqual(forwardHostFunction(call).invokeContract().args()[2].toXDR()); // max_fee_amount
    const [approve, target] = inv.subInvocations().map((s) => s.function().contractFn());
    expect(approve.functionName().toString()).toBe('approve');
    expect(Address.fromScAddress(approve.contractAddress()).toString()).toBe(call.feeToken);
    expect(Address.fromScVal(approve.args()[1]).toString()).toBe(call.forwarder);
    expect(target.functionName().toString()).toBe('transfer');
    expect(relayerInvocation(call).function().contractFn().args()).toHaveLength(9);
  });

  it('signs and verifies as the Stellar SDK does: over the HashIdPreimage, bound to the network and the entry', async () => {
    const entry = unsignedEntry(user.publicKey(), userInvocation(call), 42n, call.expirationLedger);
    expect(entryAccount(entry)).toBe(user.publicKey());
    expect(signatureVerifies(entry, PASSPHRASE)).toBe(false);
    // Signed by the SDK, verified here.
    const bySdk = await authorizeEntry(entry, user, call.expirationLedger, PASSPHRASE);
    expect(signatureVerifies(bySdk, PASSPHRASE)).toBe(true);
    expect(signatureVerifies(bySdk, 'Another Network')).toBe(false);
    // Signed here: the same bytes as the SDK's (ed25519 is deterministic).
    const mine = withSignature(entry, user.publicKey(), user.sign(authPayload(entry, PASSPHRASE)));
    expect(mine.toXDR('base64')).toBe(bySdk.toXDR('base64'));
    // Altered after signing, or signed by another key.
    const altered = xdr.SorobanAuthorizationEntry.fromXDR(mine.toXDR());
    altered
      .credentials()
      .address()
      .signatureExpirationLedger(call.expirationLedger + 1);
    expect(signatureVerifies(altered, PASSPHRASE)).toBe(false);
    expect(signatureVerifies(withSignature(entry, user.publicKey(), relayer.sign(authPayload(entry, PASSPHRASE))), PASSPHRASE)).toBe(false);
    const sourceAccount = new xdr.SorobanAuthorizationEntry({
      credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
      rootInvocation: entry.rootInvocation(),
    });
    expect(entryAccount(sourceAccount)).toBeNull();
    expect(signatureVerifies(sourceAccount, PASSPHRASE)).toBe(false);
  });
});
