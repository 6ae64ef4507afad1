// The pure parts of gasless Stellar: fee tokens, the policy's token list, the reference's rules for
// a gasless transaction, and the fee payment a build appends.
import { Account, Asset, Keypair, Operation, TransactionBuilder, type Transaction } from '@stellar/stellar-sdk';
import { describe, expect, it } from 'vitest';
import { checkGasless, horizonOf, parseFeeToken, tokenEntry, withFeePayment } from '../../../src/chains/stellar/gasless.js';

const PASSPHRASE = 'Gasless Unit Test Network';
const issuer = Keypair.random().publicKey();
const relayer = Keypair.random().publicKey();
const user = Keypair.random().publicKey();
const USDC = `USDC:${issuer}`;
const NOW = 1_800_000_000;

function tx(ops: ReturnType<typeof Operation.payment>[], opts: { source?: string; maxTime?: number; minTime?: number } = {}): Transaction {
  const b = new TransactionBuilder(new Account(opts.source ?? user, '41'), { fee: '100', networkPassphrase: PASSPHRASE });
  for (const op of ops) b.addOperation(op);
  b.setTimebounds(opts.minTime ?? 0, opts.maxTime ?? 0);
  return b.build();
}
const pay = (destination = Keypair.random().publicKey()) => Operation.payment({ destination, asset: Asset.native(), amount: '1' });

describe('fee tokens', () => {
  it('takes native, CODE:ISSUER and C… contracts, and names what is wrong otherwise', () => {
    expect(parseFeeToken('native')).toEqual({ id: 'native', native: true });
    expect(parseFeeToken(USDC)).toEqual({ id: USDC, native: false, code: 'USDC', issuer });
    expect(parseFeeToken(`LONGERCODE12:${issuer}`)).toMatchObject({ code: 'LONGERCODE12' });
    expect(parseFeeToken('CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA')).toMatchObject({ native: false, code: '' });
    expect(() => parseFeeToken(undefined)).toThrow(/^fee_token: required/);
    expect(() => parseFeeToken('USDC')).toThrow(/^fee_token: must be "native", CODE:ISSUER/);
    expect(() => parseFeeToken(`THIRTEENCHARS:${issuer}`)).toThrow(/^fee_token: must be/);
    // A broken checksum is not an issuer.
    expect(() => parseFeeToken(`USDC:${issuer.slice(0, -1)}${issuer.endsWith('A') ? 'B' : 'A'}`)).toThrow(/^fee_token: must be/);
    expect(() => parseFeeToken('CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDB')).toThrow(/not a valid contract address/);
  });

  it('takes every token when allowed_tokens is absent or empty, else only those listed', () => {
    expect(tokenEntry({}, USDC)).toBeUndefined();
    expect(tokenEntry({ allowed_tokens: [] }, USDC)).toBeUndefined();
    expect(tokenEntry({ allowed_tokens: [{ asset: USDC, max_allowed_fee: 5 }] }, USDC)).toEqual({ asset: USDC, max_allowed_fee: 5 });
    expect(() => tokenEntry({ allowed_tokens: [{ asset: USDC }] }, 'native')).toThrow('policy allowed_tokens: fee token native is not allowed');
  });
});

describe("the reference's rules for a gasless transaction", () => {
  it('passes a user payment within its time bounds', () => {
    expect(() => checkGasless(tx([pay()], { maxTime: NOW + 60 }), relayer, NOW, 1)).not.toThrow();
  });

  it("refuses the relayer's own transaction, refused operation types, too many operations, and a transaction out of its time bounds", () => {
    expect(() => checkGasless(tx([pay()], { source: relayer }), relayer, NOW)).toThrow(/^transaction: its source account cannot be the relayer/);
    const merge = Operation.accountMerge({ destination: relayer }) as unknown as ReturnType<typeof Operation.payment>;
    expect(() => checkGasless(tx([pay(), merge]), relayer, NOW)).toThrow(/^transaction: operation 1: AccountMerge operations are not allowed/);
    const setOptions = Operation.setOptions({ homeDomain: 'example.org' }) as unknown as ReturnType<typeof Operation.payment>;
    expect(() => checkGasless(tx([setOptions]), relayer, NOW)).toThrow(/operation 0: SetOptions/);
    const fromRelayer = Operation.payment({ source: relayer, destination: user, asset: Asset.native(), amount: '1' });
    expect(() => checkGasless(tx([fromRelayer]), relayer, NOW)).toThrow(/operation 0: its source cannot be the relayer/);
    expect(() => checkGasless(tx(Array.from({ length: 100 }, () => pay())), relayer, NOW, 1)).toThrow(/too many operations: 101 with the fee payment/);
    expect(() => checkGasless(tx([pay()], { maxTime: NOW - 1 }), relayer, NOW)).toThrow(/^transaction: has expired/);
    expect(() => checkGasless(tx([pay()], { minTime: NOW + 10 }), relayer, NOW)).toThrow(/^transaction: is not valid yet/);
  });
});

describe('the fee payment a build appends', () => {
  it("appends the user's payment to the relayer, prices every operation, bounds it to maxTime and drops signatures", () => {
    const kp = Keypair.random();
    const own = tx([pay()], { source: kp.publicKey(), minTime: 5, maxTime: NOW + 999 });
    own.sign(kp);
    const built = withFeePayment(own, { relayer, token: parseFeeToken(USDC), amount: 165n }, NOW + 120, PASSPHRASE);
    expect(built.source).toBe(kp.publicKey());
    expect(built.sequence).toBe(own.sequence);
    expect(built.fee).toBe('200');
    expect(built.signatures).toHaveLength(0);
    expect(built.timeBounds).toEqual({ minTime: '0', maxTime: String(NOW + 120) });
    expect(built.operations[0]).toEqual(own.operations[0]);
    expect(built.operations[1]).toMatchObject({ type: 'payment', destination: relayer, amount: '0.0000165' });
    expect((built.operations[1] as Operation.Payment).asset.equals(new Asset('USDC', issuer))).toBe(true);
  });
});

describe('the Horizon of a network', () => {
  it('is its horizon_url, else the public one of mainnet and testnet, else none', () => {
    expect(horizonOf({ fields: { horizon_url: 'http://127.0.0.1:8000' }, passphrase: 'Test SDF Network ; September 2015' })).toBe('http://127.0.0.1:8000');
    expect(horizonOf({ fields: {}, passphrase: 'Public Global Stellar Network ; September 2015' })).toBe('https://horizon.stellar.org');
    expect(horizonOf({ fields: {}, passphrase: 'Test SDF Network ; September 2015' })).toBe('https://horizon-testnet.stellar.org');
    expect(horizonOf({ fields: {}, passphrase: 'Standalone Network ; February 2017' })).toBeUndefined();
  });
});
