// Web3 Secret Storage ("V3") keystores: the encrypted JSON key format used by
// geth, ethers, MetaMask exports and OpenZeppelin Relayer's `local` signer.
import { createCipheriv, createDecipheriv, pbkdf2, randomBytes, randomUUID, scrypt, timingSafeEqual } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { Worker } from 'node:worker_threads';
import { keccak256 } from 'viem';

export class KeystoreError extends Error {
  override name = 'KeystoreError';
}

export interface ScryptParams {
  dklen: number;
  n: number;
  r: number;
  p: number;
  salt: string;
}

export interface Pbkdf2Params {
  dklen: number;
  c: number;
  prf: 'hmac-sha256';
  salt: string;
}

export interface KeystoreV3 {
  version: 3;
  id: string;
  address?: string;
  crypto: {
    cipher: 'aes-128-ctr';
    cipherparams: { iv: string };
    ciphertext: string;
    mac: string;
  } & ({ kdf: 'scrypt'; kdfparams: ScryptParams } | { kdf: 'pbkdf2'; kdfparams: Pbkdf2Params });
}

export interface EncryptOptions {
  kdf?: 'scrypt' | 'pbkdf2';
  /** scrypt cost N (power of two). Default 262144, as geth. */
  n?: number;
  /** pbkdf2 iteration count. Default 262144. */
  c?: number;
  /** secp256k1 address to record in the file (0x prefix optional). */
  address?: string;
}

const SECRET_LENGTH = 32;
const DEFAULT_COST = 262144;

type Kdf = { kdf: 'scrypt'; n: number; r: number; p: number; dklen: number; salt: Buffer } | { kdf: 'pbkdf2'; c: number; dklen: number; salt: Buffer };

type ScryptKdf = Extract<Kdf, { kdf: 'scrypt' }>;

const pbkdf2Async = promisify(pbkdf2);

function nodeScrypt(passphrase: string, k: ScryptKdf): Promise<Buffer> {
  // Node's default maxmem (32 MiB) is too small for N=262144, r=8.
  const maxmem = 128 * k.r * (k.n + k.p + 2) + 1024 * 1024;
  return new Promise((resolve, reject) =>
    scrypt(passphrase, k.salt, k.dklen, { N: k.n, r: k.r, p: k.p, maxmem }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

// noble's scrypt takes the parameters OpenSSL refuses. Its scryptAsync yields only to microtasks
// (noble-hashes issue 113), so timers and I/O would wait out the whole derivation: it runs on a
// thread of its own instead.
const nobleScrypt = createRequire(import.meta.url).resolve('@noble/hashes/scrypt.js');
const SCRYPT_THREAD = `const { parentPort, workerData: w } = require('node:worker_threads');
parentPort.postMessage(require(w.module).scrypt(w.passphrase, w.salt, w.opts));`;

function threadScrypt(passphrase: string, k: ScryptKdf): Promise<Buffer> {
  const opts = { N: k.n, r: k.r, p: k.p, dkLen: k.dklen };
  const worker = new Worker(SCRYPT_THREAD, { eval: true, execArgv: [], workerData: { module: nobleScrypt, passphrase, salt: k.salt, opts } });
  return new Promise((resolve, reject) => {
    worker.once('message', (key: Uint8Array) => resolve(Buffer.from(key)));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`scrypt thread exited with code ${code}`)));
  });
}

async function deriveKey(passphrase: string, k: Kdf): Promise<Buffer> {
  try {
    if (k.kdf === 'pbkdf2') return await pbkdf2Async(passphrase, k.salt, k.c, k.dklen, 'sha256');
    // OpenSSL enforces RFC 7914's N < 2^(16r) and rejects the rest. The
    // published V3 test vector (and old keystores) use r=1 with N=2^18.
    if (k.n >= 2 ** (16 * k.r)) return await threadScrypt(passphrase, k);
    return await nodeScrypt(passphrase, k);
  } catch (err) {
    throw new KeystoreError(`${k.kdf} key derivation failed: ${(err as Error).message}`);
  }
}

function computeMac(derivedKey: Buffer, ciphertext: Buffer): Buffer {
  const hex = keccak256(Buffer.concat([derivedKey.subarray(16, 32), ciphertext]));
  return Buffer.from(hex.slice(2), 'hex');
}

function aes128ctr(key: Buffer, iv: Buffer, data: Buffer, encrypt: boolean): Buffer {
  const make = encrypt ? createCipheriv : createDecipheriv;
  const c = make('aes-128-ctr', key.subarray(0, 16), iv);
  return Buffer.concat([c.update(data), c.final()]);
}

// --- parsing -------------------------------------------------------------

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fieldError(field: string, problem: string): KeystoreError {
  return new KeystoreError(`malformed keystore: ${field} ${problem}`);
}

function hexField(obj: Record<string, unknown>, field: string, path: string, bytes?: number): Buffer {
  const v = obj[field];
  if (typeof v !== 'string' || !/^([0-9a-fA-F]{2})+$/.test(v)) {
    throw fieldError(`${path}.${field}`, 'must be a non-empty hex string');
  }
  const buf = Buffer.from(v, 'hex');
  if (bytes !== undefined && buf.length !== bytes) {
    throw fieldError(`${path}.${field}`, `must be ${bytes} bytes, got ${buf.length}`);
  }
  return buf;
}

function intField(obj: Record<string, unknown>, field: string, path: string, min = 1): number {
  const v = obj[field];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) {
    throw fieldError(`${path}.${field}`, `must be an integer >= ${min}`);
  }
  return v;
}

function objectField(obj: Record<string, unknown>, field: string, path: string): Record<string, unknown> {
  const v = obj[field];
  if (!isObject(v)) throw fieldError(path ? `${path}.${field}` : field, 'must be an object');
  return v;
}

function parseKdf(crypto: Record<string, unknown>): Kdf {
  const params = objectField(crypto, 'kdfparams', 'crypto');
  const path = 'crypto.kdfparams';
  const dklen = intField(params, 'dklen', path, 32);
  const salt = hexField(params, 'salt', path);
  if (crypto.kdf === 'scrypt') {
    const n = intField(params, 'n', path, 2);
    if ((n & (n - 1)) !== 0) throw fieldError(`${path}.n`, 'must be a power of two');
    return { kdf: 'scrypt', n, r: intField(params, 'r', path), p: intField(params, 'p', path), dklen, salt };
  }
  if (crypto.kdf === 'pbkdf2') {
    if (params.prf !== 'hmac-sha256') throw fieldError(`${path}.prf`, 'must be "hmac-sha256"');
    return { kdf: 'pbkdf2', c: intField(params, 'c', path), dklen, salt };
  }
  throw fieldError('crypto.kdf', 'must be "scrypt" or "pbkdf2"');
}

function parseKeystore(json: unknown) {
  let ks = json;
  if (typeof ks === 'string') {
    try {
      ks = JSON.parse(ks);
    } catch {
      throw new KeystoreError('malformed keystore: not valid JSON');
    }
  }
  if (!isObject(ks)) throw new KeystoreError('malformed keystore: expected a JSON object');
  if (ks.version !== 3) throw fieldError('version', 'must be 3');
  // Some exporters (e.g. MyEtherWallet) capitalise "Crypto"; geth accepts both.
  const crypto = objectField(ks, !('crypto' in ks) && 'Crypto' in ks ? 'Crypto' : 'crypto', '');
  if (crypto.cipher !== 'aes-128-ctr') throw fieldError('crypto.cipher', 'must be "aes-128-ctr"');
  const iv = hexField(objectField(crypto, 'cipherparams', 'crypto'), 'iv', 'crypto.cipherparams', 16);
  const ciphertext = hexField(crypto, 'ciphertext', 'crypto', SECRET_LENGTH);
  const mac = hexField(crypto, 'mac', 'crypto', 32);
  return { kdf: parseKdf(crypto), iv, ciphertext, mac };
}

// --- public API ----------------------------------------------------------

/** Decrypts a V3 keystore (object or JSON string) and returns the 32-byte secret. */
export async function decryptKeystore(json: unknown, passphrase: string): Promise<Uint8Array> {
  const { kdf, iv, ciphertext, mac } = parseKeystore(json);
  const derivedKey = await deriveKey(passphrase, kdf);
  try {
    if (!timingSafeEqual(computeMac(derivedKey, ciphertext), mac)) {
      throw new KeystoreError('keystore MAC mismatch: wrong passphrase?');
    }
    return new Uint8Array(aes128ctr(derivedKey, iv, ciphertext, false));
  } finally {
    derivedKey.fill(0);
  }
}

/** Encrypts a 32-byte secret into a V3 keystore object. */
export async function encryptKeystore(secret: Uint8Array, passphrase: string, opts: EncryptOptions = {}): Promise<KeystoreV3> {
  if (secret.length !== SECRET_LENGTH) {
    throw new KeystoreError(`secret must be ${SECRET_LENGTH} bytes, got ${secret.length}`);
  }
  let address: string | undefined;
  if (opts.address !== undefined) {
    address = opts.address.toLowerCase().replace(/^0x/, '');
    if (!/^[0-9a-f]{40}$/.test(address)) throw new KeystoreError('address must be 20 bytes of hex');
  }

  const salt = randomBytes(32);
  const iv = randomBytes(16);
  const kdf: Kdf =
    opts.kdf === 'pbkdf2'
      ? { kdf: 'pbkdf2', c: opts.c ?? DEFAULT_COST, dklen: 32, salt }
      : { kdf: 'scrypt', n: opts.n ?? DEFAULT_COST, r: 8, p: 1, dklen: 32, salt };
  if (kdf.kdf === 'scrypt' && (kdf.n < 2 || (kdf.n & (kdf.n - 1)) !== 0)) {
    throw new KeystoreError('scrypt n must be a power of two');
  }

  const derivedKey = await deriveKey(passphrase, kdf);
  const ciphertext = aes128ctr(derivedKey, iv, Buffer.from(secret), true);
  const mac = computeMac(derivedKey, ciphertext).toString('hex');
  derivedKey.fill(0);
  const kdfJson =
    kdf.kdf === 'scrypt'
      ? { kdf: 'scrypt' as const, kdfparams: { dklen: kdf.dklen, n: kdf.n, r: kdf.r, p: kdf.p, salt: salt.toString('hex') } }
      : { kdf: 'pbkdf2' as const, kdfparams: { dklen: kdf.dklen, c: kdf.c, prf: 'hmac-sha256' as const, salt: salt.toString('hex') } };

  return {
    version: 3,
    id: randomUUID(),
    ...(address !== undefined && { address }),
    crypto: {
      cipher: 'aes-128-ctr',
      cipherparams: { iv: iv.toString('hex') },
      ciphertext: ciphertext.toString('hex'),
      ...kdfJson,
      mac,
    },
  };
}

/** Reads and decrypts a keystore file; errors name the file. */
export async function readKeystoreFile(path: string, passphrase: string): Promise<Uint8Array> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new KeystoreError(`${path}: cannot read keystore: ${(err as Error).message}`);
  }
  try {
    return await decryptKeystore(text, passphrase);
  } catch (err) {
    if (err instanceof KeystoreError) throw new KeystoreError(`${path}: ${err.message}`);
    throw err;
  }
}

/** Writes a keystore with owner-only permissions; refuses to overwrite unless `overwrite`. */
export async function writeKeystoreFile(path: string, keystore: KeystoreV3, opts: { overwrite?: boolean } = {}): Promise<void> {
  try {
    await writeFile(path, `${JSON.stringify(keystore, null, 2)}\n`, {
      mode: 0o600,
      flag: opts.overwrite ? 'w' : 'wx',
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new KeystoreError(`${path} already exists`);
    }
    throw err;
  }
  // `mode` only applies to newly created files.
  if (opts.overwrite) await chmod(path, 0o600);
}
