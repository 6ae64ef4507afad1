import { createPublicKey, verify } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import { keccak256, toBytes } from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Curve, CustodyError, type OpenContext, type SecretValue } from '../../src/signers/custody.js';
import { cdp, type CdpConfig } from '../../src/signers/cdp/index.js';
import { type CdpApiKey, type CdpStandin, startCdpStandin } from '../support/standins/cdp.js';

const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

function context(curve: Curve): OpenContext {
  return {
    id: 'cdp-signer',
    curve,
    baseDir: process.cwd(),
    secret: (s: SecretValue) => (typeof s === 'string' ? s : s.value),
  };
}

const signal = () => AbortSignal.timeout(10_000);
const digestOf = (text: string) => toBytes(keccak256(toBytes(text)));

describe('cdp custody', () => {
  let cb: CdpStandin;
  const seen: string[] = [];
  const secrets: string[] = [];

  beforeAll(async () => {
    cb = await startCdpStandin();
    secrets.push(cb.apiKey.secret, cb.walletSecret);
  });
  afterAll(async () => {
    await cb.stop();
  });

  function configFor(address: string, apiKey: CdpApiKey = cb.apiKey, walletSecret = cb.walletSecret, basePath = cb.url): CdpConfig {
    return cdp.config.parse({
      api_key_id: apiKey.id,
      api_key_secret: { type: 'plain', value: apiKey.secret },
      wallet_secret: walletSecret,
      account_address: address,
      base_path: basePath,
    });
  }

  /** The CustodyError `run` throws; fails the test when it throws none. */
  async function fault(run: () => Promise<unknown>): Promise<CustodyError> {
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CustodyError);
    seen.push((err as CustodyError).message);
    return err as CustodyError;
  }

  it('recovers the EVM account public key and signs the digest as it is', async () => {
    const account = cb.createAccount('secp256k1');
    const custody = await cdp.open(configFor(account.address), context('secp256k1'));
    const pub = await custody.publicKey(signal());
    expect(pub).toHaveLength(65);
    expect(Buffer.from(pub).equals(Buffer.from(account.publicKey))).toBe(true);

    const digest = digestOf('a relayed transaction');
    const sig = await custody.sign(digest, signal());
    expect(sig).toHaveLength(64);
    expect(secp256k1.verify(sig, digest, pub, { lowS: false })).toBe(true);
    expect(secp256k1.verify(sig, toBytes(keccak256(digest)), pub, { lowS: false })).toBe(false);
    // The wallet JWT was checked on every signing call, the bearer JWT on all.
    expect(cb.requests.filter((r) => r.includes(`/v2/evm/accounts/${account.address}/sign`))).toHaveLength(2);
  });

  it('accepts a checksummed address and an EC (PEM) API key', async () => {
    const account = cb.createAccount('secp256k1');
    const checksummed = `0x${[...account.address.slice(2)].map((ch, i) => (i % 2 ? ch.toUpperCase() : ch)).join('')}`;
    const ecKey = cb.createApiKey('ec');
    secrets.push(ecKey.secret);
    const custody = await cdp.open(configFor(checksummed, ecKey), context('secp256k1'));
    expect(Buffer.from(await custody.publicKey(signal())).equals(Buffer.from(account.publicKey))).toBe(true);
  });

  it('answers the Solana account key and signs message bytes as they are', async () => {
    const account = cb.createAccount('ed25519');
    const custody = await cdp.open(configFor(account.address), context('ed25519'));
    const pub = await custody.publicKey(signal());
    expect(Buffer.from(pub).equals(Buffer.from(account.publicKey))).toBe(true);

    // Not UTF-8: signed as the bytes they are, not as text.
    const message = Buffer.from([0x80, 0x01, 0xff, 0x00, ...Buffer.from('a solana transaction message')]);
    const sig = await custody.sign(message, signal());
    expect(sig).toHaveLength(64);
    const verifier = createPublicKey({ key: Buffer.concat([ED25519_SPKI, pub]), format: 'der', type: 'spki' });
    expect(verify(null, message, verifier, sig)).toBe(true);
  });

  it('throws wrong_key when CDP signs with another key, or the account is of the other chain', async () => {
    const account = cb.createAccount('secp256k1');
    const other = cb.createAccount('secp256k1');
    cb.crossWire(account.address, other.address);
    const custody = await cdp.open(configFor(account.address), context('secp256k1'));
    const err = await fault(() => custody.publicKey(signal()));
    expect(err.fault).toBe('wrong_key');
    expect(err.message).toContain(account.address);

    const solana = cb.createAccount('ed25519');
    expect((await fault(async () => cdp.open(configFor(solana.address), context('secp256k1')))).fault).toBe('wrong_key');
    expect((await fault(async () => cdp.open(configFor(other.address), context('ed25519')))).fault).toBe('wrong_key');
  });

  it('maps an account CDP does not hold to not_found', async () => {
    const evm = cb.createAccount('secp256k1');
    const sol = cb.createAccount('ed25519');
    cb.deleteAccount(evm.address);
    cb.deleteAccount(sol.address);
    const evmCustody = await cdp.open(configFor(evm.address), context('secp256k1'));
    const a = await fault(() => evmCustody.publicKey(signal()));
    expect(a.fault).toBe('not_found');
    expect(a.message).toContain(evm.address);
    expect((await fault(() => evmCustody.sign(digestOf('x'), signal()))).fault).toBe('not_found');
    const solCustody = await cdp.open(configFor(sol.address), context('ed25519'));
    expect((await fault(() => solCustody.publicKey(signal()))).fault).toBe('not_found');
    expect((await fault(() => solCustody.sign(Buffer.from('m'), signal()))).fault).toBe('not_found');
  });

  it('maps an unknown API key, a wrong wallet secret and malformed secrets to denied', async () => {
    const account = cb.createAccount('secp256k1');
    const stranger = cb.unknownApiKey();
    secrets.push(stranger.secret);
    const a = await fault(async () => (await cdp.open(configFor(account.address, stranger), context('secp256k1'))).publicKey(signal()));
    expect(a.fault).toBe('denied');

    // A known key id whose secret is another key: the bearer JWT does not verify.
    const forged = { id: cb.apiKey.id, secret: stranger.secret };
    expect((await fault(async () => (await cdp.open(configFor(account.address, forged), context('secp256k1'))).publicKey(signal()))).fault).toBe('denied');

    const wrongWallet = cb.unknownWalletSecret();
    secrets.push(wrongWallet);
    const b = await fault(async () => (await cdp.open(configFor(account.address, cb.apiKey, wrongWallet), context('secp256k1'))).sign(digestOf('y'), signal()));
    expect(b.fault).toBe('denied');
    expect(b.message).toMatch(/Wallet authentication/);

    const sol = cb.createAccount('ed25519');
    const c = await fault(async () => (await cdp.open(configFor(sol.address, cb.apiKey, wrongWallet), context('ed25519'))).sign(Buffer.from('m'), signal()));
    expect(c.fault).toBe('denied');

    const malformed = { id: cb.apiKey.id, secret: 'not-a-key-at-all' };
    const d = await fault(async () => (await cdp.open(configFor(account.address, malformed), context('secp256k1'))).publicKey(signal()));
    expect(d.fault).toBe('denied');
    expect(d.message).not.toContain('not-a-key-at-all');
    const e = await fault(async () =>
      (await cdp.open(configFor(account.address, cb.apiKey, 'bm90LWEta2V5'), context('secp256k1'))).sign(digestOf('z'), signal()),
    );
    expect(e.fault).toBe('denied');
    expect(e.message).not.toContain('bm90LWEta2V5');
  });

  it('maps a policy denial to rejected', async () => {
    const account = cb.createAccount('ed25519');
    cb.denyByPolicy(account.address);
    const custody = await cdp.open(configFor(account.address), context('ed25519'));
    const err = await fault(() => custody.sign(Buffer.from('m'), signal()));
    expect(err.fault).toBe('rejected');
    expect(err.message).toContain('policy_violation');
  });

  it('maps throttling, server errors and a dead endpoint to unavailable', async () => {
    const account = cb.createAccount('secp256k1');
    const custody = await cdp.open(configFor(account.address), context('secp256k1'));
    cb.setFault({ status: 429, errorType: 'rate_limit_exceeded', errorMessage: 'Rate limit exceeded.' });
    expect((await fault(() => custody.sign(digestOf('a'), signal()))).fault).toBe('unavailable');
    cb.setFault({ status: 500, errorType: 'internal_server_error', errorMessage: 'An internal server error occurred.' });
    expect((await fault(() => custody.publicKey(signal()))).fault).toBe('unavailable');
    cb.setFault(undefined);
    cb.setDown(true);
    expect((await fault(() => custody.publicKey(signal()))).fault).toBe('unavailable');
    cb.setDown(false);
    expect(await custody.publicKey(signal())).toHaveLength(65);

    const closed = await startCdpStandin();
    const gone = closed.createAccount('secp256k1');
    const cfg = configFor(gone.address, closed.apiKey, closed.walletSecret, closed.url);
    secrets.push(closed.apiKey.secret, closed.walletSecret);
    await closed.stop();
    expect((await fault(async () => (await cdp.open(cfg, context('secp256k1'))).publicKey(signal()))).fault).toBe('unavailable');
  });

  it('gives timeout when CDP does not answer before the signal', async () => {
    const account = cb.createAccount('ed25519');
    const custody = await cdp.open(configFor(account.address), context('ed25519'));
    cb.setLatency(5000);
    try {
      const started = Date.now();
      const err = await fault(() => custody.sign(Buffer.from('m'), AbortSignal.timeout(200)));
      expect(err.fault).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      cb.setLatency(0);
    }
  });

  it('refuses unknown config fields and bad addresses, and shows no secret', () => {
    const cfg = configFor('0x'.padEnd(42, 'a'));
    expect(cdp.visible(cfg)).toEqual({ api_key_id: cb.apiKey.id, account_address: cfg.account_address });
    expect(cdp.config.safeParse({ ...cfg, extra: 1 }).success).toBe(false);
    expect(cdp.config.safeParse({ ...cfg, account_address: '0x1234' }).success).toBe(false);
    expect(cdp.config.safeParse({ ...cfg, account_address: 'not base58 0OIl' }).success).toBe(false);
    const { base_path: _b, ...noPath } = cfg;
    expect(cdp.config.safeParse(noPath).success).toBe(true);
  });

  it('names no secret in any error message', () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const message of seen) for (const secret of secrets) expect(message).not.toContain(secret);
  });
});
