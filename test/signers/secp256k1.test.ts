import { randomBytes } from 'node:crypto';
import { bytesToHex, keccak256 as viemKeccak256, pad, parseTransaction, recoverTransactionAddress, type TransactionSerializable } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { signRecoverable } from 'tiny-secp256k1';
import { createLocalSigner, type EvmSigner } from '../../src/signers/index.js';
import { evmAddressOf, nativeSign, recoverEvmAddress } from '../../src/signers/secp256k1.js';
import { keccak256, keccak256Bytes } from '../../src/lib/keccak.js';

const TXS: TransactionSerializable[] = [
  {
    chainId: 31337,
    type: 'eip1559',
    to: '0x000000000000000000000000000000000000dEaD',
    value: 1n,
    gas: 21_000n,
    nonce: 7,
    maxFeePerGas: 3_000_000_000n,
    maxPriorityFeePerGas: 1n,
  },
  {
    chainId: 1,
    type: 'legacy',
    to: '0x000000000000000000000000000000000000dEaD',
    value: 10n ** 18n,
    gas: 50_000n,
    nonce: 0,
    gasPrice: 20_000_000_000n,
    data: '0xabcdef01',
  },
  { chainId: 10, type: 'eip2930', to: '0x000000000000000000000000000000000000dEaD', value: 0n, gas: 30_000n, nonce: 123456, gasPrice: 1n, accessList: [] },
];

describe('EVM transaction signing', () => {
  it('makes exactly the bytes viem makes for every transaction type, recoverable to the signer', async () => {
    for (let i = 0; i < 200; i++) {
      const secret = randomBytes(32);
      const ours = createLocalSigner(new Uint8Array(secret), 'evm') as EvmSigner;
      const reference = privateKeyToAccount(bytesToHex(secret));
      for (const tx of TXS) {
        const raw = await ours.account.signTransaction(tx);
        expect(raw).toBe(await reference.signTransaction(tx));
        expect(await recoverTransactionAddress({ serializedTransaction: raw as never })).toBe(ours.address);
        expect(parseTransaction(raw).nonce).toBe(tx.nonce);
        // The signer's own account of it is what the bytes say, r and s at their full 32 bytes
        // (the bytes drop an r or s's leading zero bytes, about one signature in 128).
        const signed = await ours.signTransaction(tx);
        const parsed = parseTransaction(raw);
        expect(signed).toEqual({ raw, hash: viemKeccak256(raw), signature: { r: pad(parsed.r!), s: pad(parsed.s!), yParity: parsed.yParity } });
      }
    }
  });

  it('signs with the native libsecp256k1 here, byte for byte as its WebAssembly build does', () => {
    const native = nativeSign();
    expect(native, 'the native addon of package secp256k1 did not load').toBeDefined();
    for (let i = 0; i < 200; i++) {
      const [digest, key] = [randomBytes(32), randomBytes(32)];
      const ours = native!(digest, key);
      const wasm = signRecoverable(digest, key);
      expect(bytesToHex(ours.signature)).toBe(bytesToHex(wasm.signature));
      expect(ours.recoveryId).toBe(wasm.recoveryId);
    }
  });

  it('derives the address viem derives from a key, with libsecp256k1', () => {
    for (let i = 0; i < 200; i++) {
      const key = randomBytes(32);
      expect(evmAddressOf(key)).toBe(privateKeyToAccount(bytesToHex(key)).address);
    }
  });

  it('hashes as viem does at every length around the sponge block (136 bytes), and refuses what is not hex', () => {
    for (const n of [0, 1, 31, 32, 113, 135, 136, 137, 271, 272, 273, 1000]) {
      const bytes = new Uint8Array(randomBytes(n));
      const hex = bytesToHex(bytes);
      expect(keccak256(hex)).toBe(viemKeccak256(hex));
      expect(keccak256(bytes)).toBe(viemKeccak256(bytes));
      expect(bytesToHex(keccak256Bytes(hex))).toBe(viemKeccak256(hex));
    }
    for (const bad of ['0xabc', '0xzz', 'abcd', '0x12g4']) expect(() => keccak256(bad as `0x${string}`)).toThrow(/not hex/);
  });
});

describe('recovering the signer of a digest', () => {
  it('finds the address viem finds, and none or another for a damaged signature', async () => {
    const account = privateKeyToAccount(bytesToHex(randomBytes(32)));
    for (let i = 0; i < 8; i++) {
      const digest = bytesToHex(randomBytes(32));
      const sig = await account.sign({ hash: digest });
      const r = `0x${sig.slice(2, 66)}` as const;
      const s = `0x${sig.slice(66, 130)}` as const;
      const yParity = Number.parseInt(sig.slice(130), 16) - 27;
      const bytes = Buffer.from(digest.slice(2), 'hex');
      expect(recoverEvmAddress(bytes, { r, s, yParity })).toBe(account.address);
      expect(recoverEvmAddress(bytes, { r, s, yParity: yParity + 27 })).toBe(account.address);
      // The other parity is another point: another address, or none.
      expect(recoverEvmAddress(bytes, { r, s, yParity: 1 - yParity })).not.toBe(account.address);
      expect(recoverEvmAddress(bytes, { r, s, yParity: 2 })).toBeUndefined();
    }
    const digest = new Uint8Array(32).fill(1);
    expect(recoverEvmAddress(digest, { r: pad('0x0'), s: pad('0x1'), yParity: 0 })).toBeUndefined();
    expect(recoverEvmAddress(digest, { r: `0x${'ff'.repeat(32)}`, s: pad('0x1'), yParity: 0 })).toBeUndefined();
    expect(recoverEvmAddress(digest, { r: '0xzz' as never, s: pad('0x1'), yParity: 0 })).toBeUndefined();
  });
});
