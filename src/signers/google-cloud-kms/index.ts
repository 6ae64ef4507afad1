// Google Cloud KMS: a CryptoKeyVersion (EC_SIGN_SECP256K1_SHA256, or EC_SIGN_ED25519) signs inside KMS; the
// client authenticates as the service account (a self-signed JWT per request, signed with its private key).
// The client speaks the REST (HTTP/1.1 JSON) transport. Endpoint: `api_endpoint` (e.g. `https://cloudkms.example`,
// `http://127.0.0.1:8080`, or a bare host[:port], which is HTTPS) replaces cloudkms.<universe_domain>.
import { createPrivateKey } from 'node:crypto';
import type { KeyManagementServiceClient } from '@google-cloud/kms';
import { z } from 'zod';
import { type Curve, CustodyError, type CustodyFault, type CustodyType, type KeyCustody, secretValue } from '../custody.js';
import { derToCompact, spkiPublicKey } from '../der.js';

// The client library is loaded at the first call of a google_cloud_kms signer, not with the service.
const loadKms = () => import('@google-cloud/kms');

const serviceAccount = z
  .object({
    project_id: z.string().min(1),
    private_key_id: secretValue,
    private_key: secretValue,
    client_email: secretValue,
    client_id: z.string(),
    auth_uri: z.string().default('https://accounts.google.com/o/oauth2/auth'),
    token_uri: z.string().default('https://oauth2.googleapis.com/token'),
    auth_provider_x509_cert_url: z.string().default('https://www.googleapis.com/oauth2/v1/certs'),
    client_x509_cert_url: z.string().default(''),
    universe_domain: z.string().min(1).default('googleapis.com'),
  })
  .strict();

const keyVersion = z
  .object({
    location: z.string().min(1).default('global'),
    key_ring_id: z.string().min(1),
    key_id: z.string().min(1),
    key_version: z.number().int().positive().default(1),
  })
  .strict();

// What api_endpoint may be, as a pattern the API's document can state: a DNS name whose last label
// starts with a letter (a numeric one would be read as an IPv4 address), or a dotted IPv4 address.
const LABEL = '[A-Za-z0-9]+(-[A-Za-z0-9]+)*';
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])';
const PORT = '([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])';
const LAST_LABEL = '[A-Za-z][A-Za-z0-9]*(-[A-Za-z0-9]+)*';
const ENDPOINT = new RegExp(`^(https?://)?((${LABEL}\\.)*${LAST_LABEL}|(${OCTET}\\.){3}${OCTET})(:${PORT})?/?$`);

/** `https://host[:port]`, `http://host[:port]` or a bare `host[:port]` (HTTPS). */
function endpointOf(text: string): { apiEndpoint: string; port: number; protocol: 'http' | 'https' } | undefined {
  try {
    const url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`);
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password || (url.pathname !== '/' && url.pathname !== ''))
      return undefined;
    const protocol = url.protocol === 'http:' ? 'http' : 'https';
    return { apiEndpoint: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) || (protocol === 'http' ? 80 : 443), protocol };
  } catch {
    return undefined;
  }
}

const config = z
  .object({
    service_account: serviceAccount,
    key: keyVersion,
    api_endpoint: z
      .string()
      .regex(ENDPOINT, 'must be http(s)://host[:port] or host[:port]')
      .refine((t) => endpointOf(t) !== undefined, 'must be http(s)://host[:port] or host[:port]')
      .optional(),
  })
  .strict();
export type GoogleCloudKmsConfig = z.infer<typeof config>;

const ALGORITHM: Record<Curve, string> = { secp256k1: 'EC_SIGN_SECP256K1_SHA256', ed25519: 'EC_SIGN_ED25519' };
// One attempt per call: the relayer retries what is unavailable, and the client's own retry loop (up to 10
// minutes for these methods) cannot be stopped by the signal.
const CALL = { retry: null };

const STATUS_FAULTS: Record<string, [CustodyFault, string]> = {
  UNAUTHENTICATED: ['denied', 'the service account credentials were not accepted'],
  PERMISSION_DENIED: ['denied', 'the service account may not use the key'],
  NOT_FOUND: ['not_found', 'the key version does not exist'],
  UNAVAILABLE: ['unavailable', 'Cloud KMS is unavailable'],
  DEADLINE_EXCEEDED: ['unavailable', 'Cloud KMS timed out'],
  INTERNAL: ['unavailable', 'Cloud KMS had an internal error'],
  UNKNOWN: ['unavailable', 'Cloud KMS had an unknown error'],
  ABORTED: ['unavailable', 'Cloud KMS aborted the request'],
  RESOURCE_EXHAUSTED: ['unavailable', 'a Cloud KMS quota is exhausted'],
};
// gRPC status numbers, for errors that carry only the number.
const STATUS_NAMES: Record<number, string> = {
  2: 'UNKNOWN',
  3: 'INVALID_ARGUMENT',
  4: 'DEADLINE_EXCEEDED',
  5: 'NOT_FOUND',
  7: 'PERMISSION_DENIED',
  8: 'RESOURCE_EXHAUSTED',
  9: 'FAILED_PRECONDITION',
  10: 'ABORTED',
  13: 'INTERNAL',
  14: 'UNAVAILABLE',
  16: 'UNAUTHENTICATED',
};

/** The key version's resource name, rendered as the client's cryptoKeyVersionPath renders it (its PathTemplate). */
function cryptoKeyVersionPath(project: string, location: string, keyRing: string, cryptoKey: string, cryptoKeyVersion: string): string {
  const bindings = { project, location, key_ring: keyRing, crypto_key: cryptoKey, crypto_key_version: cryptoKeyVersion };
  let path = 'projects/{project=*}/locations/{location=*}/keyRings/{key_ring=*}/cryptoKeys/{crypto_key=*}/cryptoKeyVersions/{crypto_key_version=*}';
  for (const [key, value] of Object.entries(bindings)) {
    if (!value.match(/[^/{}]+/)) throw new TypeError(`render fails for not matching ${value}`);
    path = path.replace(`{${key}=*}`, `${value}`);
  }
  return path;
}

interface ClientError {
  code?: unknown;
  status?: unknown;
  message?: string;
  cause?: { code?: unknown };
  response?: { status?: number; data?: unknown };
}

/** Google's error body ({"error": {code, message, status}}) from the REST client's error, when it has one. */
function errorBody(e: ClientError): { status?: string; message?: string } {
  for (const raw of [e.response?.data, e.message]) {
    let body = raw;
    if (typeof body === 'string') {
      try {
        body = JSON.parse(body);
      } catch {
        continue;
      }
    }
    const error = (body as { error?: { status?: unknown; message?: unknown } } | undefined)?.error;
    if (error && typeof error === 'object') {
      return { status: typeof error.status === 'string' ? error.status : undefined, message: typeof error.message === 'string' ? error.message : undefined };
    }
  }
  return {};
}

function kmsFault(err: unknown, keyName: string, signal: AbortSignal): CustodyError {
  if (err instanceof CustodyError) return err;
  if (signal.aborted) return new CustodyError('timeout', `Google Cloud KMS did not answer in time for ${keyName}`);
  const e = (err ?? {}) as ClientError;
  const body = errorBody(e);
  const http = typeof e.response?.status === 'number' ? e.response.status : typeof e.status === 'number' ? e.status : undefined;
  const status = body.status ?? (http === undefined && typeof e.code === 'number' ? STATUS_NAMES[e.code] : undefined);
  const said = [http && `HTTP ${http}`, status].filter(Boolean).join(', ');
  const fault = (f: CustodyFault, what: string) => new CustodyError(f, `Google Cloud KMS ${keyName}: ${what} (${said})`);
  const message = body.message ?? '';

  if (status && STATUS_FAULTS[status]) return fault(...STATUS_FAULTS[status]);
  // Both a key version that is not ENABLED and a key of another purpose are FAILED_PRECONDITION.
  if (status === 'FAILED_PRECONDITION') {
    return /purpose|algorithm/i.test(message)
      ? fault('wrong_key', 'the key is not an asymmetric signing key')
      : fault('disabled', 'the key version is not enabled');
  }
  if (status === 'INVALID_ARGUMENT' && /algorithm/i.test(message)) return fault('wrong_key', 'the key cannot sign this way');
  if (http === 401 || http === 403) return fault('denied', 'access denied');
  if (http === 404) return fault('not_found', 'the key version does not exist');
  if (http !== undefined && (http === 408 || http === 429 || http >= 500)) return fault('unavailable', 'Cloud KMS could not serve the request');
  if (status || http !== undefined) return fault('rejected', 'Cloud KMS rejected the request');
  // No answer from the service: the connection failed.
  const code = typeof e.code === 'string' ? e.code : typeof e.cause?.code === 'string' ? e.cause.code : 'no answer';
  return new CustodyError('unavailable', `Google Cloud KMS could not be reached for ${keyName} (${code})`);
}

export const googleCloudKms: CustodyType<GoogleCloudKmsConfig> = {
  type: 'google_cloud_kms',
  curves: ['secp256k1', 'ed25519'],
  config,
  visible: (c) => {
    const { private_key: _key, private_key_id: _keyId, client_email: _email, ...account } = c.service_account;
    return { service_account: account, key: c.key, ...(c.api_endpoint ? { api_endpoint: c.api_endpoint } : {}) };
  },
  open(c, ctx): KeyCustody {
    const curve = ctx.curve;
    const sa = c.service_account;
    // A key kept in an environment variable often has its newlines escaped.
    const privateKey = ctx.secret(sa.private_key).replace(/\\n/g, '\n');
    try {
      createPrivateKey(privateKey);
    } catch {
      throw new CustodyError('denied', `signer ${ctx.id}: service_account.private_key is not a PEM private key`);
    }
    const endpoint = c.api_endpoint ? endpointOf(c.api_endpoint) : undefined;
    const options = {
      credentials: {
        type: 'service_account',
        project_id: sa.project_id,
        private_key_id: ctx.secret(sa.private_key_id),
        private_key: privateKey,
        client_email: ctx.secret(sa.client_email),
        client_id: sa.client_id,
        universe_domain: sa.universe_domain,
      },
      projectId: sa.project_id,
      universeDomain: sa.universe_domain,
      fallback: true,
      ...endpoint,
    };
    const { location, key_ring_id, key_id, key_version } = c.key;
    const name = cryptoKeyVersionPath(sa.project_id, location, key_ring_id, key_id, String(key_version));
    const keyName = `key version ${name}`;
    // Made at the first call (what its constructor throws is passed on as it is, as open() did).
    let client: KeyManagementServiceClient | undefined;

    // The client takes no abort signal: the call is left to finish on its own when the signal fires.
    async function call<T>(run: (kms: KeyManagementServiceClient) => Promise<T>, signal: AbortSignal): Promise<T> {
      if (signal.aborted) throw kmsFault(undefined, keyName, signal);
      const { KeyManagementServiceClient } = await loadKms();
      client ??= new KeyManagementServiceClient(options);
      const kms = client;
      if (signal.aborted) throw kmsFault(undefined, keyName, signal);
      let onAbort = () => {};
      const aborted = new Promise<never>((_, reject) => {
        onAbort = () => reject(kmsFault(undefined, keyName, signal));
        signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        return await Promise.race([run(kms), aborted]);
      } catch (err) {
        throw kmsFault(err, keyName, signal);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    }

    // A P-256 key signs a SHA-256 digest too: the key's algorithm is checked before its first signature.
    let checked = false;
    async function publicKey(signal: AbortSignal): Promise<Uint8Array> {
      const [answer] = await call((kms) => kms.getPublicKey({ name }, CALL), signal);
      const algorithm = String(answer.algorithm);
      if (algorithm !== ALGORITHM[curve])
        throw new CustodyError('wrong_key', `Google Cloud KMS ${keyName} is ${algorithm}, not ${ALGORITHM[curve]} (${curve})`);
      if (!answer.pem) throw new CustodyError('rejected', `Google Cloud KMS answered no public key for ${keyName}`);
      const key = spkiPublicKey(answer.pem);
      checked = true;
      return key;
    }

    return {
      curve,
      publicKey,
      async sign(data, signal) {
        if (!checked) await publicKey(signal);
        // secp256k1: the digest as given (KMS does not hash it); Ed25519: the message itself.
        const request = curve === 'secp256k1' ? { name, digest: { sha256: data } } : { name, data };
        const [answer] = await call((kms) => kms.asymmetricSign(request, CALL), signal);
        const raw = answer.signature;
        const signature = typeof raw === 'string' ? new Uint8Array(Buffer.from(raw, 'base64')) : raw ? new Uint8Array(raw) : undefined;
        if (!signature?.length) throw new CustodyError('rejected', `Google Cloud KMS answered no signature for ${keyName}`);
        if (curve === 'secp256k1') return derToCompact(signature);
        if (signature.length !== 64)
          throw new CustodyError('rejected', `Google Cloud KMS answered an Ed25519 signature of ${signature.length} bytes for ${keyName}`);
        return signature;
      },
      async close() {
        await client?.close();
      },
    };
  },
};
