// What a relayer signs with, whatever keeps its key: local signers built from a 32-byte secret
// (typically decrypted from a keystore), held only in closures, never as a property, so a signer
// can be logged or serialized without leaking it; remote ones in ./remote.ts.
import { createPrivateKey, createPublicKey, sign as edSign, type KeyObject } from 'node:crypto';
import { inspect } from 'node:util';
import { getAddressDecoder, type Address as SolanaAddress } from '@solana/kit';
import { StrKey } from '@stellar/stellar-base';
import { bytesToHex, type Address as EvmAddress, type TransactionSerializable } from 'viem';
import type { LocalAccount } from 'viem/accounts';
import { digestAccount, evmAddressOf, localDigestSigner, transactionSigner, type SignDigest, type SignedEvmTransaction } from './secp256k1.js';

export type SignerKind = 'evm' | 'solana' | 'stellar';

export interface SignerInfo {
  kind: SignerKind;
  address: string;
}

interface SignerBase extends SignerInfo {
  toJSON(): SignerInfo;
  /** Releases what the key's custody holds open (an HSM session), if anything. */
  close?(): Promise<void>;
}

export interface EvmSigner extends SignerBase {
  kind: 'evm';
  address: EvmAddress;
  account: LocalAccount;
  /** Signs a transaction (as `account.signTransaction` does), giving its hash and signature too. */
  signTransaction(tx: TransactionSerializable): Promise<SignedEvmTransaction>;
}

export interface SolanaSigner extends SignerBase {
  kind: 'solana';
  address: SolanaAddress;
  /** Ed25519 signature (64 bytes) over `message`. */
  sign(message: Uint8Array): Promise<Uint8Array>;
}

export interface StellarSigner extends SignerBase {
  kind: 'stellar';
  address: string;
  /** Ed25519 signature (64 bytes) over `data`. */
  sign(data: Uint8Array): Promise<Uint8Array>;
}

export type Signer = EvmSigner | SolanaSigner | StellarSigner;
export type SignerOf<K extends SignerKind> = Extract<Signer, { kind: K }>;

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
// PKCS#8 wrapper for a raw Ed25519 seed (RFC 8410): the DER prefix is fixed.
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

export function isValidSecp256k1Key(secret: Uint8Array): boolean {
  if (secret.length !== 32) return false;
  const k = BigInt(bytesToHex(secret));
  return k > 0n && k < SECP256K1_N;
}

function ed25519PrivateKey(seed: Uint8Array): KeyObject {
  return createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]),
    format: 'der',
    type: 'pkcs8',
  });
}

function ed25519PublicKeyBytes(key: KeyObject): Uint8Array {
  // SPKI DER for Ed25519 is a 12-byte header followed by the 32-byte key.
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  return new Uint8Array(spki.subarray(spki.length - 32));
}

function finish<T extends SignerBase>(signer: T): T {
  const info = (): SignerInfo => ({ kind: signer.kind, address: signer.address });
  Object.defineProperty(signer, inspect.custom, { value: () => `Signer ${JSON.stringify(info())}` });
  return Object.freeze(signer);
}

/** An EVM signer whose signatures come from `signDigest`. */
export function evmSigner(address: EvmAddress, signDigest: SignDigest, close?: () => Promise<void>): EvmSigner {
  const kind = 'evm';
  return finish<EvmSigner>({
    kind,
    address,
    account: digestAccount(address, signDigest),
    signTransaction: transactionSigner(signDigest),
    toJSON: () => ({ kind, address }),
    close,
  });
}

type SignBytes = (data: Uint8Array) => Promise<Uint8Array>;
/** A Solana or Stellar signer over an Ed25519 key: `publicKey` is its 32 bytes. */
export function ed25519Signer<K extends 'solana' | 'stellar'>(kind: K, publicKey: Uint8Array, sign: SignBytes, close?: () => Promise<void>): SignerOf<K>;
export function ed25519Signer(kind: 'solana' | 'stellar', publicKey: Uint8Array, sign: SignBytes, close?: () => Promise<void>): Signer {
  const address = kind === 'solana' ? getAddressDecoder().decode(publicKey) : StrKey.encodeEd25519PublicKey(Buffer.from(publicKey));
  return finish({ kind, address, sign, close, toJSON: () => ({ kind, address }) } as SolanaSigner | StellarSigner);
}

export function createLocalSigner<K extends SignerKind>(secret: Uint8Array, kind: K): SignerOf<K>;
export function createLocalSigner(secret: Uint8Array, kind: SignerKind): Signer {
  if (secret.length !== 32) throw new Error(`${kind} secret must be 32 bytes, got ${secret.length}`);
  if (kind === 'evm') {
    // Checked here because the underlying library's error would echo the key.
    if (!isValidSecp256k1Key(secret)) throw new Error('evm secret is not a valid secp256k1 private key');
    return evmSigner(evmAddressOf(secret), localDigestSigner(secret));
  }
  if (kind === 'solana' || kind === 'stellar') {
    const key = ed25519PrivateKey(secret);
    return ed25519Signer(kind, ed25519PublicKeyBytes(key), async (data) => new Uint8Array(edSign(null, data, key)));
  }
  throw new Error(`unknown signer kind: ${String(kind)}`);
}
