import { generateKeyPairSync, type KeyObject, randomBytes, randomUUID, sign } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A loopback HashiCorp Vault (HTTP API v1) for the `vault` and `vault_transit` signer types:
// AppRole login (POST /v1/auth/approle/login), KV v2 reads (GET /v1/{mount}/data/{path}), transit key
// reads (GET /v1/{mount}/keys/{name}) and signing (POST /v1/{mount}/sign/{name}) with real Ed25519
// keys. Everything lives in one namespace when `namespace` is given (X-Vault-Namespace must name it).
// Errors as Vault sends them: {"errors":[...]} with 400 (bad login, transit errors), 403 (permission
// denied, bad or expired token), 404 ({"errors":[]} for a missing secret or key), 503 when sealed.

type TransitType = 'ed25519' | 'ecdsa-p256' | 'aes256-gcm96';

interface TransitKey {
  type: TransitType;
  versions: { privateKey?: KeyObject; publicKey: string; created: string }[];
}

export interface VaultStandin {
  /** http://127.0.0.1:port */
  address: string;
  namespace?: string;
  roleId: string;
  secretId: string;
  /** Writes a KV v2 secret (a new version) at mount/path. */
  putSecret(path: string, data: Record<string, unknown>, mount?: string): void;
  deleteSecret(path: string, mount?: string): void;
  /** Creates a transit key (or rotates it to a new version); answers the new version's public key as Vault shows it. */
  createTransitKey(name: string, type?: TransitType, mount?: string): { version: number; publicKey: string };
  deleteTransitKey(name: string, mount?: string): void;
  /** What the AppRole's policy allows: reading KV secrets, reading transit keys, signing. */
  setPolicy(p: { kv?: boolean; keys?: boolean; sign?: boolean }): void;
  /** TTL of the tokens logins issue from now on (seconds; 0: no expiry). */
  setTokenTtl(seconds: number): void;
  revokeTokens(): void;
  seal(): void;
  unseal(): void;
  setLatency(ms: number): void;
  /** Requests seen, as "METHOD /path". */
  requests: string[];
  readonly logins: number;
  /** The tokens issued so far (secrets a message must not show). */
  readonly issuedTokens: string[];
  stop(): Promise<void>;
}

export async function startVaultStandin(opts: { latencyMs?: number; namespace?: string } = {}): Promise<VaultStandin> {
  const roleId = randomUUID();
  const secretId = randomUUID();
  const kv = new Map<string, Record<string, unknown>[]>();
  const transit = new Map<string, TransitKey>();
  const tokens = new Map<string, number>();
  const issued: string[] = [];
  const policy = { kv: true, keys: true, sign: true };
  const pending = new Set<NodeJS.Timeout>();
  const requests: string[] = [];
  let tokenTtl = 3600;
  let sealed = false;
  let logins = 0;
  let latencyMs = opts.latencyMs ?? 0;
  const namespace = opts.namespace?.replace(/\/$/, '');

  const send = (res: ServerResponse, status: number, body?: unknown) => {
    if (res.destroyed) return;
    if (body === undefined) return void res.writeHead(status).end();
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const errors = (res: ServerResponse, status: number, ...messages: string[]) => send(res, status, { errors: messages });
  const envelope = (data: unknown, auth: unknown = null) => ({
    request_id: randomUUID(),
    lease_id: '',
    renewable: false,
    lease_duration: 0,
    data,
    wrap_info: null,
    warnings: null,
    auth,
    mount_type: auth ? '' : 'kv',
  });

  const login = (res: ServerResponse, body: Record<string, unknown>, inNamespace: boolean) => {
    // Outside its namespace the AppRole does not exist: the same answer as a wrong secret ID.
    if (!inNamespace || body.role_id !== roleId || body.secret_id !== secretId) return errors(res, 400, 'invalid role or secret ID');
    logins++;
    const token = `hvs.${randomBytes(18).toString('base64url')}`;
    issued.push(token);
    tokens.set(token, tokenTtl > 0 ? Date.now() + tokenTtl * 1000 : Number.POSITIVE_INFINITY);
    send(
      res,
      200,
      envelope(null, {
        client_token: token,
        accessor: randomBytes(12).toString('base64url'),
        policies: ['default', 'relayer'],
        token_policies: ['default', 'relayer'],
        metadata: { role_name: 'relayer' },
        lease_duration: tokenTtl,
        renewable: true,
        entity_id: randomUUID(),
        token_type: 'service',
        orphan: true,
        mfa_requirement: null,
        num_uses: 0,
      }),
    );
  };

  const transitKeyBody = (name: string, key: TransitKey) => ({
    name,
    type: key.type,
    keys: Object.fromEntries(
      key.versions.map((v, i) => [
        String(i + 1),
        key.type === 'aes256-gcm96' ? Math.floor(Date.parse(v.created) / 1000) : { public_key: v.publicKey, creation_time: v.created, name: '' },
      ]),
    ),
    latest_version: key.versions.length,
    min_available_version: 0,
    min_decryption_version: 1,
    min_encryption_version: 0,
    deletion_allowed: false,
    derived: false,
    exportable: false,
    allow_plaintext_backup: false,
    auto_rotate_period: 0,
    imported_key: false,
    supports_encryption: key.type === 'aes256-gcm96',
    supports_decryption: key.type === 'aes256-gcm96',
    supports_derivation: key.type !== 'ecdsa-p256',
    supports_signing: key.type !== 'aes256-gcm96',
  });

  const transitSign = (res: ServerResponse, name: string, key: TransitKey | undefined, body: Record<string, unknown>) => {
    if (!key) return errors(res, 400, 'encryption key not found');
    if (key.type === 'aes256-gcm96') return errors(res, 400, `key type ${key.type} does not support signing`);
    if (typeof body.input !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(body.input))
      return errors(res, 400, 'unable to decode input as base64: illegal base64 data');
    const version = body.key_version === undefined || body.key_version === 0 ? key.versions.length : Number(body.key_version);
    const v = key.versions[version - 1];
    if (!v?.privateKey) return errors(res, 400, `invalid version ${version} for key ${name}`);
    const input = Buffer.from(body.input, 'base64');
    const signature = key.type === 'ed25519' ? sign(null, input, v.privateKey) : sign('sha256', input, { key: v.privateKey, dsaEncoding: 'der' });
    send(res, 200, { ...envelope({ signature: `vault:v${version}:${signature.toString('base64')}`, key_version: version }), mount_type: 'transit' });
  };

  const handle = (req: IncomingMessage, res: ServerResponse, raw: string) => {
    const url = new URL(req.url ?? '/', 'http://vault');
    requests.push(`${req.method} ${url.pathname}`);
    if (sealed) return errors(res, 503, 'Vault is sealed');
    let body: Record<string, unknown> = {};
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch {
        return errors(res, 400, 'failed to parse JSON input: invalid character');
      }
    }
    const header = req.headers['x-vault-namespace'];
    const inNamespace = (typeof header === 'string' ? header.replace(/\/$/, '') : undefined) === namespace;
    const path = url.pathname.replace(/^\/v1\//, '');
    const write = req.method === 'POST' || req.method === 'PUT';
    if (path === 'auth/approle/login' && write) return login(res, body, inNamespace);

    const token = req.headers['x-vault-token'];
    const expires = typeof token === 'string' ? tokens.get(token) : undefined;
    // A token is only good in the namespace it was issued in.
    if (!expires || expires < Date.now() || !inNamespace) return errors(res, 403, 'permission denied');

    const m = /^([^/]+)\/(data|keys|sign)\/(.+)$/.exec(path);
    if (!m) return errors(res, 404, `no handler for route "${path}". route entry not found.`);
    const [, mount, op, rest] = m;
    const name = decodeURIComponent(rest);
    if (op === 'data' && req.method === 'GET') {
      if (!policy.kv) return errors(res, 403, 'permission denied');
      const versions = kv.get(`${mount}/${name}`);
      if (!versions) return errors(res, 404);
      const version = versions.length;
      const data = versions[version - 1];
      return send(
        res,
        200,
        envelope({ data, metadata: { created_time: new Date().toISOString(), custom_metadata: null, deletion_time: '', destroyed: false, version } }),
      );
    }
    const key = transit.get(`${mount}/${name}`);
    if (op === 'keys' && req.method === 'GET') {
      if (!policy.keys) return errors(res, 403, 'permission denied');
      if (!key) return errors(res, 404);
      return send(res, 200, { ...envelope(transitKeyBody(name, key)), mount_type: 'transit' });
    }
    if (op === 'sign' && write) {
      if (!policy.sign) return errors(res, 403, 'permission denied');
      return transitSign(res, name, key, body);
    }
    return errors(res, 405, 'unsupported operation');
  };

  const server = createServer((req, res) => {
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

  return {
    address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    namespace,
    roleId,
    secretId,
    requests,
    get logins() {
      return logins;
    },
    get issuedTokens() {
      return [...issued];
    },
    putSecret(path, data, mount = 'secret') {
      const at = `${mount}/${path}`;
      kv.set(at, [...(kv.get(at) ?? []), data]);
    },
    deleteSecret(path, mount = 'secret') {
      kv.delete(`${mount}/${path}`);
    },
    createTransitKey(name, type = 'ed25519', mount = 'transit') {
      const at = `${mount}/${name}`;
      const key = transit.get(at) ?? { type, versions: [] };
      let privateKey: KeyObject | undefined;
      let publicKey = '';
      if (type === 'ed25519') {
        const pair = generateKeyPairSync('ed25519');
        privateKey = pair.privateKey;
        // Vault shows an Ed25519 public key as the base64 of its 32 bytes.
        publicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
      } else if (type === 'ecdsa-p256') {
        const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
        privateKey = pair.privateKey;
        publicKey = pair.publicKey.export({ format: 'pem', type: 'spki' }).toString();
      }
      key.versions.push({ privateKey, publicKey, created: new Date().toISOString() });
      transit.set(at, key);
      return { version: key.versions.length, publicKey };
    },
    deleteTransitKey(name, mount = 'transit') {
      transit.delete(`${mount}/${name}`);
    },
    setPolicy(p) {
      Object.assign(policy, p);
    },
    setTokenTtl(seconds) {
      tokenTtl = seconds;
    },
    revokeTokens() {
      tokens.clear();
    },
    seal() {
      sealed = true;
    },
    unseal() {
      sealed = false;
    },
    setLatency(ms) {
      latencyMs = ms;
    },
    async stop() {
      for (const t of pending) clearTimeout(t);
      pending.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
