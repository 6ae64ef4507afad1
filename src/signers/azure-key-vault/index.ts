import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { rootCertificates } from 'node:tls';
import type { ClientSecretCredential } from '@azure/identity';
import type { CryptographyClient, CryptographyClientOptions, KeyClient, KeyVaultKey } from '@azure/keyvault-keys';
import { z } from 'zod';
import { CustodyError, type CustodyType, type KeyCustody, secretValue } from '../custody.js';
import { urlText } from '../../lib/validate.js';

// Azure Key Vault (or Managed HSM) EC key on secp256k1 ("P-256K"): ES256K signs the digest as given.
// Endpoints: `vault_url` is the vault (KeyClient's vaultUrl); `authority_host` is Entra ID's
// (ClientSecretCredential's authorityHost, https://login.microsoftonline.com unless set). For a
// private endpoint or a stand-in, two optional fields map to the SDK's own options: `ca_file` (a PEM
// file of CAs trusted besides the system's: the pipeline's tlsOptions.ca) and
// `disable_challenge_resource_verification` (the Key Vault clients' option of that name, needed when
// the vault's host is not under the resource domain its 401 challenge names, e.g. 127.0.0.1).

// The SDK is loaded at the first call of an azure_key_vault signer, not with the service.
const loadIdentity = () => import('@azure/identity');
const loadKeys = () => import('@azure/keyvault-keys');
type Identity = Awaited<ReturnType<typeof loadIdentity>>;

/** A custody's SDK clients, and the SDK's classes it uses afterwards. */
interface Clients {
  identity: Identity;
  credential: ClientSecretCredential;
  keys: KeyClient;
  Crypto: typeof CryptographyClient;
}

const httpsUrl = urlText.url().refine((u) => u.startsWith('https://'), 'must be an https URL (Azure SDK requirement)');

const config = z
  .object({
    tenant_id: z.string().min(1),
    client_id: z.string().min(1),
    client_secret: secretValue,
    vault_url: httpsUrl,
    key_name: z.string().min(1),
    key_version: z.string().min(1).optional(),
    authority_host: httpsUrl.optional(),
    ca_file: z.string().min(1).optional(),
    disable_challenge_resource_verification: z.boolean().optional(),
  })
  .strict();
type Config = z.infer<typeof config>;

const SECP256K1_CURVES = new Set(['P-256K', 'SECP256K1']);
// RFC 6749 token error codes that mean the credentials or the app registration, not the service.
const OAUTH_REFUSALS = new Set([
  'invalid_client',
  'unauthorized_client',
  'invalid_grant',
  'invalid_request',
  'invalid_scope',
  'unsupported_grant_type',
  'access_denied',
]);

/**
 * The CustodyError for what the SDK threw while `doing` something with the key (never its message: it may quote a response).
 * `identity` is the loaded @azure/identity, whose error classes are checked for.
 */
function fault(err: unknown, signal: AbortSignal, keyRef: string, doing: string, identity: Identity): CustodyError {
  if (err instanceof CustodyError) return err;
  if (signal.aborted) return new CustodyError('timeout', `Azure Key Vault ${keyRef}: ${doing} was not answered in time`);
  const e = err as { name?: string; statusCode?: number; code?: string; details?: { error?: { innerError?: { code?: string } } } };
  if (err instanceof identity.AuthenticationError) {
    const status = err.statusCode;
    if (status === 400 || status === 401 || status === 403) {
      return new CustodyError('denied', `Azure Key Vault ${keyRef}: Entra ID refused the client credentials (${err.errorResponse.error ?? `HTTP ${status}`})`);
    }
    return new CustodyError('unavailable', `Azure Key Vault ${keyRef}: the Entra ID token request failed (HTTP ${status || 'no answer'})`);
  }
  if (e.name === 'AuthenticationRequiredError' || err instanceof identity.CredentialUnavailableError) {
    // MSAL's errors carry no status: an OAuth error code at the start of the message, or the tenant refusal.
    const message = String((err as Error).message);
    const oauth = /^([a-z_]+):/.exec(message)?.[1];
    if (oauth && OAUTH_REFUSALS.has(oauth)) return new CustodyError('denied', `Azure Key Vault ${keyRef}: Entra ID refused the client credentials (${oauth})`);
    if (message.includes('not configured to acquire tokens for tenant')) {
      return new CustodyError('denied', `Azure Key Vault ${keyRef}: the vault belongs to another tenant than tenant_id`);
    }
    return new CustodyError('unavailable', `Azure Key Vault ${keyRef}: the Entra ID token request failed${oauth ? ` (${oauth})` : ''}`);
  }
  const status = e.statusCode;
  const code = e.code ? ` ${e.code}` : '';
  const inner = e.details?.error?.innerError?.code;
  if (status === 403 && inner === 'KeyDisabled') return new CustodyError('disabled', `Azure Key Vault ${keyRef} is disabled`);
  if (status === 401 || status === 403) return new CustodyError('denied', `Azure Key Vault ${keyRef}: ${doing} was denied (HTTP ${status}${code})`);
  if (status === 404) return new CustodyError('not_found', `Azure Key Vault ${keyRef} was not found (HTTP 404${code})`);
  if (status === 429 || (status !== undefined && status >= 500)) {
    return new CustodyError('unavailable', `Azure Key Vault ${keyRef}: ${doing} failed (HTTP ${status}${code})`);
  }
  if (status !== undefined) return new CustodyError('rejected', `Azure Key Vault ${keyRef}: ${doing} was refused (HTTP ${status}${code})`);
  // No HTTP answer: connection refused or reset, TLS failure, DNS.
  return new CustodyError('unavailable', `Azure Key Vault ${keyRef}: ${doing} failed (${e.code ?? e.name ?? 'network error'})`);
}

/** The 65-byte point of a Key Vault key that may sign with ES256K, else the reason it may not. */
function checkedPoint(key: KeyVaultKey, keyRef: string): Uint8Array {
  const jwk = key.key;
  const { enabled, notBefore, expiresOn } = key.properties;
  if (enabled === false) throw new CustodyError('disabled', `Azure Key Vault ${keyRef} is disabled`);
  const now = Date.now();
  if ((notBefore && now < notBefore.getTime()) || (expiresOn && now > expiresOn.getTime())) {
    throw new CustodyError('disabled', `Azure Key Vault ${keyRef} is outside its activation period`);
  }
  if (!jwk || (jwk.kty !== 'EC' && jwk.kty !== 'EC-HSM') || !jwk.crv || !SECP256K1_CURVES.has(jwk.crv)) {
    throw new CustodyError(
      'wrong_key',
      `Azure Key Vault ${keyRef} is ${jwk?.kty ?? 'unknown'}${jwk?.crv ? ` ${jwk.crv}` : ''}, not an EC P-256K (secp256k1) key`,
    );
  }
  if (jwk.keyOps && !jwk.keyOps.includes('sign')) throw new CustodyError('wrong_key', `Azure Key Vault ${keyRef} does not allow the sign operation`);
  if (jwk.x?.length !== 32 || jwk.y?.length !== 32) throw new CustodyError('wrong_key', `Azure Key Vault ${keyRef} answered no secp256k1 point`);
  return Uint8Array.from([4, ...jwk.x, ...jwk.y]);
}

function readCa(path: string, id: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new CustodyError('rejected', `signer ${id}: cannot read ca_file ${path} (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
  }
}

export const azureKeyVault: CustodyType<Config> = {
  type: 'azure_key_vault',
  curves: ['secp256k1'],
  config,
  visible: (c) => ({ tenant_id: c.tenant_id, client_id: c.client_id, vault_url: c.vault_url, key_name: c.key_name, key_version: c.key_version }),
  open(c, ctx): KeyCustody {
    const keyRef = `key ${c.key_name}${c.key_version ? `/${c.key_version}` : ''} in ${c.vault_url}`;
    const tlsOptions = c.ca_file ? { ca: [...rootCertificates, readCa(resolve(ctx.baseDir, c.ca_file), ctx.id)] } : undefined;
    // One retry for a passing fault; the relayer retries an unavailable custody itself.
    const retryOptions = { maxRetries: 1, retryDelayInMs: 200, maxRetryDelayInMs: 2000 };
    const clientSecret = ctx.secret(c.client_secret);
    const options: CryptographyClientOptions = { tlsOptions, retryOptions, disableChallengeResourceVerification: c.disable_challenge_resource_verification };
    let sdk: Clients | undefined;
    let loaded: { key: KeyVaultKey; point: Uint8Array; crypto: CryptographyClient } | undefined;

    // The SDK's clients, made at the first call (what their constructors throw is passed on as it is, as open() did).
    const clients = async (): Promise<Clients> => {
      const [identity, { CryptographyClient: Crypto, KeyClient: Keys }] = await Promise.all([loadIdentity(), loadKeys()]);
      if (!sdk) {
        const credential = new identity.ClientSecretCredential(c.tenant_id, c.client_id, clientSecret, {
          authorityHost: c.authority_host,
          disableInstanceDiscovery: true,
          tlsOptions,
          retryOptions,
        });
        sdk = { identity, credential, keys: new Keys(c.vault_url, credential, options), Crypto };
      }
      return sdk;
    };

    // The key is read once: its id (with the version) is what signatures are asked of afterwards.
    const load = async ({ credential, keys, Crypto }: Clients, signal: AbortSignal) => {
      if (loaded) return loaded;
      const key = await keys.getKey(c.key_name, { version: c.key_version, abortSignal: signal });
      loaded = { key, point: checkedPoint(key, keyRef), crypto: new Crypto(key, credential, options) };
      return loaded;
    };

    return {
      curve: 'secp256k1',
      async publicKey(signal) {
        const s = await clients();
        try {
          return Uint8Array.from((await load(s, signal)).point);
        } catch (err) {
          throw fault(err, signal, keyRef, 'reading the key', s.identity);
        }
      },
      async sign(digest, signal) {
        if (digest.length !== 32) throw new CustodyError('rejected', `Azure Key Vault ${keyRef}: secp256k1 signs a 32-byte digest, got ${digest.length} bytes`);
        const s = await clients();
        try {
          const { key, crypto } = await load(s, signal);
          // Again, for the expiry date may have passed since the key was read.
          checkedPoint(key, keyRef);
          const { result } = await crypto.sign('ES256K', digest, { abortSignal: signal });
          if (result.length !== 64) throw new CustodyError('rejected', `Azure Key Vault ${keyRef} answered a ${result.length}-byte signature, not r ‖ s`);
          return new Uint8Array(result);
        } catch (err) {
          throw fault(err, signal, keyRef, 'signing', s.identity);
        }
      },
    };
  },
};
