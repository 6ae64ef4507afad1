import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect, promisify } from 'node:util';
import { createKeyPairFromPrivateKeyBytes, getAddressFromPublicKey, getBase58Decoder, signBytes, verifySignature } from '@solana/kit';
import { Keypair } from '@stellar/stellar-sdk';
import { bytesToHex, hexToBytes, parseGwei, recoverTransactionAddress, type TransactionSerializedEIP1559 } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import { createLocalSigner } from '../../src/signers/index.js';
import { ROOT } from '../support/service.js';
import { decryptKeystore, encryptKeystore, KeystoreError, readKeystoreFile, type KeystoreV3 } from '../../src/signers/keystore.js';

// Published Web3 Secret Storage Definition test vectors.
const VECTOR_KEY = '7a28b5ba57c53603b0b07b56bba752f7784bf506fa95edc395f5cf6c7514fe9d';
const VECTOR_PASSWORD = 'testpassword';
const PBKDF2_VECTOR = {
  crypto: {
    cipher: 'aes-128-ctr',
    cipherparams: { iv: '6087dab2f9fdbbfaddc31a909735c1e6' },
    ciphertext: '5318b4d5bcd28de64ee5559e671353e16f075ecae9f99c7a79a38af5f869aa46',
    kdf: 'pbkdf2',
    kdfparams: {
      c: 262144,
      dklen: 32,
      prf: 'hmac-sha256',
      salt: 'ae3cd4e7013836a3df6bd7241b12db061dbe2c6785853cce422d148a624ce0bd',
    },
    mac: '517ead924a9d0dc3124507e3393d175ce3ff7c1e96529c6c555ce9e51205e9b2',
  },
  id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
  version: 3,
};
const SCRYPT_VECTOR = {
  crypto: {
    cipher: 'aes-128-ctr',
    cipherparams: { iv: '83dbcc02d8ccb40e466191a123791e0e' },
    ciphertext: 'd172bf743a674da9cdad04534d56926ef8358534d458fffccd4e6ad2fbde479c',
    kdf: 'scrypt',
    kdfparams: {
      dklen: 32,
      n: 262144,
      r: 1,
      p: 8,
      salt: 'ab0c7876052600dd703518d6fc3fe8984592145b591fc8fb5c6d43190334ba19',
    },
    mac: '2103ac29920d71da29f15d75b4a16dbe95cfd7ff8faea1056c33131d846e3097',
  },
  id: '3198bc9c-6672-5ab3-d995-4942343ae5b6',
  version: 3,
};

const SECRET = hexToBytes(`0x${VECTOR_KEY}`);
const SECRET_HEX = VECTOR_KEY;

describe('decryptKeystore: published vectors', () => {
  it('decrypts the pbkdf2 vector', async () => {
    const secret = await decryptKeystore(PBKDF2_VECTOR, VECTOR_PASSWORD);
    expect(bytesToHex(secret)).toBe(`0x${VECTOR_KEY}`);
  });

  it('decrypts the scrypt vector (N=262144, r=1) without blocking the event loop', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    try {
      const secret = await decryptKeystore(JSON.stringify(SCRYPT_VECTOR), VECTOR_PASSWORD);
      expect(bytesToHex(secret)).toBe(`0x${VECTOR_KEY}`);
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
  }, 30_000);

  it('accepts the capitalised "Crypto" key some exporters write', async () => {
    const { crypto, ...rest } = PBKDF2_VECTOR;
    const secret = await decryptKeystore({ ...rest, Crypto: crypto }, VECTOR_PASSWORD);
    expect(bytesToHex(secret)).toBe(`0x${VECTOR_KEY}`);
  });
});

describe('encryptKeystore', () => {
  it.each([
    ['scrypt', { kdf: 'scrypt', n: 1024 }],
    ['pbkdf2', { kdf: 'pbkdf2', c: 1024 }],
  ] as const)('round-trips with %s', async (kdf, opts) => {
    const ks = await encryptKeystore(SECRET, 'hunter2', opts);
    expect(ks.version).toBe(3);
    expect(ks.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(ks.crypto.kdf).toBe(kdf);
    expect(ks.crypto.cipher).toBe('aes-128-ctr');
    expect(ks).not.toHaveProperty('address');
    const fromObject = await decryptKeystore(ks, 'hunter2');
    const fromJson = await decryptKeystore(JSON.parse(JSON.stringify(ks)), 'hunter2');
    expect(bytesToHex(fromObject)).toBe(`0x${VECTOR_KEY}`);
    expect(fromJson).toEqual(fromObject);
  });

  it('defaults to geth-strength scrypt (N=262144, r=8, p=1)', async () => {
    const ks = await encryptKeystore(SECRET, 'hunter2');
    expect(ks.crypto).toMatchObject({ kdf: 'scrypt', kdfparams: { n: 262144, r: 8, p: 1, dklen: 32 } });
    expect(bytesToHex(await decryptKeystore(ks, 'hunter2'))).toBe(`0x${VECTOR_KEY}`);
  }, 30_000);

  it('uses fresh salt and iv each time', async () => {
    const a = await encryptKeystore(SECRET, 'pw', { n: 1024 });
    const b = await encryptKeystore(SECRET, 'pw', { n: 1024 });
    expect(a.crypto.ciphertext).not.toBe(b.crypto.ciphertext);
    expect(a.crypto.kdfparams.salt).not.toBe(b.crypto.kdfparams.salt);
    expect(a.id).not.toBe(b.id);
  });

  it('records the address lowercase without 0x', async () => {
    const address = privateKeyToAccount(`0x${VECTOR_KEY}`).address;
    const ks = await encryptKeystore(SECRET, 'pw', { n: 1024, address });
    expect(ks.address).toBe(address.slice(2).toLowerCase());
  });

  it('rejects secrets that are not 32 bytes and bad scrypt cost', async () => {
    await expect(encryptKeystore(new Uint8Array(31), 'pw', { n: 1024 })).rejects.toThrow(/32 bytes/);
    await expect(encryptKeystore(SECRET, 'pw', { n: 1000 })).rejects.toThrow(/power of two/);
  });
});

describe('decryptKeystore: errors', () => {
  async function fastKeystore(): Promise<KeystoreV3> {
    return encryptKeystore(SECRET, 'right', { n: 1024 });
  }

  it('rejects a wrong passphrase with a clear message', async () => {
    const ks = await fastKeystore();
    const err = await decryptKeystore(ks, 'wrong').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeystoreError);
    expect((err as Error).message).toBe('keystore MAC mismatch: wrong passphrase?');
    await expect(decryptKeystore(PBKDF2_VECTOR, 'nope')).rejects.toThrow('keystore MAC mismatch: wrong passphrase?');
  });

  const mutations: [string, (ks: any) => void, RegExp][] = [
    ['version', (ks) => (ks.version = 1), /\bversion must be 3/],
    ['crypto', (ks) => delete ks.crypto, /\bcrypto must be an object/],
    ['cipher', (ks) => (ks.crypto.cipher = 'aes-128-cbc'), /crypto\.cipher/],
    ['iv', (ks) => (ks.crypto.cipherparams.iv = 'abcd'), /crypto\.cipherparams\.iv must be 16 bytes/],
    ['cipherparams', (ks) => delete ks.crypto.cipherparams, /crypto\.cipherparams must be an object/],
    ['ciphertext', (ks) => (ks.crypto.ciphertext = 'zz'), /crypto\.ciphertext must be a non-empty hex string/],
    ['mac', (ks) => (ks.crypto.mac = 42), /crypto\.mac/],
    ['kdf', (ks) => (ks.crypto.kdf = 'argon2'), /crypto\.kdf must be "scrypt" or "pbkdf2"/],
    ['kdfparams', (ks) => delete ks.crypto.kdfparams, /crypto\.kdfparams must be an object/],
    ['n', (ks) => (ks.crypto.kdfparams.n = 1000), /crypto\.kdfparams\.n must be a power of two/],
    ['r', (ks) => delete ks.crypto.kdfparams.r, /crypto\.kdfparams\.r must be an integer/],
    ['salt', (ks) => (ks.crypto.kdfparams.salt = ''), /crypto\.kdfparams\.salt/],
    ['dklen', (ks) => (ks.crypto.kdfparams.dklen = 16), /crypto\.kdfparams\.dklen/],
  ];

  it.each(mutations)('names the bad field: %s', async (_name, mutate, message) => {
    const ks = structuredClone(await fastKeystore());
    mutate(ks);
    const err = await decryptKeystore(ks, 'right').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeystoreError);
    expect((err as Error).message).toMatch(/^malformed keystore: /);
    expect((err as Error).message).toMatch(message);
  });

  it('names pbkdf2 prf', async () => {
    const ks = structuredClone(PBKDF2_VECTOR);
    ks.crypto.kdfparams.prf = 'hmac-sha512';
    await expect(decryptKeystore(ks, VECTOR_PASSWORD)).rejects.toThrow(/crypto\.kdfparams\.prf/);
  });

  it('rejects non-objects and invalid JSON', async () => {
    await expect(decryptKeystore('{not json', 'x')).rejects.toThrow('malformed keystore: not valid JSON');
    await expect(decryptKeystore(null, 'x')).rejects.toThrow(KeystoreError);
    await expect(decryptKeystore([], 'x')).rejects.toThrow(/expected a JSON object/);
  });

  it('readKeystoreFile includes the path in errors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keystore-'));
    try {
      const file = join(dir, 'k.json');
      await writeFile(file, JSON.stringify(await fastKeystore()));
      expect(bytesToHex(await readKeystoreFile(file, 'right'))).toBe(`0x${VECTOR_KEY}`);
      await expect(readKeystoreFile(file, 'wrong')).rejects.toThrow(`${file}: keystore MAC mismatch`);
      await expect(readKeystoreFile(join(dir, 'missing.json'), 'x')).rejects.toThrow(/missing\.json: cannot read/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('createLocalSigner', () => {
  it('evm: address and signing match viem', async () => {
    const signer = createLocalSigner(SECRET, 'evm');
    const expected = privateKeyToAccount(`0x${VECTOR_KEY}`);
    expect(signer.kind).toBe('evm');
    expect(signer.address).toBe(expected.address);
    expect(signer.account.address).toBe(expected.address);

    const tx = { chainId: 1, to: expected.address, value: 1n, nonce: 0, gas: 21000n, maxFeePerGas: parseGwei('20'), maxPriorityFeePerGas: 1n };
    const serialized = await signer.account.signTransaction(tx);
    expect(serialized).toBe(await expected.signTransaction(tx));
    expect(await recoverTransactionAddress({ serializedTransaction: serialized as TransactionSerializedEIP1559 })).toBe(expected.address);
  });

  it('evm: rejects an out-of-range key without echoing it', () => {
    const zero = new Uint8Array(32);
    const tooBig = new Uint8Array(32).fill(0xff);
    expect(() => createLocalSigner(zero, 'evm')).toThrow(/not a valid secp256k1 private key/);
    try {
      createLocalSigner(tooBig, 'evm');
      expect.unreachable();
    } catch (err) {
      expect((err as Error).message).not.toMatch(/ff{8}/i);
    }
  });

  it('solana: address matches @solana/kit and signatures verify', async () => {
    const signer = createLocalSigner(SECRET, 'solana');
    const kitPair = await createKeyPairFromPrivateKeyBytes(SECRET);
    expect(signer.address).toBe(await getAddressFromPublicKey(kitPair.publicKey));

    const message = new TextEncoder().encode('relay me');
    const signature = await signer.sign(message);
    expect(signature).toHaveLength(64);
    // Ed25519 is deterministic, so this must equal kit's own signature.
    expect(signature).toEqual(new Uint8Array(await signBytes(kitPair.privateKey, message)));
    expect(await verifySignature(kitPair.publicKey, signature as never, message)).toBe(true);
  });

  it('stellar: address and signatures match Keypair.fromRawEd25519Seed', async () => {
    const signer = createLocalSigner(SECRET, 'stellar');
    const expected = Keypair.fromRawEd25519Seed(Buffer.from(SECRET));
    expect(signer.address).toBe(expected.publicKey());
    expect(signer.address).toMatch(/^G[A-Z2-7]{55}$/);
    const data = Buffer.from('relay me');
    const signature = await signer.sign(data);
    expect(Buffer.from(signature)).toEqual(expected.sign(data));
    expect(expected.verify(data, Buffer.from(signature))).toBe(true);
  });

  it.each(['evm', 'solana', 'stellar'] as const)('%s: serializing or inspecting never reveals the secret', (kind) => {
    const signer = createLocalSigner(SECRET, kind);
    const stellarSecret = Keypair.fromRawEd25519Seed(Buffer.from(SECRET)).secret();
    const base58Secret = getBase58Decoder().decode(SECRET);
    const json = JSON.stringify(signer);
    expect(JSON.parse(json)).toEqual({ kind, address: signer.address });
    for (const text of [json, inspect(signer, { depth: 10, showHidden: false }), JSON.stringify({ ...signer })]) {
      expect(text.toLowerCase()).not.toContain(SECRET_HEX);
      expect(text).not.toContain(stellarSecret);
      expect(text).not.toContain(base58Secret);
      expect(text).not.toContain(Buffer.from(SECRET).toString('base64'));
    }
    expect(Object.values(signer).some((v) => v instanceof Uint8Array)).toBe(false);
  });

  it('rejects secrets that are not 32 bytes', () => {
    expect(() => createLocalSigner(new Uint8Array(64), 'solana')).toThrow(/32 bytes/);
  });
});

// The built tool, as `npm run keystore` runs it (the global setup builds dist/).
describe('keystore CLI', () => {
  const run = promisify(execFile);
  const cli = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [join(ROOT, 'dist/keystore.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, KEYSTORE_PASSPHRASE: 'cli-pass', ...env },
    });

  it('creates a keystore that decrypts to the given key, and refuses to overwrite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keystore-cli-'));
    try {
      const out = join(dir, 'keys', 'relayer.json');
      const { stdout } = await cli(['create', '--out', out, '--private-key-env', 'TEST_RELAYER_KEY', '--scrypt-n', '1024'], {
        TEST_RELAYER_KEY: `0x${VECTOR_KEY}`,
      });
      const address = privateKeyToAccount(`0x${VECTOR_KEY}`).address;
      expect(stdout).toContain(out);
      expect(stdout).toContain(address);
      expect(stdout.toLowerCase()).not.toContain(VECTOR_KEY);

      const written = JSON.parse(await readFile(out, 'utf8'));
      expect(written.address).toBe(address.slice(2).toLowerCase());
      expect(bytesToHex(await decryptKeystore(written, 'cli-pass'))).toBe(`0x${VECTOR_KEY}`);

      const shown = await cli(['address', '--in', out]);
      expect(shown.stdout.trim()).toBe(address);

      await expect(cli(['create', '--out', out, '--scrypt-n', '1024'])).rejects.toMatchObject({
        stderr: expect.stringContaining('already exists'),
      });
      await cli(['create', '--out', out, '--scrypt-n', '1024', '--force']);
      expect(JSON.parse(await readFile(out, 'utf8')).address).not.toBe(written.address);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('generates a random stellar key and prints its address', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keystore-cli-'));
    try {
      const out = join(dir, 'stellar.json');
      const { stdout } = await cli(['create', '--out', out, '--type', 'stellar', '--scrypt-n', '1024']);
      const secret = await readKeystoreFile(out, 'cli-pass');
      const { address } = createLocalSigner(secret, 'stellar');
      expect(stdout).toContain(address);
      expect(JSON.parse(await readFile(out, 'utf8'))).not.toHaveProperty('address');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('imports a base58 solana keypair and rejects invalid keys without echoing them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keystore-cli-'));
    try {
      const kitPair = await createKeyPairFromPrivateKeyBytes(SECRET, true);
      const publicKey = new Uint8Array(await crypto.subtle.exportKey('raw', kitPair.publicKey));
      const keypair58 = getBase58Decoder().decode(new Uint8Array([...SECRET, ...publicKey]));
      const out = join(dir, 'solana.json');
      const { stdout } = await cli(['create', '--out', out, '--type', 'solana', '--private-key-env', 'SOL_KEY', '--scrypt-n', '1024'], {
        SOL_KEY: keypair58,
      });
      expect(stdout).toContain(await getAddressFromPublicKey(kitPair.publicKey));
      expect(await readKeystoreFile(out, 'cli-pass')).toEqual(SECRET);

      const bad = 'f'.repeat(64);
      const err = await cli(['create', '--out', join(dir, 'bad.json'), '--private-key-env', 'BAD_KEY'], { BAD_KEY: bad }).catch((e) => e);
      expect(err.stderr).toContain('env var BAD_KEY does not hold a valid evm private key');
      expect(err.stderr + err.stdout).not.toContain(bad);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('prints usage for --help', async () => {
    const { stdout } = await cli(['--help']);
    expect(stdout).toMatch(/Usage:[\s\S]*create --out/);
  }, 30_000);
});
