// A loopback Cloud KMS v1 speaking the REST transport the Node client uses: GET /v1/{name}/publicKey and
// POST /v1/{name}:asymmetricSign, enums as numbers when asked with $alt=json;enum-encoding=int, errors as
// {"error": {code, message, status}}. Callers authenticate as a service account with a self-signed JWT (RS256,
// kid = private_key_id) in `Authorization: Bearer`, which is what the client sends for service-account
// credentials: it never fetches an OAuth token from token_uri, so the stand-in serves none.
import { createHash, generateKeyPairSync, randomBytes, randomUUID, sign as nodeSign, verify, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { secp256k1 } from '@noble/curves/secp256k1';

export type GcpAlgorithm = 'EC_SIGN_SECP256K1_SHA256' | 'EC_SIGN_ED25519' | 'EC_SIGN_P256_SHA256' | 'GOOGLE_SYMMETRIC_ENCRYPTION';
export type GcpVersionState = 'ENABLED' | 'DISABLED' | 'DESTROYED' | 'DESTROY_SCHEDULED';

/** A service account key file's fields, as the Cloud console hands them out. */
export interface GcpServiceAccount {
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
}

export interface GcpKeyRef {
  /** projects/…/cryptoKeyVersions/1 */
  name: string;
  location: string;
  keyRingId: string;
  keyId: string;
  version: number;
}

export interface GoogleCloudKmsStandin {
  /** For the signer's `api_endpoint` (http://127.0.0.1:port). */
  url: string;
  projectId: string;
  /** A service account the stand-in knows (its public key verifies the JWTs). */
  serviceAccount: GcpServiceAccount;
  /** A key file the stand-in does not know, for the same project. */
  strangerAccount(): GcpServiceAccount;
  createKey(algorithm: GcpAlgorithm, at?: { location?: string; keyRingId?: string }): GcpKeyRef;
  setVersionState(name: string, state: GcpVersionState): void;
  disableKey(name: string): void;
  /** Callers lose their permissions on this key version (403 PERMISSION_DENIED). */
  denyKey(name: string): void;
  /** Every request answers this status (UNAVAILABLE, INTERNAL, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED) until cleared. */
  failWith(status: keyof typeof HTTP_STATUS | undefined): void;
  /** Down: every request answers 503. */
  setDown(down: boolean): void;
  setLatency(ms: number): void;
  /** "GET <path>" / "POST <path>" of every request, in order. */
  calls: string[];
  stop(): Promise<void>;
}

const HTTP_STATUS = {
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};
const ALGORITHM_NUMBER: Record<GcpAlgorithm, number> = {
  GOOGLE_SYMMETRIC_ENCRYPTION: 1,
  EC_SIGN_P256_SHA256: 12,
  EC_SIGN_SECP256K1_SHA256: 31,
  EC_SIGN_ED25519: 40,
};
const SCOPES = ['https://www.googleapis.com/auth/cloud-platform', 'https://www.googleapis.com/auth/cloudkms'];
const NAME = /^projects\/([^/]+)\/locations\/([^/]+)\/keyRings\/([^/]+)\/cryptoKeys\/([^/]+)\/cryptoKeyVersions\/([^/:]+)$/;

class GcpError extends Error {
  constructor(
    readonly status: keyof typeof HTTP_STATUS,
    message: string,
  ) {
    super(message);
  }
}

interface Version {
  name: string;
  algorithm: GcpAlgorithm;
  state: GcpVersionState;
  denied: boolean;
  pem?: string;
  sign?(input: Buffer): Buffer;
}

function makeVersion(name: string, algorithm: GcpAlgorithm): Version {
  const version: Version = { name, algorithm, state: 'ENABLED', denied: false };
  const pem = (k: KeyObject) => k.export({ format: 'pem', type: 'spki' }).toString();
  if (algorithm === 'EC_SIGN_SECP256K1_SHA256') {
    const pair = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });
    const d = Buffer.from(pair.privateKey.export({ format: 'jwk' }).d!, 'base64url');
    version.pem = pem(pair.publicKey);
    // The digest is signed as given; s comes out high or low.
    version.sign = (digest) => Buffer.from(secp256k1.sign(digest, d, { lowS: false }).toDERRawBytes());
  } else if (algorithm === 'EC_SIGN_P256_SHA256') {
    const pair = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    version.pem = pem(pair.publicKey);
    version.sign = (digest) => nodeSign(null, digest, { key: pair.privateKey, dsaEncoding: 'der' });
  } else if (algorithm === 'EC_SIGN_ED25519') {
    const pair = generateKeyPairSync('ed25519');
    version.pem = pem(pair.publicKey);
    version.sign = (message) => nodeSign(null, message, pair.privateKey);
  }
  return version;
}

function newAccount(projectId: string): { account: GcpServiceAccount; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const account = {
    project_id: projectId,
    private_key_id: randomBytes(20).toString('hex'),
    private_key: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    client_email: `relayer-${randomBytes(3).toString('hex')}@${projectId}.iam.gserviceaccount.com`,
    client_id: String(BigInt(`0x${randomBytes(8).toString('hex')}`)),
  };
  return { account, publicKey };
}

export async function startGoogleCloudKmsStandin(opts: { latencyMs?: number; projectId?: string } = {}): Promise<GoogleCloudKmsStandin> {
  const projectId = opts.projectId ?? 'relayer-test';
  const known = newAccount(projectId);
  const versions = new Map<string, Version>();
  const calls: string[] = [];
  let latencyMs = opts.latencyMs ?? 0;
  let failure: keyof typeof HTTP_STATUS | undefined;
  let down = false;

  /** The self-signed JWT: RS256 by the known account's key, its kid, unexpired, scoped to Cloud KMS. */
  function authenticate(req: http.IncomingMessage): void {
    const unauthenticated = new GcpError(
      'UNAUTHENTICATED',
      'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
    );
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const parts = token?.split('.') ?? [];
    if (parts.length !== 3) throw unauthenticated;
    let header: { alg?: string; kid?: string };
    let claims: { iss?: string; sub?: string; scope?: string; aud?: string; iat?: number; exp?: number };
    try {
      header = JSON.parse(Buffer.from(parts[0], 'base64url').toString());
      claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString());
    } catch {
      throw unauthenticated;
    }
    const now = Date.now() / 1000;
    const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
    if (header.alg !== 'RS256' || claims.iss !== known.account.client_email || header.kid !== known.account.private_key_id) throw unauthenticated;
    if (!verify('sha256', signed, known.publicKey, Buffer.from(parts[2], 'base64url'))) throw unauthenticated;
    if (!(typeof claims.exp === 'number' && claims.exp > now && typeof claims.iat === 'number' && claims.iat < now + 300)) throw unauthenticated;
    const scoped = claims.scope?.split(' ').some((s) => SCOPES.includes(s)) || claims.aud === 'https://cloudkms.googleapis.com/';
    if (!scoped) throw new GcpError('PERMISSION_DENIED', 'Request had insufficient authentication scopes.');
  }

  function find(name: string, permission: string): Version {
    const version = versions.get(name);
    if (version?.denied) throw new GcpError('PERMISSION_DENIED', `Permission '${permission}' denied on resource '${name}' (or it may not exist).`);
    if (!version) throw new GcpError('NOT_FOUND', `${name} not found.`);
    if (!version.sign) throw new GcpError('FAILED_PRECONDITION', `Operation requested for Key ${name} has incorrect key purpose: ENCRYPT_DECRYPT`);
    if (version.state !== 'ENABLED') {
      throw new GcpError(
        'FAILED_PRECONDITION',
        `The request cannot be fulfilled. Resource ${name} has value ${version.state} in field crypto_key_version.state.`,
      );
    }
    return version;
  }

  function asymmetricSign(version: Version, body: { digest?: Record<string, string>; data?: string }): Buffer {
    const digests = Object.entries(body.digest ?? {});
    const data = body.data === undefined ? undefined : Buffer.from(body.data, 'base64');
    const hasDigest = digests.length > 0;
    if (hasDigest === (data !== undefined)) throw new GcpError('INVALID_ARGUMENT', 'Exactly one of digest or data must be specified.');
    if (version.algorithm === 'EC_SIGN_ED25519') {
      if (!data) throw new GcpError('INVALID_ARGUMENT', `The algorithm ${version.algorithm} signs data; a digest was given.`);
      return version.sign!(data);
    }
    if (data) return version.sign!(createHash('sha256').update(data).digest());
    const [kind, value] = digests[0];
    const digest = Buffer.from(value, 'base64');
    if (kind !== 'sha256' || digest.length !== 32) {
      throw new GcpError('INVALID_ARGUMENT', `The digest (${kind}, ${digest.length} bytes) does not match the algorithm ${version.algorithm}.`);
    }
    return version.sign!(digest);
  }

  function handle(req: http.IncomingMessage, raw: string): [number, object] {
    const url = new URL(req.url ?? '/', 'http://standin');
    calls.push(`${req.method} ${url.pathname}`);
    if (down) return [503, { error: { code: 503, message: 'The service is currently unavailable.', status: 'UNAVAILABLE' } }];
    try {
      authenticate(req);
      if (failure) throw new GcpError(failure, `${failure} (injected by the stand-in)`);
      const numeric = (url.searchParams.get('$alt') ?? '').includes('enum-encoding=int');
      const enumOf = (name: GcpAlgorithm) => (numeric ? ALGORITHM_NUMBER[name] : name);
      const protectionLevel = numeric ? 1 : 'SOFTWARE';
      const path = decodeURIComponent(url.pathname);
      let m: RegExpExecArray | null;
      if (req.method === 'GET' && (m = /^\/v1\/(.+)\/publicKey$/.exec(path)) && NAME.test(m[1])) {
        const version = find(m[1], 'cloudkms.cryptoKeyVersions.viewPublicKey');
        return [200, { pem: version.pem, algorithm: enumOf(version.algorithm), name: version.name, protectionLevel }];
      }
      if (req.method === 'POST' && (m = /^\/v1\/(.+):asymmetricSign$/.exec(path)) && NAME.test(m[1])) {
        const version = find(m[1], 'cloudkms.cryptoKeyVersions.useToSign');
        let body: { digest?: Record<string, string>; data?: string };
        try {
          body = JSON.parse(raw || '{}');
        } catch {
          throw new GcpError('INVALID_ARGUMENT', 'Invalid JSON payload received.');
        }
        const signature = asymmetricSign(version, body);
        return [200, { signature: signature.toString('base64'), verifiedDigestCrc32c: false, verifiedDataCrc32c: false, name: version.name, protectionLevel }];
      }
      throw new GcpError('NOT_FOUND', `The requested URL ${url.pathname} was not found on this server.`);
    } catch (err) {
      if (err instanceof GcpError) return [HTTP_STATUS[err.status], { error: { code: HTTP_STATUS[err.status], message: err.message, status: err.status } }];
      return [500, { error: { code: 500, message: String(err), status: 'INTERNAL' } }];
    }
  }

  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (raw += c));
    req.on('end', () => {
      const [status, body] = handle(req, raw);
      const answer = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
        res.end(JSON.stringify(body));
      };
      if (latencyMs > 0) setTimeout(answer, latencyMs).unref();
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const get = (name: string) => {
    const version = versions.get(name);
    if (!version) throw new Error(`no stand-in key version ${name}`);
    return version;
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    projectId,
    serviceAccount: known.account,
    strangerAccount: () => newAccount(projectId).account,
    calls,
    createKey(algorithm, at = {}) {
      const location = at.location ?? 'global';
      const keyRingId = at.keyRingId ?? 'relayer';
      const keyId = `key-${randomUUID().slice(0, 8)}`;
      const name = `projects/${projectId}/locations/${location}/keyRings/${keyRingId}/cryptoKeys/${keyId}/cryptoKeyVersions/1`;
      versions.set(name, makeVersion(name, algorithm));
      return { name, location, keyRingId, keyId, version: 1 };
    },
    setVersionState: (name, state) => void (get(name).state = state),
    disableKey: (name) => void (get(name).state = 'DISABLED'),
    denyKey: (name) => void (get(name).denied = true),
    failWith: (status) => void (failure = status),
    setDown: (value) => void (down = value),
    setLatency: (ms) => void (latencyMs = ms),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
