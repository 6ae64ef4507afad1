import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { p256 } from '@noble/curves/p256';
import { secp256k1 } from '@noble/curves/secp256k1';

// A loopback Azure Key Vault and Microsoft Entra ID token service over HTTPS (the SDK requires https),
// with a self-signed certificate made by openssl at start; `caFile` holds it for the client to trust.
//
// Entra ID: GET /{tenant}/v2.0/.well-known/openid-configuration, POST /{tenant}/oauth2/v2.0/token
// (client_credentials with client_secret; errors as AADSTS JSON).
// Key Vault: challenge-based auth (401 with WWW-Authenticate naming the authority and resource), then
// GET /keys/{name}/{version?} and POST /keys/{name}/{version}/sign {alg, value} with real keys;
// errors as {"error":{"code","message","innererror"?}} with Key Vault's status codes.

type Crv = 'P-256K' | 'P-256';

interface StoredKey {
  name: string;
  version: string;
  crv: Crv;
  privateKey: Uint8Array;
  publicKey: Uint8Array;
  enabled: boolean;
  expires?: Date;
}

export interface AzureKeyVaultStandin {
  /** The vault's https URL (KeyClient's vaultUrl). */
  vaultUrl: string;
  /** The Entra ID authority host (the credential's authorityHost). */
  authorityHost: string;
  /** PEM file of the self-signed certificate both endpoints serve. */
  caFile: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
  /** Creates (or adds a version to) a key, expiring at `expires` if given; answers its version and 65-byte public point. */
  createKey(name: string, crv?: Crv, expires?: Date): { version: string; publicKey: Uint8Array };
  disableKey(name: string): void;
  deleteKey(name: string): void;
  /** The client's key permissions in the vault's access policy. */
  setPermissions(p: { get?: boolean; sign?: boolean }): void;
  /**
   * Answers requests with this status (503 ServiceUnavailable, 429 Throttled), or normally when undefined:
   * every request, or only Entra ID's token endpoint ('token') or only the vault's ('vault').
   */
  setFailure(status: 429 | 500 | 503 | undefined, where?: 'all' | 'token' | 'vault'): void;
  setLatency(ms: number): void;
  /** Requests seen, as "METHOD /path". */
  requests: string[];
  /** The access tokens issued so far (secrets a message must not show). */
  readonly issuedTokens: string[];
  stop(): Promise<void>;
}

const RESOURCE = 'https://vault.azure.net';

function selfSignedCertificate(): { key: string; cert: string; caFile: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'akv-standin-'));
  const keyFile = join(dir, 'key.pem');
  const caFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      caFile,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(caFile, 'utf8'), caFile, dir };
}

const b64url = (b: Uint8Array) => Buffer.from(b).toString('base64url');

export async function startAzureKeyVaultStandin(opts: { latencyMs?: number } = {}): Promise<AzureKeyVaultStandin> {
  const tls = selfSignedCertificate();
  const tenantId = randomUUID();
  const clientId = randomUUID();
  const clientSecret = `cs~${randomBytes(18).toString('base64url')}`;
  const keys = new Map<string, StoredKey[]>();
  const tokens = new Map<string, number>();
  const permissions = { get: true, sign: true };
  const pending = new Set<NodeJS.Timeout>();
  const requests: string[] = [];
  let latencyMs = opts.latencyMs ?? 0;
  let failure: { status: number; where: 'all' | 'token' | 'vault' } | undefined;
  let base = '';

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
    res.end(JSON.stringify(body));
  };
  const kvError = (res: ServerResponse, status: number, code: string, message: string, inner?: string) =>
    send(res, status, { error: { code, message, ...(inner && { innererror: { code: inner } }) } });
  const aadError = (res: ServerResponse, status: number, error: string, code: number, description: string) =>
    send(res, status, {
      error,
      error_description: `AADSTS${code}: ${description} Trace ID: ${randomUUID()} Correlation ID: ${randomUUID()} Timestamp: ${new Date().toISOString()}`,
      error_codes: [code],
      timestamp: new Date().toISOString(),
      trace_id: randomUUID(),
      correlation_id: randomUUID(),
      error_uri: `${base}/error?code=${code}`,
    });

  const keyBundle = (k: StoredKey) => {
    const x = k.publicKey.subarray(1, 33);
    const y = k.publicKey.subarray(33, 65);
    const now = Math.floor(Date.now() / 1000);
    return {
      key: { kid: `${base}/keys/${k.name}/${k.version}`, kty: 'EC-HSM', key_ops: ['sign', 'verify'], crv: k.crv, x: b64url(x), y: b64url(y) },
      attributes: {
        enabled: k.enabled,
        ...(k.expires && { exp: Math.floor(k.expires.getTime() / 1000) }),
        created: now,
        updated: now,
        recoveryLevel: 'Recoverable+Purgeable',
        recoverableDays: 90,
        exportable: false,
      },
    };
  };

  const findKey = (name: string, version: string): StoredKey | undefined => {
    const versions = keys.get(name);
    if (!versions) return undefined;
    return version ? versions.find((k) => k.version === version) : versions[versions.length - 1];
  };

  const openIdConfiguration = (tenant: string) => ({
    token_endpoint: `${base}/${tenant}/oauth2/v2.0/token`,
    token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
    jwks_uri: `${base}/${tenant}/discovery/v2.0/keys`,
    response_modes_supported: ['query', 'fragment', 'form_post'],
    subject_types_supported: ['pairwise'],
    id_token_signing_alg_values_supported: ['RS256'],
    response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
    scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
    issuer: `${base}/${tenant}/v2.0`,
    request_uri_parameter_supported: false,
    userinfo_endpoint: 'https://graph.microsoft.com/oidc/userinfo',
    authorization_endpoint: `${base}/${tenant}/oauth2/v2.0/authorize`,
    device_authorization_endpoint: `${base}/${tenant}/oauth2/v2.0/devicecode`,
    http_logout_supported: true,
    frontchannel_logout_supported: true,
    end_session_endpoint: `${base}/${tenant}/oauth2/v2.0/logout`,
    claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'tid'],
    kerberos_endpoint: `${base}/${tenant}/kerberos`,
    tenant_region_scope: 'EU',
    cloud_instance_name: 'microsoftonline.com',
    cloud_graph_host_name: 'graph.windows.net',
    msgraph_host: 'graph.microsoft.com',
    rbac_url: 'https://pas.windows.net',
  });

  const token = (res: ServerResponse, tenant: string, body: string) => {
    const form = new URLSearchParams(body);
    if (tenant !== tenantId) return aadError(res, 400, 'invalid_request', 90002, `Tenant '${tenant}' not found.`);
    if (form.get('grant_type') !== 'client_credentials')
      return aadError(res, 400, 'unsupported_grant_type', 70003, 'The app requested an unsupported grant type.');
    if (form.get('client_id') !== clientId) {
      return aadError(res, 400, 'unauthorized_client', 700016, `Application with identifier '${form.get('client_id')}' was not found in the directory.`);
    }
    if (form.get('client_secret') !== clientSecret) {
      return aadError(
        res,
        401,
        'invalid_client',
        7000215,
        'Invalid client secret provided. Ensure the secret being sent in the request is the client secret value.',
      );
    }
    if (form.get('scope') !== `${RESOURCE}/.default`) return aadError(res, 400, 'invalid_scope', 70011, 'The provided value for scope is not valid.');
    const accessToken = randomBytes(32).toString('base64url');
    tokens.set(accessToken, Date.now() + 3600_000);
    send(res, 200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: accessToken });
  };

  const vault = (req: IncomingMessage, res: ServerResponse, path: string, body: string) => {
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const expires = bearer ? tokens.get(bearer) : undefined;
    if (!expires || expires < Date.now()) {
      const challenge = `Bearer authorization="${base}/${tenantId}", resource="${RESOURCE}"`;
      return send(
        res,
        401,
        { error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' } },
        { 'www-authenticate': challenge },
      );
    }
    const m = /^\/keys\/([^/]+)(?:\/([^/]*))?(\/sign)?\/?$/.exec(path);
    if (!m) return kvError(res, 404, 'NotFound', 'The requested resource was not found.');
    const [, name, version = '', op] = m;
    const key = findKey(decodeURIComponent(name), decodeURIComponent(version));
    const notFound = () =>
      kvError(
        res,
        404,
        'KeyNotFound',
        `A key with (name/id) ${name}${version ? `/${version}` : ''} was not found in this key vault. If you recently deleted this key you may be able to recover it using the correct recovery command.`,
      );
    const forbidden = (what: string) =>
      kvError(
        res,
        403,
        'Forbidden',
        `The user, group or application 'appid=${clientId};oid=${randomUUID()};iss=${base}/${tenantId}/' does not have keys ${what} permission on key vault '${new URL(base).host};location=westeurope'.`,
        'ForbiddenByPolicy',
      );
    if (req.method === 'GET' && !op) {
      if (!permissions.get) return forbidden('get');
      if (!key) return notFound();
      return send(res, 200, keyBundle(key));
    }
    if (req.method === 'POST' && op) {
      if (!permissions.sign) return forbidden('sign');
      if (!key) return notFound();
      if (!key.enabled) return kvError(res, 403, 'Forbidden', 'Operation sign is not allowed on a disabled key.', 'KeyDisabled');
      let params: { alg?: string; value?: string };
      try {
        params = JSON.parse(body);
      } catch {
        return kvError(res, 400, 'BadParameter', 'Request body is not valid JSON.');
      }
      const digest = Buffer.from(params.value ?? '', 'base64url');
      const expected = key.crv === 'P-256K' ? 'ES256K' : 'ES256';
      if (params.alg !== expected) return kvError(res, 400, 'BadParameter', `Invalid algorithm ${params.alg} for key of curve ${key.crv}.`);
      if (digest.length !== 32) return kvError(res, 400, 'BadParameter', 'Invalid digest length for the algorithm.');
      const curve = key.crv === 'P-256K' ? secp256k1 : p256;
      // Key Vault answers either s; the caller normalises.
      const signature = curve.sign(digest, key.privateKey, { lowS: false }).toCompactRawBytes();
      return send(res, 200, { kid: `${base}/keys/${key.name}/${key.version}`, value: b64url(signature) });
    }
    return kvError(res, 405, 'MethodNotAllowed', 'The requested method is not allowed.');
  };

  const handle = (req: IncomingMessage, res: ServerResponse, body: string) => {
    const url = new URL(req.url ?? '/', base);
    requests.push(`${req.method} ${url.pathname}`);
    const vaultPath = url.pathname.startsWith('/keys/');
    const where = vaultPath ? 'vault' : url.pathname.endsWith('/token') ? 'token' : 'metadata';
    const status = failure && (failure.where === 'all' || failure.where === where) ? failure.status : undefined;
    if (status === 429 && where === 'vault') {
      return send(
        res,
        429,
        { error: { code: 'Throttled', message: 'Request was not processed because too many requests were received. Reason: VaultRequestTypeLimitReached' } },
        { 'retry-after': '0' },
      );
    }
    if (status && where !== 'vault') {
      return aadError(res, status, status === 500 ? 'server_error' : 'temporarily_unavailable', 90033, 'A transient error has occurred. Please try again.');
    }
    if (status) return kvError(res, status, status === 503 ? 'ServiceUnavailable' : 'InternalServerError', 'The service is unavailable. Try again later.');
    const oidc = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(url.pathname);
    if (oidc && req.method === 'GET') {
      if (oidc[1] !== tenantId) return aadError(res, 400, 'invalid_tenant', 90002, `Tenant '${oidc[1]}' not found.`);
      return send(res, 200, openIdConfiguration(oidc[1]));
    }
    const tokenPath = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(url.pathname);
    if (tokenPath && req.method === 'POST') return token(res, tokenPath[1], body);
    if (vaultPath) {
      if (!url.searchParams.get('api-version'))
        return kvError(res, 400, 'MissingApiVersionParameter', 'The api-version query parameter (?api-version=) is required for all requests.');
      return vault(req, res, url.pathname, body);
    }
    return kvError(res, 404, 'NotFound', 'The requested resource was not found.');
  };

  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const run = () => handle(req, res, Buffer.concat(chunks).toString('utf8'));
      if (latencyMs <= 0) return run();
      const t = setTimeout(() => {
        pending.delete(t);
        run();
      }, latencyMs);
      pending.add(t);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    vaultUrl: base,
    authorityHost: base,
    caFile: tls.caFile,
    tenantId,
    clientId,
    clientSecret,
    requests,
    get issuedTokens() {
      return [...tokens.keys()];
    },
    createKey(name, crv = 'P-256K', expires) {
      const curve = crv === 'P-256K' ? secp256k1 : p256;
      const privateKey = curve.utils.randomPrivateKey();
      const key: StoredKey = {
        name,
        version: randomBytes(16).toString('hex'),
        crv,
        privateKey,
        publicKey: curve.getPublicKey(privateKey, false),
        enabled: true,
        expires,
      };
      keys.set(name, [...(keys.get(name) ?? []), key]);
      return { version: key.version, publicKey: key.publicKey };
    },
    disableKey(name) {
      for (const k of keys.get(name) ?? []) k.enabled = false;
    },
    deleteKey(name) {
      keys.delete(name);
    },
    setPermissions(p) {
      Object.assign(permissions, p);
    },
    setFailure(status, where = 'all') {
      failure = status ? { status, where } : undefined;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    async stop() {
      for (const t of pending) clearTimeout(t);
      pending.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(tls.dir, { recursive: true, force: true });
    },
  };
}
