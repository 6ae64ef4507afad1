import { endianness } from 'node:os';
import path from 'node:path';
import type { PKCS11 } from 'pkcs11js';
import { z } from 'zod';
import { type Curve, CustodyError, type CustodyFault, type CustodyType, type KeyCustody, type OpenContext, secretValue } from '../custody.js';

// A key in an HSM reached through its vendor's PKCS#11 module (a shared library loaded in-process).
// The module is the endpoint setting: `module_path` names the vendor's library (a network HSM's client
// library carries its own server address in its own config file; SoftHSM's is SOFTHSM2_CONF).

// pkcs11js is loaded when a pkcs11 signer is first opened, not with the service.
const loadPkcs11js = async () => (await import('pkcs11js')).default;
type Pkcs11js = Awaited<ReturnType<typeof loadPkcs11js>>;

// PKCS#11 3.0 names that pkcs11js does not export.
const CKK_EC_EDWARDS = 0x40;
const CKM_EDDSA = 0x1057;
const SECP256K1_PARAMS = Buffer.from('06052b8104000a', 'hex');
// An Ed25519 key's CKA_EC_PARAMS: the RFC 8410 OID, or the PrintableString "edwards25519" (what OpenSC writes).
const ED25519_PARAMS = [Buffer.from('06032b6570', 'hex'), Buffer.concat([Buffer.from([0x13, 12]), Buffer.from('edwards25519')])];

const config = z
  .strictObject({
    module_path: z.string().min(1),
    token_label: z.string().min(1).max(32).optional(),
    slot: z.number().int().nonnegative().optional(),
    pin: secretValue,
    key_label: z.string().min(1).optional(),
    key_id: z
      .string()
      .regex(/^(0x)?([0-9a-fA-F]{2})+$/, 'must be the key\'s CKA_ID as hex bytes, e.g. "01" or "a1b2c3"')
      .optional(),
  })
  .superRefine((c, ctx) => {
    if ((c.token_label === undefined) === (c.slot === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['token_label'], message: 'give exactly one of token_label or slot to choose the token' });
    }
    if ((c.key_label === undefined) === (c.key_id === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['key_label'], message: 'give exactly one of key_label or key_id to choose the key' });
    }
  })
  // The same two rules, as the API's document states them.
  .meta({
    allOf: [{ oneOf: [{ required: ['token_label'] }, { required: ['slot'] }] }, { oneOf: [{ required: ['key_label'] }, { required: ['key_id'] }] }],
  });
export type Pkcs11Config = z.infer<typeof config>;

// C_Initialize may run once per module in a process, and C_Finalize ends the module for every session
// in the process. open() has no place to share state between two signers naming the same module, so
// this one map is process-wide: each module is loaded once (by resolved path) and counted; the last
// custody to close finalizes it. The library stays loaded (no dlclose) and initializes again at its
// next use, which also lets it see tokens created since (SoftHSM reads its token list at C_Initialize).
const modules = new Map<string, { lib: PKCS11; users: number; ours: boolean }>();

function acquireModule(pkcs11js: Pkcs11js, file: string): PKCS11 {
  let entry = modules.get(file);
  if (!entry) {
    const lib = new pkcs11js.PKCS11();
    lib.load(file);
    entry = { lib, users: 0, ours: true };
    modules.set(file, entry);
  }
  if (entry.users === 0) {
    try {
      // OS locking: pkcs11js runs C_Sign on a worker thread.
      entry.lib.C_Initialize({ flags: pkcs11js.CKF_OS_LOCKING_OK });
      entry.ours = true;
    } catch (e) {
      // Initialized by someone else in this process: use it, never finalize it.
      if (ckr(pkcs11js, e) !== pkcs11js.CKR_CRYPTOKI_ALREADY_INITIALIZED) throw e;
      entry.ours = false;
    }
  }
  entry.users++;
  return entry.lib;
}

function releaseModule(file: string): void {
  const entry = modules.get(file);
  if (!entry || --entry.users > 0 || !entry.ours) return;
  try {
    entry.lib.C_Finalize();
  } catch {
    // Finalizing a module that failed is best effort.
  }
}

/** The CKR_* code of a pkcs11js error, if it is one. */
function ckr(pkcs11js: Pkcs11js, e: unknown): number | undefined {
  return e instanceof pkcs11js.Pkcs11Error ? e.code : undefined;
}

const faults = (pkcs11js: Pkcs11js): [CustodyFault, string, number[]][] => [
  [
    'denied',
    'the token refused the login',
    [
      pkcs11js.CKR_PIN_INCORRECT,
      pkcs11js.CKR_PIN_LOCKED,
      pkcs11js.CKR_PIN_EXPIRED,
      pkcs11js.CKR_PIN_INVALID,
      pkcs11js.CKR_PIN_LEN_RANGE,
      pkcs11js.CKR_USER_PIN_NOT_INITIALIZED,
    ],
  ],
  [
    'wrong_key',
    'the key cannot sign this way',
    [
      pkcs11js.CKR_KEY_TYPE_INCONSISTENT,
      pkcs11js.CKR_KEY_FUNCTION_NOT_PERMITTED,
      pkcs11js.CKR_MECHANISM_INVALID,
      pkcs11js.CKR_MECHANISM_PARAM_INVALID,
      pkcs11js.CKR_KEY_SIZE_RANGE,
    ],
  ],
  ['not_found', 'the key or its token is gone', [pkcs11js.CKR_OBJECT_HANDLE_INVALID, pkcs11js.CKR_KEY_HANDLE_INVALID, pkcs11js.CKR_SLOT_ID_INVALID]],
  ['rejected', 'the token refused the data', [pkcs11js.CKR_DATA_LEN_RANGE, pkcs11js.CKR_DATA_INVALID, pkcs11js.CKR_ARGUMENTS_BAD]],
];

/** A CKK_* value, a CKA_SIGN flag: CK_ULONG / CK_BBOOL in the machine's byte order. */
function ulong(b: Buffer): number {
  if (b.length === 8) return Number(endianness() === 'LE' ? b.readBigUInt64LE() : b.readBigUInt64BE());
  if (b.length === 4) return endianness() === 'LE' ? b.readUInt32LE() : b.readUInt32BE();
  return b.length === 1 ? b[0] : Number.NaN;
}

function keyTypeName(pkcs11js: Pkcs11js, type: number): string {
  if (type === pkcs11js.CKK_EC) return 'an EC key';
  if (type === CKK_EC_EDWARDS) return 'an EdDSA key';
  if (type === pkcs11js.CKK_RSA) return 'an RSA key';
  return `a key of type 0x${type.toString(16)}`;
}

interface Session {
  lib: PKCS11;
  handle: Buffer;
  key: Buffer;
  publicKey: Uint8Array;
}

async function open(cfg: Pkcs11Config, ctx: OpenContext): Promise<KeyCustody> {
  const pin = ctx.secret(cfg.pin);
  const curve: Curve = ctx.curve;
  const modulePath = path.resolve(ctx.baseDir, cfg.module_path);
  const keyId = cfg.key_id === undefined ? undefined : Buffer.from(cfg.key_id.replace(/^0x/, ''), 'hex');
  const keyName = cfg.key_label !== undefined ? `key labelled "${cfg.key_label}"` : `key id ${keyId?.toString('hex')}`;
  const tokenName = cfg.token_label !== undefined ? `token "${cfg.token_label}"` : `slot ${cfg.slot}`;
  const fail = (fault: CustodyFault, what: string) => new CustodyError(fault, `pkcs11 signer ${ctx.id} (${keyName} on ${tokenName}): ${what}`);
  const pkcs11js = await loadPkcs11js();
  const FAULTS = faults(pkcs11js);

  let lib: PKCS11 | undefined;
  let session: Session | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;

  /** A CustodyError for what went wrong, and whether the session must be opened again. */
  function classify(e: unknown): { error: CustodyError; drop: boolean } {
    if (e instanceof CustodyError) return { error: e, drop: e.fault !== 'rejected' && e.fault !== 'wrong_key' };
    const code = ckr(pkcs11js, e);
    if (code === undefined) return { error: fail('unavailable', `the PKCS#11 module failed: ${e instanceof Error ? e.message : String(e)}`), drop: true };
    const name = (e as Error).message;
    const known = FAULTS.find(([, , codes]) => codes.includes(code));
    // Anything else (CKR_DEVICE_*, CKR_SESSION_*, CKR_TOKEN_NOT_PRESENT, CKR_USER_NOT_LOGGED_IN, ...) may pass
    // with a fresh session.
    if (!known) return { error: fail('unavailable', `the token failed (${name})`), drop: true };
    const [fault, what] = known;
    return { error: fail(fault, `${what} (${name})`), drop: fault === 'denied' || fault === 'not_found' };
  }

  function findSlot(l: PKCS11): Buffer {
    const slots = l.C_GetSlotList(true);
    const slot =
      cfg.token_label !== undefined ? slots.find((s) => l.C_GetTokenInfo(s).label.trimEnd() === cfg.token_label) : slots.find((s) => ulong(s) === cfg.slot);
    if (!slot) throw fail('not_found', `no such token in the module ${modulePath}`);
    return slot;
  }

  function findOne(l: PKCS11, handle: Buffer, cls: number): Buffer | undefined {
    const template = [
      { type: pkcs11js.CKA_CLASS, value: cls },
      keyId ? { type: pkcs11js.CKA_ID, value: keyId } : { type: pkcs11js.CKA_LABEL, value: cfg.key_label },
    ];
    l.C_FindObjectsInit(handle, template);
    let found: Buffer[];
    try {
      found = l.C_FindObjects(handle, 2);
    } finally {
      l.C_FindObjectsFinal(handle);
    }
    const kind = cls === pkcs11js.CKO_PRIVATE_KEY ? 'private' : 'public';
    if (found.length > 1) {
      throw fail('wrong_key', keyId ? `more than one ${kind} key has this id` : `more than one ${kind} key has this label; name the key by key_id`);
    }
    return found[0];
  }

  /** Checks the private key is the curve this signer signs with, and the token signs that way. */
  function checkKey(l: PKCS11, handle: Buffer, slot: Buffer, key: Buffer): void {
    const [type, canSign] = l
      .C_GetAttributeValue(handle, key, [{ type: pkcs11js.CKA_KEY_TYPE }, { type: pkcs11js.CKA_SIGN }])
      .map((a) => ulong(a.value as Buffer));
    const wanted = curve === 'secp256k1' ? pkcs11js.CKK_EC : CKK_EC_EDWARDS;
    const label = curve === 'secp256k1' ? 'secp256k1' : 'Ed25519';
    if (type !== wanted) throw fail('wrong_key', `the token holds ${keyTypeName(pkcs11js, type)}, not ${curve === 'secp256k1' ? 'a' : 'an'} ${label} key`);
    const [params] = l.C_GetAttributeValue(handle, key, [{ type: pkcs11js.CKA_EC_PARAMS }]);
    const ok = curve === 'secp256k1' ? SECP256K1_PARAMS.equals(params.value as Buffer) : ED25519_PARAMS.some((p) => p.equals(params.value as Buffer));
    if (!ok) throw fail('wrong_key', `the key is on another curve (CKA_EC_PARAMS ${(params.value as Buffer).toString('hex')}), not ${label}`);
    if (!canSign) throw fail('wrong_key', 'the key is not allowed to sign (CKA_SIGN is false)');
    const mechanism = curve === 'secp256k1' ? pkcs11js.CKM_ECDSA : CKM_EDDSA;
    if (!l.C_GetMechanismList(slot).includes(mechanism)) {
      throw fail('wrong_key', `the token does not offer ${curve === 'secp256k1' ? 'CKM_ECDSA' : 'CKM_EDDSA'} to sign with`);
    }
  }

  /** The raw key from CKA_EC_POINT: a DER OCTET STRING around it (the standard), or bare. */
  function publicKeyOf(l: PKCS11, handle: Buffer, pub: Buffer): Uint8Array {
    const [{ value }] = l.C_GetAttributeValue(handle, pub, [{ type: pkcs11js.CKA_EC_POINT }]);
    const point = value as Buffer;
    const size = curve === 'secp256k1' ? 65 : 32;
    const raw = point.length === size ? point : point.length === size + 2 && point[0] === 0x04 && point[1] === size ? point.subarray(2) : undefined;
    if (!raw || (curve === 'secp256k1' && raw[0] !== 0x04)) {
      throw fail('rejected', `the public key's CKA_EC_POINT is not an uncompressed ${curve} point`);
    }
    return new Uint8Array(raw);
  }

  function start(): Session {
    if (!lib) {
      try {
        lib = acquireModule(pkcs11js, modulePath);
      } catch (e) {
        throw fail('unavailable', `cannot load the PKCS#11 module ${modulePath}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
    const l = lib;
    const slot = findSlot(l);
    const handle = l.C_OpenSession(slot, pkcs11js.CKF_SERIAL_SESSION);
    try {
      try {
        l.C_Login(handle, pkcs11js.CKU_USER, pin);
      } catch (e) {
        // Login is per application and token, not per session: another session of this process
        // (this signer's earlier one, or another signer on the token) logged in already.
        if (ckr(pkcs11js, e) !== pkcs11js.CKR_USER_ALREADY_LOGGED_IN) throw e;
      }
      const key = findOne(l, handle, pkcs11js.CKO_PRIVATE_KEY);
      if (!key) throw fail('not_found', 'no such private key on the token');
      checkKey(l, handle, slot, key);
      const pub = findOne(l, handle, pkcs11js.CKO_PUBLIC_KEY);
      if (!pub) throw fail('not_found', 'the token holds the private key but no public key object with the same label/id');
      return { lib: l, handle, key, publicKey: publicKeyOf(l, handle, pub) };
    } catch (e) {
      try {
        l.C_CloseSession(handle);
      } catch {
        // The session may be gone with the token.
      }
      throw e;
    }
  }

  function end(): void {
    const s = session;
    session = undefined;
    try {
      s?.lib.C_CloseSession(s.handle);
    } catch {
      // Already closed by the token.
    }
  }

  /** Runs `fn` on the session, one call at a time (a PKCS#11 session does one operation at a time). */
  function run<T>(signal: AbortSignal, fn: (s: Session) => T | Promise<T>): Promise<T> {
    const timeout = () => fail('timeout', 'aborted before the token answered');
    if (signal.aborted) return Promise.reject(timeout());
    const turn = queue.then(async () => {
      if (signal.aborted) throw timeout(); // gave up while waiting its turn
      if (closed) throw fail('unavailable', 'the signer is closed');
      try {
        session ??= start();
        return await fn(session);
      } catch (e) {
        const { error, drop } = classify(e);
        if (drop) end();
        throw error;
      }
    });
    queue = turn.catch(() => {});
    // The token cannot be interrupted: the caller stops waiting, the call finishes in the queue.
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(timeout());
      signal.addEventListener('abort', onAbort, { once: true });
      turn.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  return {
    curve,
    publicKey: (signal) => run(signal, (s) => s.publicKey),
    async sign(data, signal) {
      if (curve === 'secp256k1' && data.length !== 32) throw fail('rejected', `a secp256k1 signer signs a 32-byte digest, not ${data.length} bytes`);
      const signature = await run(signal, (s) => {
        s.lib.C_SignInit(s.handle, { mechanism: curve === 'secp256k1' ? pkcs11js.CKM_ECDSA : CKM_EDDSA }, s.key);
        return s.lib.C_SignAsync(s.handle, Buffer.from(data), Buffer.alloc(128));
      });
      // CKM_ECDSA answers r ‖ s, CKM_EDDSA R ‖ S: 64 bytes either way.
      if (signature.length !== 64) throw fail('rejected', `the token answered a ${signature.length}-byte signature, not 64 bytes`);
      return new Uint8Array(signature);
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue;
      end();
      if (lib) releaseModule(modulePath);
      lib = undefined;
    },
  };
}

export const pkcs11: CustodyType<Pkcs11Config> = {
  type: 'pkcs11',
  curves: ['secp256k1', 'ed25519'],
  config,
  visible: (c) => ({ module_path: c.module_path, token_label: c.token_label, slot: c.slot, key_label: c.key_label, key_id: c.key_id }),
  open,
};
