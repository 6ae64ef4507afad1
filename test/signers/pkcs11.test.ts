import { createPublicKey, verify } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1';
import pkcs11js from 'pkcs11js';
import { keccak256, toBytes } from 'viem';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Curve, CustodyError, type CustodyFault, type KeyCustody } from '../../src/signers/custody.js';
import { pkcs11 } from '../../src/signers/pkcs11/index.js';
import { createToken, SOFTHSM_MODULE, type Token, type TokenKey } from '../support/softhsm.js';

// The pkcs11 signer against a real SoftHSM token, through the PKCS#11 module loaded in this process.

const PIN = 'pin-71930264';
const OTHER_PIN = 'pin-58316402';
const WRONG_PIN = 'pin-00042424';
const PINS = [PIN, OTHER_PIN, WRONG_PIN];
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

let main: Token;
let other: Token;
let evmKey: TokenKey;
let solKey: TokenKey;
let otherKey: TokenKey;

const opened: KeyCustody[] = [];

async function open(config: Record<string, unknown>, curve: Curve, baseDir = '/'): Promise<KeyCustody> {
  const parsed = pkcs11.config.parse({ module_path: SOFTHSM_MODULE, token_label: main.label, pin: { type: 'env', value: 'PKCS11_TEST_PIN' }, ...config });
  const custody = await pkcs11.open(parsed, {
    id: 'hsm-signer',
    curve,
    baseDir,
    secret: (s) => {
      if (typeof s === 'string') return s;
      const value = s.type === 'env' ? process.env[s.value] : s.value;
      if (!value) throw new CustodyError('rejected', `${s.value} is unset`);
      return value;
    },
  });
  opened.push(custody);
  return custody;
}

/** The CustodyError a call ends with; its message must name no PIN. */
async function failure(call: Promise<unknown>, fault: CustodyFault): Promise<CustodyError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CustodyError);
  const custodyError = error as CustodyError;
  expect({ fault: custodyError.fault, message: custodyError.message }).toMatchObject({ fault });
  for (const pin of PINS) expect(custodyError.message).not.toContain(pin);
  return custodyError;
}

const signal = () => AbortSignal.timeout(10_000);

function recovers(digest: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  const hex = Buffer.from(publicKey).toString('hex');
  return [0, 1].some((v) => secp256k1.Signature.fromCompact(signature).addRecoveryBit(v).recoverPublicKey(digest).toHex(false) === hex);
}

function ed25519Verifies(message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey]), format: 'der', type: 'spki' });
  return verify(null, message, key, signature);
}

describe('pkcs11 signer on a SoftHSM token', () => {
  beforeAll(() => {
    process.env.PKCS11_TEST_PIN = PIN;
    // Every token is made before the module is first opened: SoftHSM reads its token list at C_Initialize.
    main = createToken({ label: 'relayer-main', pin: PIN });
    evmKey = main.addKey('secp256k1', 'evm-key', '01');
    solKey = main.addKey('ed25519', 'sol-key', '02');
    main.addKey('secp256k1', 'twin', '21');
    main.addKey('secp256k1', 'twin', '22');
    other = createToken({ label: 'relayer-other', pin: OTHER_PIN });
    otherKey = other.addKey('secp256k1', 'evm-key', '0a');
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((c) => c.close?.()));
  });
  afterAll(() => {
    main?.cleanup();
    other?.cleanup();
    delete process.env.PKCS11_TEST_PIN;
  });

  it('takes exactly one token and one key selector, with messages that say so', () => {
    const base = { module_path: SOFTHSM_MODULE, pin: PIN };
    const messages = (c: Record<string, unknown>) => {
      const result = pkcs11.config.safeParse(c);
      return result.success ? [] : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    };
    expect(messages({ ...base, token_label: 't', key_label: 'k' })).toEqual([]);
    expect(messages({ ...base, slot: 3, key_id: '0a0b' })).toEqual([]);
    expect(messages({ ...base, token_label: 't', slot: 3, key_label: 'k' })).toEqual([
      'token_label: give exactly one of token_label or slot to choose the token',
    ]);
    expect(messages({ ...base, key_label: 'k' })).toEqual(['token_label: give exactly one of token_label or slot to choose the token']);
    expect(messages({ ...base, token_label: 't', key_label: 'k', key_id: '01' })).toEqual([
      'key_label: give exactly one of key_label or key_id to choose the key',
    ]);
    expect(messages({ ...base, token_label: 't' })).toEqual(['key_label: give exactly one of key_label or key_id to choose the key']);
    expect(messages({ ...base, token_label: 't', key_id: 'xyz' })[0]).toMatch(/^key_id: must be the key's CKA_ID as hex bytes/);
    expect(messages({ ...base, token_label: 't', key_label: 'k', user_pin: '1' })).toHaveLength(1);
  });

  it('shows the module, token and key, never the PIN', () => {
    const config = pkcs11.config.parse({ module_path: SOFTHSM_MODULE, token_label: 'relayer-main', pin: PIN, key_label: 'evm-key' });
    expect(pkcs11.visible(config)).toEqual({
      module_path: SOFTHSM_MODULE,
      token_label: 'relayer-main',
      slot: undefined,
      key_label: 'evm-key',
      key_id: undefined,
    });
    expect(JSON.stringify(pkcs11.visible(config))).not.toContain(PIN);
  });

  it("answers the secp256k1 key's point and signs a keccak digest as it is", async () => {
    const custody = await open({ key_label: 'evm-key' }, 'secp256k1');
    expect(custody.curve).toBe('secp256k1');
    const publicKey = await custody.publicKey(signal());
    expect(Buffer.from(publicKey).toString('hex')).toBe(Buffer.from(evmKey.publicKey).toString('hex'));
    const digest = toBytes(keccak256(toBytes('a transaction to sign')));
    const signature = await custody.sign(digest, signal());
    expect(signature).toHaveLength(64);
    expect(recovers(digest, signature, evmKey.publicKey)).toBe(true);
    // Not hashed again: the signature is over the digest itself, not over keccak or sha256 of it.
    expect(recovers(toBytes(keccak256(digest)), signature, evmKey.publicKey)).toBe(false);
  });

  it('signs with the Ed25519 key, which node:crypto verifies', async () => {
    const custody = await open({ key_label: 'sol-key' }, 'ed25519');
    const publicKey = await custody.publicKey(signal());
    expect(Buffer.from(publicKey).toString('hex')).toBe(Buffer.from(solKey.publicKey).toString('hex'));
    const message = new TextEncoder().encode('a Solana message, of any length'.repeat(20));
    const signature = await custody.sign(message, signal());
    expect(signature).toHaveLength(64);
    expect(ed25519Verifies(message, signature, solKey.publicKey)).toBe(true);
    expect(ed25519Verifies(new TextEncoder().encode('another message'), signature, solKey.publicKey)).toBe(false);
  });

  it('finds keys by key_id and tokens by slot, and reads module_path from baseDir', async () => {
    const byId = await open({ key_id: '02' }, 'ed25519');
    expect(await byId.publicKey(signal())).toEqual(solKey.publicKey);
    const bySlot = await open({ token_label: undefined, slot: other.slot, key_id: '0x0a', pin: OTHER_PIN }, 'secp256k1');
    expect(await bySlot.publicKey(signal())).toEqual(otherKey.publicKey);
    const digest = toBytes(keccak256('0x1234'));
    expect(recovers(digest, await bySlot.sign(digest, signal()), otherKey.publicKey)).toBe(true);
    const relative = await open({ module_path: 'softhsm/libsofthsm2.so', key_id: '01' }, 'secp256k1', '/usr/lib');
    expect(await relative.publicKey(signal())).toEqual(evmKey.publicKey);
  });

  it('signs many digests at once, each valid, from two signers sharing the token', async () => {
    const evm = await open({ key_label: 'evm-key' }, 'secp256k1');
    const sol = await open({ key_label: 'sol-key' }, 'ed25519');
    const digests = Array.from({ length: 60 }, (_, i) => toBytes(keccak256(toBytes(`transaction ${i}`))));
    const [evmSignatures, solSignatures] = await Promise.all([
      Promise.all(digests.map((d) => evm.sign(d, signal()))),
      Promise.all(digests.map((d) => sol.sign(d, signal()))),
    ]);
    digests.forEach((d, i) => {
      expect(recovers(d, evmSignatures[i], evmKey.publicKey)).toBe(true);
      expect(ed25519Verifies(d, solSignatures[i], solKey.publicKey)).toBe(true);
    });
  });

  it('answers denied for a wrong PIN, naming no PIN', async () => {
    const custody = await open({ token_label: other.label, key_label: 'evm-key', pin: WRONG_PIN }, 'secp256k1');
    const error = await failure(custody.publicKey(signal()), 'denied');
    expect(error.message).toContain('CKR_PIN_INCORRECT');
    expect(error.message).toContain('hsm-signer');
    await failure(custody.sign(new Uint8Array(32), signal()), 'denied');
  });

  it('answers not_found for a missing key, token or slot', async () => {
    const noKey = await failure((await open({ key_label: 'no-such-key' }, 'secp256k1')).publicKey(signal()), 'not_found');
    expect(noKey.message).toContain('key labelled "no-such-key"');
    await failure((await open({ key_id: '7f' }, 'ed25519')).sign(new Uint8Array(5), signal()), 'not_found');
    const noToken = await failure((await open({ token_label: 'no-such-token', key_label: 'evm-key' }, 'secp256k1')).publicKey(signal()), 'not_found');
    expect(noToken.message).toContain('token "no-such-token"');
    await failure((await open({ token_label: undefined, slot: 424242, key_label: 'evm-key' }, 'secp256k1')).publicKey(signal()), 'not_found');
  });

  it('answers wrong_key for a key of the other curve, or a label that names two keys', async () => {
    const edAsEvm = await failure((await open({ key_label: 'sol-key' }, 'secp256k1')).publicKey(signal()), 'wrong_key');
    expect(edAsEvm.message).toContain('an EdDSA key, not a secp256k1 key');
    const evmAsEd = await failure((await open({ key_id: '01' }, 'ed25519')).sign(new Uint8Array(5), signal()), 'wrong_key');
    expect(evmAsEd.message).toContain('an EC key, not an Ed25519 key');
    const twin = await failure((await open({ key_label: 'twin' }, 'secp256k1')).publicKey(signal()), 'wrong_key');
    expect(twin.message).toContain('more than one private key has this label; name the key by key_id');
  });

  it('answers unavailable when the module cannot be loaded, and rejected for a digest of the wrong size', async () => {
    const missing = await failure(
      (await open({ module_path: '/nonexistent/libvendor-pkcs11.so', key_label: 'evm-key' }, 'secp256k1')).publicKey(signal()),
      'unavailable',
    );
    expect(missing.message).toContain('/nonexistent/libvendor-pkcs11.so');
    const custody = await open({ key_label: 'evm-key' }, 'secp256k1');
    await failure(custody.sign(new Uint8Array(33), signal()), 'rejected');
  });

  it('answers timeout for an aborted signal, and unavailable once closed', async () => {
    const custody = await open({ key_label: 'evm-key' }, 'secp256k1');
    await failure(custody.sign(new Uint8Array(32), AbortSignal.abort()), 'timeout');
    expect(await custody.publicKey(signal())).toEqual(evmKey.publicKey);
    await custody.close?.();
    await failure(custody.publicKey(signal()), 'unavailable');
  });

  it('answers unavailable when its session is lost, and opens a new one at the next call', async () => {
    const custody = await open({ key_label: 'evm-key' }, 'secp256k1');
    const digest = toBytes(keccak256('0x5e55'));
    expect(recovers(digest, await custody.sign(digest, signal()), evmKey.publicKey)).toBe(true);
    // Another user of the module in this process closes every session on the token (as a token reset does).
    const module = new pkcs11js.PKCS11();
    module.load(SOFTHSM_MODULE);
    const slot = module.C_GetSlotList(true).find((s) => module.C_GetTokenInfo(s).label.trimEnd() === main.label);
    if (!slot) throw new Error('the token is not in the module');
    module.C_CloseAllSessions(slot);
    const lost = await failure(custody.sign(digest, signal()), 'unavailable');
    expect(lost.message).toContain('CKR_SESSION_HANDLE_INVALID');
    expect(recovers(digest, await custody.sign(digest, signal()), evmKey.publicKey)).toBe(true);
  });

  it('finds the key again after it was deleted and made anew on the token', async () => {
    const custody = await open({ key_label: 'phoenix' }, 'secp256k1');
    const first = main.addKey('secp256k1', 'phoenix', '30');
    // Made after the module was loaded but in a token it already knows: SoftHSM reads objects from disk.
    expect(await custody.publicKey(signal())).toEqual(first.publicKey);
    main.deleteKey('30');
    const digest = toBytes(keccak256('0xabcd'));
    await failure(custody.sign(digest, signal()), 'not_found');
    const second = main.addKey('secp256k1', 'phoenix', '31');
    expect(await custody.publicKey(signal())).toEqual(second.publicKey);
    expect(recovers(digest, await custody.sign(digest, signal()), second.publicKey)).toBe(true);
  });

  it('sees a token made after every signer on the module closed', async () => {
    const before = await open({ key_label: 'evm-key' }, 'secp256k1');
    expect(await before.publicKey(signal())).toEqual(evmKey.publicKey);
    await before.close?.();
    const late = createToken({ label: 'relayer-late', pin: PIN });
    try {
      const key = late.addKey('ed25519', 'late-key');
      const custody = await open({ token_label: 'relayer-late', key_label: 'late-key' }, 'ed25519');
      expect(await custody.publicKey(signal())).toEqual(key.publicKey);
      await custody.close?.();
    } finally {
      late.cleanup();
    }
  });
});
