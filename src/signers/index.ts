// Local (in-process) signers built from a 32-byte secret, typically decrypted
// from a keystore. The secret is only ever held in closures, never as a
// property, so a signer can be logged or serialized without leaking it.
import { createPrivateKey, createPublicKey, sign as edSign, type KeyObject } from 'node:crypto';
import { inspect } from 'node:util';
import { getAddressDecoder, type Address as SolanaAddress } from '@solana/kit';
import { Keypair } from '@stellar/stellar-sdk';
import { bytesToHex, type Address as EvmAddress, type TransactionSerializable } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { type SignedEvmTransaction, withFastSigning } from './secp256k1.js';

export type SignerKind = 'evm' | 'solana' | 'stellar';

export interface SignerInfo {
  kind: SignerKind;
  address: string;
}

interface SignerBase extends SignerInfo {
  toJSON(): SignerInfo;
}

export interface EvmSigner extends SignerBase {
  kind: 'evm';
  address: EvmAddress;
  account: PrivateKeyAccount;
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
  /** Non-enumerable: the Keypair holds the secret in its own fields. */
  keypair: Keypair;
}

export type Signer = EvmSigner | SolanaSigner | StellarSigner;
type SignerOf<K extends SignerKind> = Extract<Signer, { kind: K }>;

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

function finish<T extends SignerBase>(signer: T, hidden: Record<string, unknown> = {}): T {
  const info = (): SignerInfo => ({ kind: signer.kind, address: signer.address });
  for (const [key, value] of Object.entries(hidden)) {
    Object.defineProperty(signer, key, { value, enumerable: false });
  }
  Object.defineProperty(signer, inspect.custom, { value: () => `Signer ${JSON.stringify(info())}` });
  return Object.freeze(signer);
}

export function createLocalSigner<K extends SignerKind>(secret: Uint8Array, kind: K): SignerOf<K>;
export function createLocalSigner(secret: Uint8Array, kind: SignerKind): Signer {
  if (secret.length !== 32) throw new Error(`${kind} secret must be 32 bytes, got ${secret.length}`);

  switch (kind) {
    case 'evm': {
      // Checked here because the underlying library's error would echo the key.
      if (!isValidSecp256k1Key(secret)) throw new Error('evm secret is not a valid secp256k1 private key');
      const { account, sign } = withFastSigning(privateKeyToAccount(bytesToHex(secret)), secret);
      const address = account.address;
      return finish<EvmSigner>({ kind, address, account, signTransaction: (tx) => sign(tx), toJSON: () => ({ kind, address }) });
    }
    case 'solana': {
      const key = ed25519PrivateKey(secret);
      const address = getAddressDecoder().decode(ed25519PublicKeyBytes(key));
      return finish<SolanaSigner>({
        kind,
        address,
        sign: async (message) => new Uint8Array(edSign(null, message, key)),
        toJSON: () => ({ kind, address }),
      });
    }
    case 'stellar': {
      const keypair = Keypair.fromRawEd25519Seed(Buffer.from(secret));
      const address = keypair.publicKey();
      const signer = { kind, address, toJSON: () => ({ kind, address }) } as StellarSigner;
      return finish(signer, { keypair });
    }
    default:
      throw new Error(`unknown signer kind: ${String(kind)}`);
  }
}
