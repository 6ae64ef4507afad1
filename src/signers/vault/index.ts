import { createPrivateKey, createPublicKey, type KeyObject, sign as signEd25519 } from 'node:crypto';
import type NodeVault from 'node-vault';
import { isPrivate, pointFromScalar, sign as signSecp256k1 } from 'tiny-secp256k1';
import { z } from 'zod';
import { type Curve, CustodyError, type CustodyType, type KeyCustody, type OpenContext, secretValue, type SecretValue } from '../custody.js';
import { urlText } from '../../lib/validate.js';

// HashiCorp Vault, two signer types:
// - `vault`: the private key is kept in a KV v2 secret (hex under `value`, as the reference stores it),
//   read once after an AppRole login; signing then happens here. The key lives only in a closure.
// - `vault_transit` (../vault-transit): signing inside the transit engine; it reuses the session below.
// The endpoint is `address` (node-vault's endpoint, e.g. https://vault.example:8200); `namespace` is
// sent as X-Vault-Namespace (Vault Enterprise / HCP Vault).
// node-vault takes no abort signal: each call is raced against the signal instead, and every request
// carries a timeout so that an abandoned one does not hold its socket for ever.

// node-vault is loaded at the first call of a vault or vault_transit signer, not with the service.
const loadNodeVault = async () => (await import('node-vault')).default;

const REQUEST_TIMEOUT_MS = 30_000;
// Log in again this long before the token's lease runs out.
const TOKEN_MARGIN_MS = 30_000;

export interface VaultLogin {
  address: string;
  namespace?: string;
  role_id: SecretValue;
  secret_id: SecretValue;
}

/** node-vault's client fields that it fills from the environment. */
interface Settable {
  token?: string;
  namespace?: string;
  pathPrefix: string;
}

/** What a failed node-vault call looked like: a Vault answer (status and `errors`), or no answer. */
interface VaultFailure {
  response?: { statusCode?: number; body?: { errors?: unknown } };
  code?: string;
  name?: string;
}

/** The CustodyError for a Vault failure while `doing` something with `ref` (Vault's own words are not repeated: some echo the request). */
export function vaultFault(err: unknown, signal: AbortSignal, ref: string, doing: string): CustodyError {
  if (err instanceof CustodyError) return err;
  if (signal.aborted) return new CustodyError('timeout', `Vault ${ref}: ${doing} was not answered in time`);
  const { response, code, name } = err as VaultFailure;
  const status = response?.statusCode;
  const errors = Array.isArray(response?.body?.errors) ? (response.body.errors as unknown[]).map(String) : [];
  const says = (text: string) => errors.some((e) => e.includes(text));
  if (status === undefined) return new CustodyError('unavailable', `Vault ${ref}: ${doing} failed (${code ?? name ?? 'no answer'})`);
  if (status === 401 || status === 403) return new CustodyError('denied', `Vault ${ref}: ${doing} was denied (HTTP ${status} permission denied)`);
  // Transit answers 400 "encryption key not found" when asked to sign with a key it does not have.
  if (status === 404 || says('key not found')) return new CustodyError('not_found', `Vault ${ref} was not found (HTTP ${status})`);
  if (status === 503 && says('Vault is sealed')) return new CustodyError('unavailable', `Vault ${ref}: ${doing} failed (HTTP 503, Vault is sealed)`);
  if (status === 429 || status >= 500) return new CustodyError('unavailable', `Vault ${ref}: ${doing} failed (HTTP ${status})`);
  return new CustodyError('rejected', `Vault ${ref}: ${doing} was refused (HTTP ${status})`);
}

/** `work`, or the signal's abort if that comes first (the request itself runs on to its timeout). */
export function raced<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

/** A path for node-vault, each segment of the names escaped. */
export const vaultPath = (...parts: string[]) => parts.flatMap((p) => p.split('/').filter(Boolean).map(encodeURIComponent)).join('/');

/** The part of a Vault answer the signers read. */
export interface VaultAnswer {
  data?: Record<string, unknown> | null;
}

export interface VaultSession {
  read(path: string, signal: AbortSignal): Promise<VaultAnswer | undefined>;
  write(path: string, data: object, signal: AbortSignal): Promise<VaultAnswer | undefined>;
}

/**
 * A node-vault client logged in by AppRole: logs in on first use and again before the token's lease
 * runs out, or once when Vault refuses a token it had taken (revoked, or past its max TTL).
 */
export function vaultSession(c: VaultLogin, ctx: OpenContext, ref: string): VaultSession {
  const roleId = ctx.secret(c.role_id);
  const secretId = ctx.secret(c.secret_id);
  // The client, made at the first call.
  let made: NodeVault.client | undefined;
  const vaultClient = async (): Promise<NodeVault.client> => {
    const nodeVault = await loadNodeVault();
    if (!made) {
      made = nodeVault({ endpoint: c.address, apiVersion: 'v1', requestOptions: { timeout: REQUEST_TIMEOUT_MS } });
      // node-vault falls back to VAULT_TOKEN, VAULT_NAMESPACE and VAULT_PREFIX: only the config counts here.
      const settable = made as unknown as Settable;
      settable.token = undefined;
      settable.namespace = c.namespace;
      settable.pathPrefix = '';
    }
    return made;
  };

  let expiresAt = 0;
  let login: Promise<void> | undefined;
  const logIn = (client: NodeVault.client) => {
    login ??= (async () => {
      (client as unknown as Settable).token = undefined;
      try {
        const answer = await client.approleLogin({ role_id: roleId, secret_id: secretId });
        const lease = Number(answer?.auth?.lease_duration ?? 0);
        if (!answer?.auth?.client_token) throw new CustodyError('denied', `Vault ${ref}: the AppRole login gave no token`);
        expiresAt = lease > 0 ? Date.now() + lease * 1000 - Math.min(TOKEN_MARGIN_MS, (lease * 1000) / 10) : Number.POSITIVE_INFINITY;
      } catch (err) {
        const status = (err as VaultFailure).response?.statusCode;
        // A refused AppRole login answers 400 ("invalid role or secret ID") or 403.
        if (status === 400 || status === 401 || status === 403)
          throw new CustodyError('denied', `Vault ${ref}: the AppRole login was refused (HTTP ${status})`);
        throw err;
      } finally {
        login = undefined;
      }
    })();
    return login;
  };

  const call = async <T>(request: (client: NodeVault.client) => Promise<T>, signal: AbortSignal): Promise<T> => {
    const client = await raced(vaultClient(), signal);
    if (Date.now() >= expiresAt) await raced(logIn(client), signal);
    try {
      return await raced(request(client), signal);
    } catch (err) {
      if ((err as VaultFailure).response?.statusCode !== 403 || signal.aborted) throw err;
      await raced(logIn(client), signal);
      return await raced(request(client), signal);
    }
  };

  return {
    read: (path, signal) => call((client) => client.read(path), signal),
    write: (path, data, signal) => call((client) => client.write(path, data), signal),
  };
}

// PKCS#8 wrapper of a raw Ed25519 seed (RFC 8410).
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

interface LocalKey {
  publicKey: Uint8Array;
  sign(data: Uint8Array): Uint8Array;
  forget(): void;
}

/** A signer over the secret's `value`, or wrong_key naming what is wrong with it (never the value). */
function localKey(value: unknown, curve: Curve, ref: string): LocalKey {
  const hex = typeof value === 'string' ? value.trim().replace(/^0x/i, '') : '';
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new CustodyError('wrong_key', `Vault ${ref} holds no 32-byte hex private key under "value"`);
  const secret = Uint8Array.from(Buffer.from(hex, 'hex'));
  if (curve === 'secp256k1') {
    if (!isPrivate(secret)) throw new CustodyError('wrong_key', `Vault ${ref} holds a value that is not a secp256k1 private key`);
    const publicKey = Uint8Array.from(pointFromScalar(secret, false)!);
    return {
      publicKey,
      sign(digest) {
        if (digest.length !== 32) throw new CustodyError('rejected', `Vault ${ref}: secp256k1 signs a 32-byte digest, got ${digest.length} bytes`);
        // RFC 6979 nonce, low-s.
        return Uint8Array.from(signSecp256k1(digest, secret));
      },
      forget: () => secret.fill(0),
    };
  }
  let key: KeyObject | undefined = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, secret]), format: 'der', type: 'pkcs8' });
  secret.fill(0);
  const publicKey = new Uint8Array(createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(-32));
  return {
    publicKey,
    sign(message) {
      if (!key) throw new CustodyError('rejected', `Vault ${ref}: the custody is closed`);
      return new Uint8Array(signEd25519(null, message, key));
    },
    forget: () => (key = undefined),
  };
}

const config = z
  .object({
    address: urlText.url(),
    namespace: z.string().min(1).optional(),
    role_id: secretValue,
    secret_id: secretValue,
    key_name: z.string().min(1),
    mount_point: z.string().min(1).optional(),
  })
  .strict();
type Config = z.infer<typeof config>;

export const vault: CustodyType<Config> = {
  type: 'vault',
  curves: ['secp256k1', 'ed25519'],
  config,
  visible: (c) => ({ address: c.address, namespace: c.namespace, key_name: c.key_name, mount_point: c.mount_point }),
  open(c, ctx): KeyCustody {
    const mount = c.mount_point ?? 'secret';
    const ref = `secret ${mount}/${c.key_name} at ${c.address}${c.namespace ? ` (namespace ${c.namespace})` : ''}`;
    const session = vaultSession(c, ctx, ref);
    const curve = ctx.curve;
    let key: LocalKey | undefined;
    let closed = false;

    // Read once; a failed read is tried again on the next call.
    const load = async (signal: AbortSignal) => {
      if (closed) throw new CustodyError('rejected', `Vault ${ref}: the custody is closed`);
      if (key) return key;
      const answer = await session.read(vaultPath(mount, 'data', c.key_name), signal);
      if (closed) throw new CustodyError('rejected', `Vault ${ref}: the custody is closed`);
      key ??= localKey((answer?.data?.data as { value?: unknown } | undefined)?.value, curve, ref);
      return key;
    };

    return {
      curve,
      async publicKey(signal) {
        try {
          return Uint8Array.from((await load(signal)).publicKey);
        } catch (err) {
          throw vaultFault(err, signal, ref, 'reading the key');
        }
      },
      async sign(data, signal) {
        try {
          return (await load(signal)).sign(data);
        } catch (err) {
          throw vaultFault(err, signal, ref, 'reading the key');
        }
      },
      async close() {
        closed = true;
        key?.forget();
        key = undefined;
      },
    };
  },
};
