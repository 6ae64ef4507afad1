import { createPublicKey, verify } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak256, toBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Curve, CustodyError, type CustodyFault, type KeyCustody, type OpenContext } from '../../src/signers/custody.js';
import { awsKms } from '../../src/signers/aws-kms/index.js';
import { type AwsKeySpec, type AwsKmsStandin, startAwsKmsStandin } from '../support/standins/aws-kms.js';

const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');
const ENV = [
  'AWS_ENDPOINT_URL_KMS',
  'AWS_ENDPOINT_URL',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_REGION',
  'AWS_PROFILE',
] as const;

function context(curve: Curve): OpenContext {
  return {
    id: 'kms-signer',
    curve,
    baseDir: process.cwd(),
    secret: () => {
      throw new Error('aws_kms has no secret in its config');
    },
  };
}

const signal = () => AbortSignal.timeout(10_000);
const digest = (text: string) => toBytes(keccak256(toBytes(text)));

describe('aws_kms custody', () => {
  let kms: AwsKmsStandin;
  const saved = new Map<string, string | undefined>();
  const seen: string[] = [];

  beforeAll(async () => {
    kms = await startAwsKmsStandin();
    for (const name of ENV) saved.set(name, process.env[name]);
    for (const name of ENV) delete process.env[name];
    process.env.AWS_ENDPOINT_URL_KMS = kms.url;
    process.env.AWS_ACCESS_KEY_ID = kms.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = kms.secretAccessKey;
    process.env.AWS_REGION = kms.region;
  });
  afterAll(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await kms.stop();
    // Whatever a user could have read in a fault, no credential.
    expect(seen.length).toBeGreaterThan(10);
    for (const message of seen) {
      expect(message).not.toContain(kms.secretAccessKey);
      expect(message).not.toContain(kms.accessKeyId);
    }
  });

  function open(keyId: string, curve: Curve = 'secp256k1', region = kms.region): KeyCustody {
    return awsKms.open(awsKms.config.parse({ region, key_id: keyId }), context(curve)) as KeyCustody;
  }
  function keyOf(spec: AwsKeySpec, curve: Curve = spec === 'ECC_NIST_EDWARDS25519' ? 'ed25519' : 'secp256k1') {
    const { keyId, arn } = kms.createKey(spec);
    return { keyId, arn, custody: open(keyId, curve) };
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
  async function expectFault(run: () => Promise<unknown>, expected: CustodyFault, keyId?: string) {
    const err = await fault(run);
    expect({ fault: err.fault, message: err.message }).toMatchObject({ fault: expected });
    if (keyId) expect(err.message).toContain(keyId);
    return err;
  }
  /** Runs `run` with some AWS_* variables changed, as a differently configured process would. */
  async function withEnv<T>(vars: Record<string, string>, run: () => Promise<T>): Promise<T> {
    const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
    Object.assign(process.env, vars);
    try {
      return await run();
    } finally {
      Object.assign(process.env, before);
    }
  }

  it('reads the config the reference way and shows region and key id', () => {
    const c = awsKms.config.parse({ region: 'eu-west-1', key_id: 'alias/relayer' });
    expect(awsKms.visible(c)).toEqual({ region: 'eu-west-1', key_id: 'alias/relayer' });
    expect(awsKms.config.safeParse({ region: 'eu-west-1', key_id: 'k', access_key: 'x' }).success).toBe(false);
    expect(awsKms.config.safeParse({ region: 'eu-west-1' }).success).toBe(false);
  });

  it('answers the secp256k1 point and signs the digest as given (no second hash)', async () => {
    const { arn, custody } = keyOf('ECC_SECG_P256K1');
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
    // The key ARN names the same key as its id.
    const byArn = open(arn);
    expect(await byArn.publicKey(signal())).toEqual(publicKey);
    expect(kms.calls).toContain('Sign');
  });

  it('signs Ed25519 messages with an ECC_NIST_EDWARDS25519 key', async () => {
    const { custody } = keyOf('ECC_NIST_EDWARDS25519');
    const publicKey = await custody.publicKey(signal());
    expect(publicKey).toHaveLength(32);
    const message = Buffer.from('a solana message, signed as it is');
    const signature = await custody.sign(message, signal());
    expect(signature).toHaveLength(64);
    const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI, publicKey]), format: 'der', type: 'spki' });
    expect(verify(null, message, key, signature)).toBe(true);
    expect(verify(null, Buffer.from('another message'), key, signature)).toBe(false);
  });

  it('refuses a key of the wrong spec or usage as wrong_key', async () => {
    const p256 = keyOf('ECC_NIST_P256');
    await expectFault(() => p256.custody.publicKey(signal()), 'wrong_key', p256.keyId);
    await expectFault(() => p256.custody.sign(digest('x'), signal()), 'wrong_key', p256.keyId);

    const symmetric = keyOf('SYMMETRIC_DEFAULT');
    await expectFault(() => symmetric.custody.publicKey(signal()), 'wrong_key', symmetric.keyId);
    await expectFault(() => symmetric.custody.sign(digest('x'), signal()), 'wrong_key', symmetric.keyId);

    const ed = keyOf('ECC_NIST_EDWARDS25519', 'secp256k1');
    await expectFault(() => ed.custody.publicKey(signal()), 'wrong_key', ed.keyId);
    const k1 = keyOf('ECC_SECG_P256K1', 'ed25519');
    await expectFault(() => k1.custody.publicKey(signal()), 'wrong_key', k1.keyId);
    await expectFault(() => k1.custody.sign(Buffer.from('m'), signal()), 'wrong_key', k1.keyId);
  });

  it('maps a missing key to not_found', async () => {
    const missing = '0f0e0d0c-1111-2222-3333-444455556666';
    await expectFault(() => open(missing).publicKey(signal()), 'not_found', missing);
    await expectFault(() => open('alias/nobody').sign(digest('x'), signal()), 'not_found', 'alias/nobody');
  });

  it('maps refused access and bad credentials to denied', async () => {
    const { keyId, custody } = keyOf('ECC_SECG_P256K1');
    kms.denyKey(keyId);
    await expectFault(() => custody.sign(digest('x'), signal()), 'denied', keyId);

    const good = keyOf('ECC_SECG_P256K1');
    const unknownKeyId = await withEnv({ AWS_ACCESS_KEY_ID: 'AKIAIOSFODNN7EXAMPLE' }, () =>
      expectFault(() => open(good.keyId).publicKey(signal()), 'denied', good.keyId),
    );
    expect(unknownKeyId.message).not.toContain('AKIAIOSFODNN7EXAMPLE');
    const wrongSecret = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
    const badSecret = await withEnv({ AWS_SECRET_ACCESS_KEY: wrongSecret }, () => expectFault(() => open(good.keyId).sign(digest('x'), signal()), 'denied'));
    expect(badSecret.message).not.toContain(wrongSecret);
    // The right credentials still work on that key.
    expect(await open(good.keyId).publicKey(signal())).toHaveLength(65);
  });

  it('maps a disabled or deleted key to disabled', async () => {
    const a = keyOf('ECC_SECG_P256K1');
    kms.disableKey(a.keyId);
    await expectFault(() => a.custody.publicKey(signal()), 'disabled', a.keyId);
    await expectFault(() => a.custody.sign(digest('x'), signal()), 'disabled', a.keyId);
    const b = keyOf('ECC_SECG_P256K1');
    kms.setKeyState(b.keyId, 'PendingDeletion');
    await expectFault(() => b.custody.sign(digest('x'), signal()), 'disabled', b.keyId);
    kms.setKeyState(b.keyId, 'Enabled');
    expect(await b.custody.sign(digest('x'), signal())).toHaveLength(64);
  });

  it('maps KMS failures, throttling and an unreachable endpoint to unavailable', async () => {
    const { keyId, custody } = keyOf('ECC_SECG_P256K1');
    for (const type of ['KMSInternalException', 'DependencyTimeoutException', 'ThrottlingException']) {
      kms.failWith(type);
      try {
        await expectFault(() => custody.sign(digest('x'), signal()), 'unavailable', keyId);
      } finally {
        kms.failWith(undefined);
      }
    }
    kms.setDown(true);
    try {
      await expectFault(() => custody.publicKey(signal()), 'unavailable', keyId);
    } finally {
      kms.setDown(false);
    }
    expect(await custody.sign(digest('back'), signal())).toHaveLength(64);

    const gone = await startAwsKmsStandin();
    const goneKey = gone.createKey('ECC_SECG_P256K1').keyId;
    await gone.stop();
    await withEnv({ AWS_ENDPOINT_URL_KMS: gone.url }, () => expectFault(() => open(goneKey).sign(digest('x'), signal()), 'unavailable', goneKey));
  });

  it('gives up with timeout when KMS hangs past the signal', async () => {
    const { keyId, custody } = keyOf('ECC_SECG_P256K1');
    kms.setLatency(10_000);
    try {
      const started = performance.now();
      await expectFault(() => custody.sign(digest('x'), AbortSignal.timeout(200)), 'timeout', keyId);
      expect(performance.now() - started).toBeLessThan(2_000);
      const aborted = new AbortController();
      aborted.abort();
      await expectFault(() => custody.publicKey(aborted.signal), 'timeout', keyId);
    } finally {
      kms.setLatency(0);
    }
    await custody.close?.();
  });
});
