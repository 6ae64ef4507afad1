import { createPublicKey, verify } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak256, toBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Curve, CustodyError, type OpenContext, type SecretValue } from '../../src/signers/custody.js';
import { turnkey, type TurnkeyConfig } from '../../src/signers/turnkey/index.js';
import { startTurnkeyStandin, type TurnkeyApiKey, type TurnkeyStandin } from '../support/standins/turnkey.js';

const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

function context(curve: Curve): OpenContext {
  return {
    id: 'tk-signer',
    curve,
    baseDir: process.cwd(),
    secret: (s: SecretValue) => (typeof s === 'string' ? s : s.value),
  };
}

/** The fault and message of what `run` throws; fails the test when it does not throw a CustodyError. */
async function failure(run: () => Promise<unknown>): Promise<CustodyError> {
  const err = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CustodyError);
  return err as CustodyError;
}

const signal = () => AbortSignal.timeout(10_000);

describe('turnkey custody', () => {
  let tk: TurnkeyStandin;
  const seen: string[] = [];
  const secrets: string[] = [];

  beforeAll(async () => {
    tk = await startTurnkeyStandin();
    secrets.push(tk.apiKey.privateKey);
  });
  afterAll(async () => {
    await tk.stop();
  });

  function configFor(key: { privateKeyId: string; publicKey: string }, apiKey: TurnkeyApiKey = tk.apiKey, extra: Partial<TurnkeyConfig> = {}): TurnkeyConfig {
    return turnkey.config.parse({
      api_public_key: apiKey.publicKey,
      api_private_key: { type: 'plain', value: apiKey.privateKey },
      organization_id: tk.organizationId,
      private_key_id: key.privateKeyId,
      public_key: key.publicKey,
      base_url: tk.url,
      ...extra,
    });
  }

  async function fault(run: () => Promise<unknown>) {
    const err = await failure(run);
    seen.push(err.message);
    return err;
  }

  it('answers the secp256k1 point and signs the digest as it is', async () => {
    const key = tk.createKey('secp256k1');
    const custody = await turnkey.open(configFor(key), context('secp256k1'));
    const pub = await custody.publicKey(signal());
    expect(pub).toHaveLength(65);
    expect(Buffer.from(pub).toString('hex')).toBe(Buffer.from(key.rawPublicKey).toString('hex'));

    const digest = toBytes(keccak256(toBytes('a relayed transaction')));
    const sig = await custody.sign(digest, signal());
    expect(sig).toHaveLength(64);
    expect(secp256k1.verify(sig, digest, pub, { lowS: false })).toBe(true);
    // A signature over the keccak of the digest (a second hashing) would not verify.
    expect(secp256k1.verify(sig, toBytes(keccak256(digest)), pub, { lowS: false })).toBe(false);
  });

  it('accepts the configured public key uncompressed, with 0x', async () => {
    const key = tk.createKey('secp256k1');
    const cfg = configFor({ ...key, publicKey: `0x${Buffer.from(key.rawPublicKey).toString('hex')}` });
    const custody = await turnkey.open(cfg, context('secp256k1'));
    expect(Buffer.from(await custody.publicKey(signal())).equals(Buffer.from(key.rawPublicKey))).toBe(true);
  });

  it('answers the Ed25519 key and signs the message', async () => {
    const key = tk.createKey('ed25519');
    const custody = await turnkey.open(configFor(key), context('ed25519'));
    const pub = await custody.publicKey(signal());
    expect(Buffer.from(pub).toString('hex')).toBe(key.publicKey);

    const message = Buffer.from('a solana transaction message, not hashed');
    const sig = await custody.sign(message, signal());
    expect(sig).toHaveLength(64);
    const verifier = createPublicKey({ key: Buffer.concat([ED25519_SPKI, pub]), format: 'der', type: 'spki' });
    expect(verify(null, message, verifier, sig)).toBe(true);
  });

  it('waits out an activity answered as pending', async () => {
    const key = tk.createKey('secp256k1');
    tk.setOutcome(key.privateKeyId, 'COMPLETED', 2);
    const custody = await turnkey.open(configFor(key), context('secp256k1'));
    const digest = toBytes(keccak256(toBytes('pending')));
    const sig = await custody.sign(digest, signal());
    expect(secp256k1.verify(sig, digest, key.rawPublicKey, { lowS: false })).toBe(true);
    expect(tk.requests.filter((p) => p === '/public/v1/query/get_activity').length).toBeGreaterThanOrEqual(2);
  });

  it('gives up on an activity that stays pending', async () => {
    const key = tk.createKey('secp256k1');
    tk.setOutcome(key.privateKeyId, 'COMPLETED', 1000);
    const custody = await turnkey.open(configFor(key), context('secp256k1'));
    const err = await fault(() => custody.sign(new Uint8Array(32).fill(1), signal()));
    expect(err.fault).toBe('unavailable');
    expect(err.message).toMatch(/pending/);
  });

  it('throws wrong_key when Turnkey holds another key than the configured one', async () => {
    const key = tk.createKey('secp256k1');
    const other = tk.createKey('secp256k1');
    const custody = await turnkey.open(configFor({ privateKeyId: key.privateKeyId, publicKey: other.publicKey }), context('secp256k1'));
    const err = await fault(() => custody.publicKey(signal()));
    expect(err.fault).toBe('wrong_key');
    expect(err.message).toContain(key.privateKeyId);
  });

  it('throws wrong_key for a key of the other curve', async () => {
    const ed = tk.createKey('ed25519');
    const secp = tk.createKey('secp256k1');
    // Turnkey's key is Ed25519, the relayer signs secp256k1.
    const custody = await turnkey.open(configFor({ privateKeyId: ed.privateKeyId, publicKey: secp.publicKey }), context('secp256k1'));
    const err = await fault(() => custody.publicKey(signal()));
    expect(err.fault).toBe('wrong_key');
    expect(err.message).toMatch(/CURVE_ED25519/);
    // A configured public key that is not of the relayer's curve is refused at once.
    const refused = await fault(async () => turnkey.open(configFor(secp), context('ed25519')));
    expect(refused.fault).toBe('wrong_key');
  });

  it('maps an unknown private key to not_found', async () => {
    const key = tk.createKey('secp256k1');
    tk.deleteKey(key.privateKeyId);
    const custody = await turnkey.open(configFor(key), context('secp256k1'));
    expect((await fault(() => custody.publicKey(signal()))).fault).toBe('not_found');
    const err = await fault(() => custody.sign(new Uint8Array(32).fill(2), signal()));
    expect(err.fault).toBe('not_found');
    expect(err.message).toContain(key.privateKeyId);
  });

  it('maps an unknown API key, a stamp that does not verify and a forbidden API key to denied', async () => {
    const key = tk.createKey('secp256k1');
    const unknown = tk.unknownApiKey();
    secrets.push(unknown.privateKey);
    const a = await fault(async () => (await turnkey.open(configFor(key, unknown), context('secp256k1'))).publicKey(signal()));
    expect(a.fault).toBe('denied');
    expect(a.message).toMatch(/could not find public key/);

    // The registered public key with some other private key: the stamp does not verify.
    const wrongPrivate = { publicKey: tk.apiKey.publicKey, privateKey: unknown.privateKey };
    const b = await fault(async () => (await turnkey.open(configFor(key, wrongPrivate), context('secp256k1'))).sign(new Uint8Array(32).fill(3), signal()));
    expect(b.fault).toBe('denied');
    // Node 26's crypto refuses to stamp with a key pair that does not match, before any request;
    // where it stamps, Turnkey refuses the stamp. Either way the custody is denied, saying which.
    expect(b.message).toMatch(/could not verify api key signature|the API key \(api_public_key, api_private_key\) cannot stamp requests/);

    const readOnly = tk.registerApiKey(false);
    secrets.push(readOnly.privateKey);
    const c = await fault(async () => (await turnkey.open(configFor(key, readOnly), context('secp256k1'))).sign(new Uint8Array(32).fill(4), signal()));
    expect(c.fault).toBe('denied');

    const malformed = await fault(async () =>
      turnkey.open(configFor(key, { publicKey: tk.apiKey.publicKey, privateKey: 'not-hex-at-all' }), context('secp256k1')),
    );
    expect(malformed.fault).toBe('denied');
    expect(malformed.message).not.toContain('not-hex-at-all');
  });

  it.each(['FAILED', 'REJECTED', 'CONSENSUS_NEEDED'] as const)('maps an activity ending %s to rejected', async (outcome) => {
    const key = tk.createKey('ed25519');
    tk.setOutcome(key.privateKeyId, outcome);
    const custody = await turnkey.open(configFor(key), context('ed25519'));
    const err = await fault(() => custody.sign(Buffer.from('message'), signal()));
    expect(err.fault).toBe('rejected');
    expect(err.message).toContain(outcome.toLowerCase());
  });

  it('maps throttling, server errors and a dead endpoint to unavailable', async () => {
    const key = tk.createKey('secp256k1');
    const custody = await turnkey.open(configFor(key), context('secp256k1'));
    tk.setFault({
      status: 429,
      code: 8,
      message:
        'this organization cannot execute activities because it has been rate limited. Please reach out to the Turnkey team (help@turnkey.com) for more information.',
    });
    expect((await fault(() => custody.sign(new Uint8Array(32).fill(5), signal()))).fault).toBe('unavailable');
    tk.setFault({ status: 500, code: 13, message: 'internal server error' });
    expect((await fault(() => custody.publicKey(signal()))).fault).toBe('unavailable');
    tk.setFault(undefined);
    tk.setDown(true);
    expect((await fault(() => custody.publicKey(signal()))).fault).toBe('unavailable');
    tk.setDown(false);
    expect(await custody.publicKey(signal())).toHaveLength(65);

    const closed = await startTurnkeyStandin();
    const key2 = closed.createKey('secp256k1');
    const cfg = turnkey.config.parse({ ...configFor(key2, closed.apiKey), organization_id: closed.organizationId, base_url: closed.url });
    secrets.push(closed.apiKey.privateKey);
    await closed.stop();
    const refused = await fault(async () => (await turnkey.open(cfg, context('secp256k1'))).publicKey(signal()));
    expect(refused.fault).toBe('unavailable');
  });

  it('gives timeout when Turnkey does not answer before the signal', async () => {
    const key = tk.createKey('secp256k1');
    const custody = await turnkey.open(configFor(key), context('secp256k1'));
    tk.setLatency(5000);
    try {
      const started = Date.now();
      const err = await fault(() => custody.sign(new Uint8Array(32).fill(6), AbortSignal.timeout(200)));
      expect(err.fault).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      tk.setLatency(0);
    }
  });

  it('refuses unknown config fields and shows no secret', () => {
    const key = { privateKeyId: 'pk-1', publicKey: '02'.padEnd(66, '1') };
    const cfg = configFor(key);
    expect(turnkey.visible(cfg)).toEqual({
      api_public_key: tk.apiKey.publicKey,
      organization_id: tk.organizationId,
      private_key_id: 'pk-1',
      public_key: key.publicKey,
    });
    expect(turnkey.config.safeParse({ ...cfg, extra: 1 }).success).toBe(false);
    expect(turnkey.config.safeParse({ ...cfg, api_public_key: `04${'1'.repeat(128)}` }).success).toBe(false);
    const { base_url: _b, ...noUrl } = cfg;
    expect(turnkey.config.safeParse(noUrl).success).toBe(true);
  });

  it('names no secret in any error message', () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const message of seen) for (const secret of secrets) expect(message).not.toContain(secret);
  });
});
