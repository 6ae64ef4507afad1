import { createPublicKey, verify } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak256, toBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Curve, CustodyError, type CustodyFault, type KeyCustody, type OpenContext, type SecretValue } from '../../src/signers/custody.js';
import { googleCloudKms } from '../../src/signers/google-cloud-kms/index.js';
import { type GcpAlgorithm, type GcpServiceAccount, type GoogleCloudKmsStandin, startGoogleCloudKmsStandin } from '../support/standins/google-cloud-kms.js';

const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

function context(curve: Curve): OpenContext {
  return {
    id: 'gcp-signer',
    curve,
    baseDir: process.cwd(),
    secret: (s: SecretValue) => (typeof s === 'string' ? s : s.value),
  };
}

const signal = () => AbortSignal.timeout(10_000);
const digest = (text: string) => toBytes(keccak256(toBytes(text)));

describe('google_cloud_kms custody', () => {
  let kms: GoogleCloudKmsStandin;
  const seen: string[] = [];
  const secrets: string[] = [];

  beforeAll(async () => {
    kms = await startGoogleCloudKmsStandin();
    secrets.push(kms.serviceAccount.private_key_id, kms.serviceAccount.client_email);
    // Any line of the PEM body would do as evidence of a leaked key.
    secrets.push(...kms.serviceAccount.private_key.split('\n').filter((line) => line.length > 40));
  });
  afterAll(async () => {
    await kms.stop();
    expect(seen.length).toBeGreaterThan(10);
    for (const message of seen) for (const secret of secrets) expect(message).not.toContain(secret);
  });

  function configFor(
    key: { location: string; keyRingId: string; keyId: string; version: number },
    account: GcpServiceAccount = kms.serviceAccount,
    endpoint = kms.url,
  ) {
    return googleCloudKms.config.parse({
      service_account: {
        project_id: account.project_id,
        private_key_id: { type: 'plain', value: account.private_key_id },
        private_key: { type: 'plain', value: account.private_key },
        client_email: { type: 'plain', value: account.client_email },
        client_id: account.client_id,
      },
      key: { location: key.location, key_ring_id: key.keyRingId, key_id: key.keyId, key_version: key.version },
      api_endpoint: endpoint,
    });
  }
  const open = (config: ReturnType<typeof configFor>, curve: Curve) => googleCloudKms.open(config, context(curve)) as KeyCustody;
  function keyOf(algorithm: GcpAlgorithm, curve: Curve = algorithm === 'EC_SIGN_ED25519' ? 'ed25519' : 'secp256k1') {
    const ref = kms.createKey(algorithm);
    return { ...ref, custody: open(configFor(ref), curve) };
  }
  async function fault(run: () => Promise<unknown>): Promise<CustodyError> {
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CustodyError);
    seen.push((err as CustodyError).message);
    return err as CustodyError;
  }
  async function expectFault(run: () => Promise<unknown>, expected: CustodyFault, name?: string) {
    const err = await fault(run);
    expect({ fault: err.fault, message: err.message }).toMatchObject({ fault: expected });
    if (name) expect(err.message).toContain(name);
    return err;
  }

  it('reads the reference config, fills its defaults and shows no secret', () => {
    const c = googleCloudKms.config.parse({
      service_account: {
        project_id: 'p',
        private_key_id: 'kid',
        private_key: { type: 'env', value: 'GCP_KEY' },
        client_email: 'sa@p.iam.gserviceaccount.com',
        client_id: '1',
      },
      key: { key_ring_id: 'ring', key_id: 'k' },
    });
    expect(c.key).toEqual({ location: 'global', key_ring_id: 'ring', key_id: 'k', key_version: 1 });
    expect(c.service_account).toMatchObject({
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: 'https://oauth2.googleapis.com/token',
      auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
      client_x509_cert_url: '',
      universe_domain: 'googleapis.com',
    });
    const visible = googleCloudKms.visible(c);
    expect(visible).toEqual({
      service_account: {
        project_id: 'p',
        client_id: '1',
        auth_uri: 'https://accounts.google.com/o/oauth2/auth',
        token_uri: 'https://oauth2.googleapis.com/token',
        auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
        client_x509_cert_url: '',
        universe_domain: 'googleapis.com',
      },
      key: c.key,
    });
    expect(JSON.stringify(visible)).not.toMatch(/kid|GCP_KEY|sa@p/);
    const base = { service_account: c.service_account, key: c.key };
    expect(googleCloudKms.config.safeParse({ ...base, extra: 1 }).success).toBe(false);
    expect(googleCloudKms.config.safeParse({ ...base, api_endpoint: 'ftp://kms.example' }).success).toBe(false);
    expect(googleCloudKms.config.safeParse({ ...base, api_endpoint: 'kms.example:8443' }).success).toBe(true);
    expect(googleCloudKms.config.safeParse({ ...base, key: { ...c.key, key_version: 0 } }).success).toBe(false);
  });

  it('answers the secp256k1 point and signs the digest as given (no second hash)', async () => {
    const { custody } = keyOf('EC_SIGN_SECP256K1_SHA256');
    const publicKey = await custody.publicKey(signal());
    expect(publicKey).toHaveLength(65);
    expect(publicKey[0]).toBe(4);
    for (const text of ['one', 'two', 'three']) {
      const hash = digest(text);
      const rs = await custody.sign(hash, signal());
      expect(rs).toHaveLength(64);
      expect(secp256k1.verify(rs, hash, publicKey, { lowS: false })).toBe(true);
      expect(secp256k1.verify(rs, digest(`${text}!`), publicKey, { lowS: false })).toBe(false);
    }
    expect(kms.calls.some((c) => c.endsWith(':asymmetricSign'))).toBe(true);
  });

  it('signs Ed25519 messages with an EC_SIGN_ED25519 key', async () => {
    const { custody } = keyOf('EC_SIGN_ED25519');
    const publicKey = await custody.publicKey(signal());
    expect(publicKey).toHaveLength(32);
    const message = Buffer.from('a stellar transaction hash or a solana message');
    const signature = await custody.sign(message, signal());
    expect(signature).toHaveLength(64);
    const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI, publicKey]), format: 'der', type: 'spki' });
    expect(verify(null, message, key, signature)).toBe(true);
    expect(verify(null, Buffer.from('something else'), key, signature)).toBe(false);
  });

  it('accepts a private key whose newlines were escaped, as env variables often hold it', async () => {
    const ref = kms.createKey('EC_SIGN_SECP256K1_SHA256');
    const escaped = { ...kms.serviceAccount, private_key: kms.serviceAccount.private_key.replace(/\n/g, '\\n') };
    const custody = open(configFor(ref, escaped), 'secp256k1');
    expect(await custody.publicKey(signal())).toHaveLength(65);
  });

  it('refuses a key of another algorithm or purpose as wrong_key', async () => {
    const p256 = keyOf('EC_SIGN_P256_SHA256');
    await expectFault(() => p256.custody.publicKey(signal()), 'wrong_key', p256.name);
    await expectFault(() => p256.custody.sign(digest('x'), signal()), 'wrong_key', p256.name);
    const symmetric = keyOf('GOOGLE_SYMMETRIC_ENCRYPTION');
    await expectFault(() => symmetric.custody.publicKey(signal()), 'wrong_key', symmetric.name);
    const ed = keyOf('EC_SIGN_ED25519', 'secp256k1');
    await expectFault(() => ed.custody.sign(digest('x'), signal()), 'wrong_key', ed.name);
    const k1 = keyOf('EC_SIGN_SECP256K1_SHA256', 'ed25519');
    await expectFault(() => k1.custody.publicKey(signal()), 'wrong_key', k1.name);
  });

  it('maps a missing key version to not_found', async () => {
    const ref = kms.createKey('EC_SIGN_SECP256K1_SHA256');
    const missing = { ...ref, version: 7 };
    const custody = open(configFor(missing), 'secp256k1');
    await expectFault(() => custody.publicKey(signal()), 'not_found', `${ref.keyId}/cryptoKeyVersions/7`);
    const otherRing = open(configFor({ ...ref, keyRingId: 'nowhere' }), 'secp256k1');
    await expectFault(() => otherRing.sign(digest('x'), signal()), 'not_found', 'keyRings/nowhere');
  });

  it('maps refused permissions and unknown service accounts to denied', async () => {
    const { name, custody } = keyOf('EC_SIGN_SECP256K1_SHA256');
    expect(await custody.publicKey(signal())).toHaveLength(65);
    kms.denyKey(name);
    await expectFault(() => custody.sign(digest('x'), signal()), 'denied', name);

    const ref = kms.createKey('EC_SIGN_SECP256K1_SHA256');
    const stranger = kms.strangerAccount();
    secrets.push(stranger.private_key_id, ...stranger.private_key.split('\n').filter((line) => line.length > 40));
    await expectFault(() => open(configFor(ref, stranger), 'secp256k1').publicKey(signal()), 'denied', ref.name);
    // The known account's email and key id with another account's private key: the JWT does not verify.
    const forged = { ...kms.serviceAccount, private_key: stranger.private_key };
    await expectFault(() => open(configFor(ref, forged), 'secp256k1').sign(digest('x'), signal()), 'denied', ref.name);

    const notAKey: GcpServiceAccount = { ...kms.serviceAccount, private_key: 'not-a-pem-but-a-secret-1234' };
    secrets.push(notAKey.private_key);
    const opening = await fault(async () => open(configFor(ref, notAKey), 'secp256k1'));
    expect(opening.fault).toBe('denied');
    expect(opening.message).toContain('gcp-signer');
  });

  it('maps a disabled or destroyed key version to disabled', async () => {
    const a = keyOf('EC_SIGN_SECP256K1_SHA256');
    kms.disableKey(a.name);
    await expectFault(() => a.custody.publicKey(signal()), 'disabled', a.name);
    await expectFault(() => a.custody.sign(digest('x'), signal()), 'disabled', a.name);
    const b = keyOf('EC_SIGN_ED25519');
    expect(await b.custody.publicKey(signal())).toHaveLength(32);
    kms.setVersionState(b.name, 'DESTROYED');
    await expectFault(() => b.custody.sign(Buffer.from('m'), signal()), 'disabled', b.name);
    kms.setVersionState(b.name, 'ENABLED');
    expect(await b.custody.sign(Buffer.from('m'), signal())).toHaveLength(64);
  });

  it('maps server errors, quota and an unreachable endpoint to unavailable', async () => {
    const { name, custody } = keyOf('EC_SIGN_SECP256K1_SHA256');
    expect(await custody.publicKey(signal())).toHaveLength(65);
    for (const status of ['UNAVAILABLE', 'INTERNAL', 'RESOURCE_EXHAUSTED', 'DEADLINE_EXCEEDED'] as const) {
      kms.failWith(status);
      try {
        const err = await expectFault(() => custody.sign(digest('x'), signal()), 'unavailable', name);
        expect(err.message).toContain(status);
      } finally {
        kms.failWith(undefined);
      }
    }
    kms.setDown(true);
    const before = kms.calls.length;
    try {
      await expectFault(() => custody.sign(digest('x'), signal()), 'unavailable', name);
    } finally {
      kms.setDown(false);
    }
    // One attempt: the relayer, not the client, decides when to try again.
    expect(kms.calls.length - before).toBe(1);
    expect(await custody.sign(digest('back'), signal())).toHaveLength(64);

    const gone = await startGoogleCloudKmsStandin();
    const ref = gone.createKey('EC_SIGN_SECP256K1_SHA256');
    await gone.stop();
    const unreachable = open(configFor(ref, gone.serviceAccount, gone.url), 'secp256k1');
    await expectFault(() => unreachable.publicKey(signal()), 'unavailable', ref.name);
  });

  it('gives up with timeout when KMS hangs past the signal', async () => {
    const { name, custody } = keyOf('EC_SIGN_SECP256K1_SHA256');
    expect(await custody.publicKey(signal())).toHaveLength(65);
    kms.setLatency(10_000);
    try {
      const started = performance.now();
      await expectFault(() => custody.sign(digest('x'), AbortSignal.timeout(200)), 'timeout', name);
      expect(performance.now() - started).toBeLessThan(2_000);
      const aborted = new AbortController();
      aborted.abort();
      await expectFault(() => custody.publicKey(aborted.signal), 'timeout', name);
    } finally {
      kms.setLatency(0);
    }
    await custody.close?.();
  });
});
