import { createPublicKey, randomBytes, verify } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak256, recoverPublicKey, serializeSignature, toBytes, toHex } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Curve, CustodyError, type KeyCustody, type OpenContext, type SecretValue } from '../../src/signers/custody.js';
import { vault } from '../../src/signers/vault/index.js';
import { vaultTransit } from '../../src/signers/vault-transit/index.js';
import { startVaultStandin, type VaultStandin } from '../support/standins/vault.js';

const messages: string[] = [];
const secrets: string[] = [];
let server: VaultStandin;

const ctxFor = (curve: Curve): OpenContext => ({
  id: 'vault-signer',
  curve,
  secret: (s: SecretValue) => (typeof s === 'string' ? s : s.value),
  baseDir: '/',
});
const signal = () => AbortSignal.timeout(10_000);
const digest = toBytes(keccak256(toBytes('a transaction to relay')));
const message = new TextEncoder().encode('a Solana message to sign');

async function faultOf(call: Promise<unknown>) {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CustodyError);
  messages.push((err as CustodyError).message);
  return (err as CustodyError).fault;
}

function verifiesEd25519(signature: Uint8Array, data: Uint8Array, publicKey: Uint8Array) {
  const key = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), publicKey]), format: 'der', type: 'spki' });
  return verify(null, data, key, signature);
}

/** A fresh hex private key, remembered as a secret no message may show. */
function newKey() {
  const key = randomBytes(32).toString('hex');
  secrets.push(key);
  return key;
}

beforeAll(async () => {
  server = await startVaultStandin();
});
afterAll(async () => {
  expect(messages.length).toBeGreaterThan(10);
  for (const m of messages) for (const s of [...secrets, ...server.issuedTokens]) expect(m).not.toContain(s);
  await server.stop();
});

describe('vault (private key in KV v2)', () => {
  const open = (curve: Curve, overrides: Record<string, unknown> = {}, on: VaultStandin = server) => {
    secrets.push(on.roleId, on.secretId);
    const config = vault.config.parse({
      address: on.address,
      role_id: on.roleId,
      secret_id: { type: 'plain', value: on.secretId },
      key_name: 'relayer',
      ...overrides,
    });
    return vault.open(config, ctxFor(curve)) as KeyCustody;
  };

  it('takes the reference fields, refuses unknown ones and shows no secret', () => {
    const c = vault.config.parse({ address: server.address, role_id: 'r', secret_id: 's', key_name: 'k', namespace: 'ns', mount_point: 'kv' });
    expect(vault.visible(c)).toEqual({ address: server.address, namespace: 'ns', key_name: 'k', mount_point: 'kv' });
    expect(vault.config.safeParse({ ...c, token: 'x' }).success).toBe(false);
    expect(vault.config.safeParse({ ...c, address: 'not a url' }).success).toBe(false);
    expect(vault.curves).toEqual(['secp256k1', 'ed25519']);
  });

  it('secp256k1: answers the point of the stored key and signs the digest so that it recovers to it', async () => {
    const hex = newKey();
    server.putSecret('relayer', { value: `0x${hex}` });
    const custody = open('secp256k1');
    const publicKey = await custody.publicKey(signal());
    expect(Buffer.from(publicKey)).toEqual(Buffer.from(secp256k1.getPublicKey(hex, false)));
    const sig = await custody.sign(digest, signal());
    expect(sig).toHaveLength(64);
    const r = toHex(sig.subarray(0, 32));
    const s = toHex(sig.subarray(32));
    const recovered = await Promise.all([0, 1].map((yParity) => recoverPublicKey({ hash: digest, signature: serializeSignature({ r, s, yParity }) })));
    expect(recovered).toContain(toHex(publicKey));
    expect(secp256k1.Signature.fromCompact(sig).hasHighS()).toBe(false);
  });

  it('ed25519: answers the public key of the stored seed (hex without 0x) and signs the message', async () => {
    server.putSecret('solana', { value: newKey() });
    const custody = open('ed25519', { key_name: 'solana' });
    expect(custody.curve).toBe('ed25519');
    const publicKey = await custody.publicKey(signal());
    expect(publicKey).toHaveLength(32);
    expect(verifiesEd25519(await custody.sign(message, signal()), message, publicKey)).toBe(true);
  });

  it('reads the key once, then signs in process even while Vault is sealed', async () => {
    server.putSecret('once', { value: newKey() });
    const custody = open('secp256k1', { key_name: 'once' });
    const before = server.requests.length;
    const logins = server.logins;
    const publicKey = await custody.publicKey(signal());
    await custody.sign(digest, signal());
    server.seal();
    try {
      const sig = await custody.sign(digest, signal());
      expect(secp256k1.verify(sig, digest, publicKey)).toBe(true);
    } finally {
      server.unseal();
    }
    expect(server.requests.slice(before)).toEqual(['POST /v1/auth/approle/login', 'GET /v1/secret/data/once']);
    expect(server.logins).toBe(logins + 1);
    await custody.close?.();
    expect(await faultOf(custody.sign(digest, signal()))).toBe('rejected');
  });

  it('reads from the configured mount_point', async () => {
    const hex = newKey();
    server.putSecret('relayer', { value: hex }, 'kv');
    const publicKey = await open('secp256k1', { mount_point: 'kv' }).publicKey(signal());
    expect(Buffer.from(publicKey)).toEqual(Buffer.from(secp256k1.getPublicKey(hex, false)));
  });

  it('maps a refused login or a policy without the path to denied', async () => {
    server.putSecret('relayer', { value: newKey() });
    expect(await faultOf(open('secp256k1', { secret_id: 'not-the-secret-id' }).publicKey(signal()))).toBe('denied');
    server.setPolicy({ kv: false });
    try {
      expect(await faultOf(open('secp256k1').sign(digest, signal()))).toBe('denied');
    } finally {
      server.setPolicy({ kv: true });
    }
  });

  it('maps a missing secret or mount to not_found', async () => {
    expect(await faultOf(open('secp256k1', { key_name: 'nothing-here' }).publicKey(signal()))).toBe('not_found');
    expect(await faultOf(open('secp256k1', { mount_point: 'no-mount' }).publicKey(signal()))).toBe('not_found');
  });

  it('maps a secret that holds no usable key to wrong_key, without showing it', async () => {
    const notHex = `zz${newKey().slice(2)}`;
    secrets.push(notHex);
    server.putSecret('bad-hex', { value: notHex });
    server.putSecret('zero', { value: '00'.repeat(32) });
    server.putSecret('no-value', { private_key: newKey() });
    expect(await faultOf(open('secp256k1', { key_name: 'bad-hex' }).publicKey(signal()))).toBe('wrong_key');
    expect(await faultOf(open('secp256k1', { key_name: 'zero' }).publicKey(signal()))).toBe('wrong_key');
    expect(await faultOf(open('ed25519', { key_name: 'no-value' }).sign(message, signal()))).toBe('wrong_key');
  });

  it('maps a sealed or stopped Vault to unavailable', async () => {
    server.putSecret('relayer', { value: newKey() });
    server.seal();
    try {
      expect(await faultOf(open('secp256k1').publicKey(signal()))).toBe('unavailable');
    } finally {
      server.unseal();
    }
    const gone = await startVaultStandin();
    const custody = open('secp256k1', {}, gone);
    await gone.stop();
    expect(await faultOf(custody.publicKey(signal()))).toBe('unavailable');
  });

  it('gives timeout when Vault hangs past the signal', async () => {
    server.putSecret('relayer', { value: newKey() });
    server.setLatency(60_000);
    try {
      const started = Date.now();
      expect(await faultOf(open('secp256k1').publicKey(AbortSignal.timeout(200)))).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      server.setLatency(0);
    }
  });

  it('sends the namespace, and is refused without it', async () => {
    const ns = await startVaultStandin({ namespace: 'admin/relayers' });
    try {
      const hex = newKey();
      ns.putSecret('relayer', { value: hex });
      const publicKey = await open('secp256k1', { namespace: 'admin/relayers' }, ns).publicKey(signal());
      expect(Buffer.from(publicKey)).toEqual(Buffer.from(secp256k1.getPublicKey(hex, false)));
      expect(await faultOf(open('secp256k1', {}, ns).publicKey(signal()))).toBe('denied');
      expect(await faultOf(open('secp256k1', { namespace: 'admin/other' }, ns).publicKey(signal()))).toBe('denied');
    } finally {
      await ns.stop();
    }
  });
});

describe('vault_transit (Ed25519 key in the transit engine)', () => {
  const open = (pubkey: string, overrides: Record<string, unknown> = {}, on: VaultStandin = server) => {
    secrets.push(on.roleId, on.secretId);
    const config = vaultTransit.config.parse({ key_name: 'relayer', address: on.address, role_id: on.roleId, secret_id: on.secretId, pubkey, ...overrides });
    return vaultTransit.open(config, ctxFor('ed25519')) as KeyCustody;
  };
  const otherPubkey = () => randomBytes(32).toString('base64');
  let pubkey: string;

  beforeAll(() => {
    pubkey = server.createTransitKey('relayer').publicKey;
  });

  it('takes the reference fields, refuses a pubkey that is not 32 bytes, and shows no secret', () => {
    const c = vaultTransit.config.parse({ key_name: 'k', address: server.address, role_id: 'r', secret_id: 's', pubkey, mount_point: 'tr', namespace: 'ns' });
    expect(vaultTransit.visible(c)).toEqual({ key_name: 'k', address: server.address, pubkey, mount_point: 'tr', namespace: 'ns' });
    expect(vaultTransit.config.safeParse({ ...c, pubkey: Buffer.alloc(31).toString('base64') }).success).toBe(false);
    expect(vaultTransit.config.safeParse({ ...c, hash_algorithm: 'sha2-256' }).success).toBe(false);
    expect(vaultTransit.curves).toEqual(['ed25519']);
  });

  it('answers the configured key after checking it, and signs the message so that it verifies', async () => {
    const custody = open(pubkey);
    const publicKey = await custody.publicKey(signal());
    expect(Buffer.from(publicKey).toString('base64')).toBe(pubkey);
    const sig = await custody.sign(message, signal());
    expect(sig).toHaveLength(64);
    expect(verifiesEd25519(sig, message, publicKey)).toBe(true);
  });

  it('keeps signing with the version whose public key is pubkey after a rotation', async () => {
    const first = server.createTransitKey('rotated').publicKey;
    server.createTransitKey('rotated');
    const sig = await open(first, { key_name: 'rotated' }).sign(message, signal());
    expect(verifiesEd25519(sig, message, Buffer.from(first, 'base64'))).toBe(true);
  });

  it('maps another public key or a key that is not Ed25519 to wrong_key', async () => {
    expect(await faultOf(open(otherPubkey()).publicKey(signal()))).toBe('wrong_key');
    server.createTransitKey('p256', 'ecdsa-p256');
    server.createTransitKey('aes', 'aes256-gcm96');
    expect(await faultOf(open(pubkey, { key_name: 'p256' }).publicKey(signal()))).toBe('wrong_key');
    expect(await faultOf(open(pubkey, { key_name: 'aes' }).sign(message, signal()))).toBe('wrong_key');
  });

  it('maps a missing key to not_found, also when it goes after it was read', async () => {
    expect(await faultOf(open(pubkey, { key_name: 'missing' }).publicKey(signal()))).toBe('not_found');
    expect(await faultOf(open(pubkey, { mount_point: 'transit-elsewhere' }).sign(message, signal()))).toBe('not_found');
    const doomed = server.createTransitKey('doomed').publicKey;
    const custody = open(doomed, { key_name: 'doomed' });
    await custody.sign(message, signal());
    server.deleteTransitKey('doomed');
    expect(await faultOf(custody.sign(message, signal()))).toBe('not_found');
  });

  it('maps a refused login, or a policy without keys read or sign, to denied', async () => {
    expect(await faultOf(open(pubkey, { role_id: 'not-the-role' }).publicKey(signal()))).toBe('denied');
    const custody = open(pubkey);
    await custody.publicKey(signal());
    server.setPolicy({ sign: false });
    try {
      expect(await faultOf(custody.sign(message, signal()))).toBe('denied');
      server.setPolicy({ sign: true, keys: false });
      expect(await faultOf(open(pubkey).publicKey(signal()))).toBe('denied');
    } finally {
      server.setPolicy({ keys: true, sign: true });
    }
  });

  it('logs in again when the token lease runs out or Vault revokes the token', async () => {
    const key = Buffer.from(pubkey, 'base64');
    server.setTokenTtl(1);
    try {
      const custody = open(pubkey);
      const logins = server.logins;
      await custody.sign(message, signal());
      await new Promise((r) => setTimeout(r, 1_100));
      expect(verifiesEd25519(await custody.sign(message, signal()), message, key)).toBe(true);
      expect(server.logins).toBe(logins + 2);
    } finally {
      server.setTokenTtl(3600);
    }
    const custody = open(pubkey);
    const logins = server.logins;
    await custody.sign(message, signal());
    server.revokeTokens();
    expect(verifiesEd25519(await custody.sign(message, signal()), message, key)).toBe(true);
    expect(server.logins).toBe(logins + 2);
  });

  it('maps a sealed Vault to unavailable and a hung one to timeout', async () => {
    const custody = open(pubkey);
    await custody.publicKey(signal());
    server.seal();
    try {
      expect(await faultOf(custody.sign(message, signal()))).toBe('unavailable');
    } finally {
      server.unseal();
    }
    server.setLatency(60_000);
    try {
      const started = Date.now();
      expect(await faultOf(custody.sign(message, AbortSignal.timeout(200)))).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      server.setLatency(0);
    }
  });

  it('signs in a namespace from a custom mount', async () => {
    const ns = await startVaultStandin({ namespace: 'admin' });
    try {
      const key = ns.createTransitKey('relayer', 'ed25519', 'signing').publicKey;
      const custody = open(key, { namespace: 'admin', mount_point: 'signing' }, ns);
      expect(verifiesEd25519(await custody.sign(message, signal()), message, Buffer.from(key, 'base64'))).toBe(true);
      expect(ns.requests).toContain('POST /v1/signing/sign/relayer');
      expect(await faultOf(open(key, { mount_point: 'signing' }, ns).sign(message, signal()))).toBe('denied');
    } finally {
      await ns.stop();
    }
  });
});
