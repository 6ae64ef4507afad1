import { dirname, basename } from 'node:path';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak256, toBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CustodyError, type KeyCustody, type OpenContext, type SecretValue } from '../../src/signers/custody.js';
import { azureKeyVault } from '../../src/signers/azure-key-vault/index.js';
import { type AzureKeyVaultStandin, startAzureKeyVaultStandin } from '../support/standins/azure-key-vault.js';

let kv: AzureKeyVaultStandin;
const messages: string[] = [];

const ctx: OpenContext = {
  id: 'azure-signer',
  curve: 'secp256k1',
  secret: (s: SecretValue) => (typeof s === 'string' ? s : s.value),
  baseDir: '/',
};

function configFor(overrides: Record<string, unknown> = {}) {
  return azureKeyVault.config.parse({
    tenant_id: kv.tenantId,
    client_id: kv.clientId,
    client_secret: { type: 'plain', value: kv.clientSecret },
    vault_url: kv.vaultUrl,
    key_name: 'relayer-key',
    authority_host: kv.authorityHost,
    ca_file: basename(kv.caFile),
    disable_challenge_resource_verification: true,
    ...overrides,
  });
}

const open = (overrides: Record<string, unknown> = {}) => azureKeyVault.open(configFor(overrides), { ...ctx, baseDir: dirname(kv.caFile) }) as KeyCustody;
const signal = () => AbortSignal.timeout(10_000);
const digest = toBytes(keccak256(toBytes('a transaction to relay')));

/** The fault a custody call fails with (its message kept for the secret check). */
async function faultOf(call: Promise<unknown>) {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CustodyError);
  messages.push((err as CustodyError).message);
  return (err as CustodyError).fault;
}

beforeAll(async () => {
  kv = await startAzureKeyVaultStandin();
});
afterAll(async () => {
  // Every message shown so far names no secret.
  expect(messages.length).toBeGreaterThan(8);
  for (const m of messages) {
    expect(m).not.toContain(kv.clientSecret);
    for (const t of kv.issuedTokens) expect(m).not.toContain(t);
  }
  await kv.stop();
});

describe('azure_key_vault config', () => {
  it('takes the reference fields, refuses unknown ones and plain http, and shows no secret', () => {
    const c = configFor({ key_version: 'abc' });
    expect(azureKeyVault.visible(c)).toEqual({
      tenant_id: kv.tenantId,
      client_id: kv.clientId,
      vault_url: kv.vaultUrl,
      key_name: 'relayer-key',
      key_version: 'abc',
    });
    expect(azureKeyVault.config.safeParse({ ...c, extra: 1 }).success).toBe(false);
    expect(azureKeyVault.config.safeParse({ ...c, vault_url: 'http://127.0.0.1:1' }).success).toBe(false);
    expect(azureKeyVault.curves).toEqual(['secp256k1']);
  });
});

describe('azure_key_vault against the stand-in', () => {
  it('answers the key point and signs the digest as given (ES256K), verifying to it', async () => {
    const { publicKey } = kv.createKey('relayer-key');
    const custody = open();
    expect(custody.curve).toBe('secp256k1');
    expect(Buffer.from(await custody.publicKey(signal()))).toEqual(Buffer.from(publicKey));
    const sig = await custody.sign(digest, signal());
    expect(sig).toHaveLength(64);
    expect(secp256k1.verify(sig, digest, publicKey, { lowS: false, prehash: false })).toBe(true);
    // The caller's view: low-s normalised and v recovered gives the key back.
    const normal = secp256k1.Signature.fromCompact(sig).normalizeS();
    const recovered = [0, 1].map((v) => normal.addRecoveryBit(v).recoverPublicKey(digest).toRawBytes(false));
    expect(recovered.some((p) => Buffer.from(p).equals(Buffer.from(publicKey)))).toBe(true);
  });

  it('signs without being asked for the public key first', async () => {
    const { publicKey } = kv.createKey('sign-first');
    const sig = await open({ key_name: 'sign-first' }).sign(digest, signal());
    expect(secp256k1.verify(sig, digest, publicKey, { lowS: false })).toBe(true);
  });

  it('uses the pinned key_version, and keeps signing with the version it read after a rotation', async () => {
    const first = kv.createKey('rotating');
    const pinned = open({ key_name: 'rotating', key_version: first.version });
    const latest = open({ key_name: 'rotating' });
    expect(Buffer.from(await latest.publicKey(signal()))).toEqual(Buffer.from(first.publicKey));
    const second = kv.createKey('rotating');
    expect(Buffer.from(await pinned.publicKey(signal()))).toEqual(Buffer.from(first.publicKey));
    expect(Buffer.from(await open({ key_name: 'rotating' }).publicKey(signal()))).toEqual(Buffer.from(second.publicKey));
    expect(secp256k1.verify(await latest.sign(digest, signal()), digest, first.publicKey, { lowS: false })).toBe(true);
  });

  it('maps refused client credentials to denied', async () => {
    kv.createKey('relayer-key');
    expect(await faultOf(open({ client_secret: 'not-the-secret' }).publicKey(signal()))).toBe('denied');
    expect(await faultOf(open({ client_id: '00000000-0000-0000-0000-000000000000' }).publicKey(signal()))).toBe('denied');
    // The vault's challenge names its own tenant, which the credential is not for.
    expect(await faultOf(open({ tenant_id: '11111111-1111-1111-1111-111111111111' }).publicKey(signal()))).toBe('denied');
  });

  it('maps a missing key permission to denied', async () => {
    const custody = open();
    try {
      kv.setPermissions({ get: false });
      expect(await faultOf(open().publicKey(signal()))).toBe('denied');
      kv.setPermissions({ get: true, sign: false });
      await custody.publicKey(signal());
      expect(await faultOf(custody.sign(digest, signal()))).toBe('denied');
    } finally {
      kv.setPermissions({ get: true, sign: true });
    }
  });

  it('maps a missing key or version to not_found', async () => {
    expect(await faultOf(open({ key_name: 'no-such-key' }).publicKey(signal()))).toBe('not_found');
    expect(await faultOf(open({ key_version: 'ffffffffffffffffffffffffffffffff' }).sign(digest, signal()))).toBe('not_found');
  });

  it('maps a disabled key to disabled, before and after it was read', async () => {
    kv.createKey('to-disable');
    const custody = open({ key_name: 'to-disable' });
    await custody.publicKey(signal());
    kv.disableKey('to-disable');
    expect(await faultOf(custody.sign(digest, signal()))).toBe('disabled');
    expect(await faultOf(open({ key_name: 'to-disable' }).publicKey(signal()))).toBe('disabled');
  });

  it('maps an expired key to disabled, also when it expires after it was read', async () => {
    kv.createKey('expired', 'P-256K', new Date(Date.now() - 60_000));
    expect(await faultOf(open({ key_name: 'expired' }).publicKey(signal()))).toBe('disabled');
    const expires = Date.now() + 3_000;
    kv.createKey('expiring', 'P-256K', new Date(expires));
    const custody = open({ key_name: 'expiring' });
    await custody.sign(digest, signal());
    await new Promise((r) => setTimeout(r, expires - Date.now() + 100));
    expect(await faultOf(custody.sign(digest, signal()))).toBe('disabled');
  });

  it('maps a key on another curve to wrong_key', async () => {
    kv.createKey('p256-key', 'P-256');
    expect(await faultOf(open({ key_name: 'p256-key' }).publicKey(signal()))).toBe('wrong_key');
    expect(await faultOf(open({ key_name: 'p256-key' }).sign(digest, signal()))).toBe('wrong_key');
  });

  it('maps 503, 429 (of the vault or of Entra ID) and an untrusted certificate to unavailable', async () => {
    for (const status of [503, 429] as const) {
      for (const where of ['all', 'token', 'vault'] as const) {
        kv.setFailure(status, where);
        try {
          expect(await faultOf(open().publicKey(signal()))).toBe('unavailable');
        } finally {
          kv.setFailure(undefined);
        }
      }
    }
    const custody = open();
    await custody.publicKey(signal());
    kv.setFailure(503);
    try {
      expect(await faultOf(custody.sign(digest, signal()))).toBe('unavailable');
    } finally {
      kv.setFailure(undefined);
    }
    expect(await faultOf(open({ ca_file: undefined }).publicKey(signal()))).toBe('unavailable');
  });

  it('gives timeout when the service hangs past the signal', async () => {
    const custody = open();
    await custody.publicKey(signal());
    kv.setLatency(60_000);
    try {
      const started = Date.now();
      expect(await faultOf(open().publicKey(AbortSignal.timeout(200)))).toBe('timeout');
      expect(await faultOf(custody.sign(digest, AbortSignal.timeout(200)))).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      kv.setLatency(0);
    }
  });

  it('maps a vault that is gone to unavailable', async () => {
    const gone = await startAzureKeyVaultStandin();
    gone.createKey('relayer-key');
    const config = azureKeyVault.config.parse({
      tenant_id: gone.tenantId,
      client_id: gone.clientId,
      client_secret: gone.clientSecret,
      vault_url: gone.vaultUrl,
      key_name: 'relayer-key',
      authority_host: gone.authorityHost,
      ca_file: gone.caFile,
      disable_challenge_resource_verification: true,
    });
    const custody = azureKeyVault.open(config, ctx) as KeyCustody;
    await custody.publicKey(signal());
    await gone.stop();
    expect(await faultOf(custody.sign(digest, signal()))).toBe('unavailable');
    for (const m of messages) expect(m).not.toContain(gone.clientSecret);
  });
});
