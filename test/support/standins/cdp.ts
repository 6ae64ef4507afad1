// A loopback Coinbase Developer Platform (v2 Server Wallet): EVM sign-hash, Solana sign-message and Solana
// account lookup on CDP's paths (under /platform, as the real base path), each request's Bearer JWT checked
// with the API key's public key and each signing request's X-Wallet-Auth JWT (with its reqHash of the body)
// with the wallet secret's public key; real secp256k1 and Ed25519 account keys; errors as CDP sends them
// ({ errorType, errorMessage, correlationId, errorLink }).
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  sign as nodeSign,
  verify as nodeVerify,
  type KeyObject,
} from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { secp256k1 } from '@noble/curves/secp256k1';
import { getBase58Decoder } from '@solana/kit';
import { keccak256, toHex } from 'viem';

export type CdpCurve = 'secp256k1' | 'ed25519';

export interface CdpApiKey {
  id: string;
  /** As CDP hands it out: base64 of the Ed25519 seed ‖ public key, or an EC key in PKCS#8 PEM. */
  secret: string;
}

export interface CdpStandinAccount {
  curve: CdpCurve;
  /** 0x address (EVM) or base58 address (Solana). */
  address: string;
  /** 65-byte point (EVM) or the 32-byte Ed25519 key (Solana). */
  publicKey: Uint8Array;
}

interface AccountState extends CdpStandinAccount {
  sign(data: Buffer): string;
}

class CdpFault extends Error {
  constructor(
    readonly status: number,
    readonly errorType: string,
    message: string,
  ) {
    super(message);
  }
}

const ED25519_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');

function newApiKey(kind: 'ed25519' | 'ec'): CdpApiKey & { publicKey: KeyObject } {
  const id = randomUUID();
  if (kind === 'ec') {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    return { id, secret: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(), publicKey };
  }
  const seed = randomBytes(32);
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8, seed]), format: 'der', type: 'pkcs8' });
  const publicKey = createPublicKey(privateKey);
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { id, secret: Buffer.concat([seed, raw]).toString('base64'), publicKey };
}

/** A Wallet Secret as CDP hands it out: base64 of a P-256 key in PKCS#8 DER. */
function newWalletSecret(): { secret: string; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return { secret: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'), publicKey };
}

/** The claims of a compact JWS signed by `key` (EdDSA or ES256), or undefined when it does not verify. */
function verifyJwt(token: string, key: KeyObject): { header: Record<string, unknown>; claims: Record<string, unknown> } | undefined {
  const [h, p, s, extra] = token.split('.');
  if (!h || !p || !s || extra !== undefined) return undefined;
  try {
    const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
    const data = Buffer.from(`${h}.${p}`);
    const sig = Buffer.from(s, 'base64url');
    let ok = false;
    if (header.alg === 'EdDSA' && key.asymmetricKeyType === 'ed25519') ok = nodeVerify(null, data, key, sig);
    if (header.alg === 'ES256' && key.asymmetricKeyType === 'ec') ok = nodeVerify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, sig);
    return ok ? { header, claims } : undefined;
  } catch {
    return undefined;
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

export async function startCdpStandin(opts: { latencyMs?: number } = {}) {
  const apiKeys = new Map<string, KeyObject>();
  const walletKeys: KeyObject[] = [];
  const accounts = new Map<string, AccountState>();
  const policyDenied = new Set<string>();
  const crossWired = new Map<string, string>();
  let latencyMs = opts.latencyMs ?? 0;
  let fault: { status: number; errorType: string; errorMessage: string } | undefined;
  let down = false;
  const requests: string[] = [];

  function createApiKey(kind: 'ed25519' | 'ec' = 'ed25519'): CdpApiKey {
    const { publicKey, ...key } = newApiKey(kind);
    apiKeys.set(key.id, publicKey);
    return key;
  }
  function createWalletSecret(): string {
    const { secret, publicKey } = newWalletSecret();
    walletKeys.push(publicKey);
    return secret;
  }

  const unauthorized = (message: string) => new CdpFault(401, 'unauthorized', message);

  function authenticate(req: http.IncomingMessage, uri: string) {
    const auth = req.headers.authorization;
    if (typeof auth !== 'string' || !auth.startsWith('Bearer ')) throw unauthorized('Unauthorized.');
    const token = auth.slice('Bearer '.length);
    let kid: unknown;
    try {
      kid = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString('utf8')).kid;
    } catch {
      throw unauthorized('Unauthorized.');
    }
    const key = typeof kid === 'string' ? apiKeys.get(kid) : undefined;
    const jwt = key && verifyJwt(token, key);
    if (!jwt) throw unauthorized('Unauthorized.');
    const { claims } = jwt;
    const now = Math.floor(Date.now() / 1000);
    if (claims.sub !== kid || claims.iss !== 'cdp' || Number(claims.exp) <= now || Number(claims.nbf) > now + 5) throw unauthorized('Unauthorized.');
    if (!Array.isArray(claims.uris) || !claims.uris.includes(uri)) throw unauthorized('Unauthorized.');
  }

  function authenticateWallet(req: http.IncomingMessage, uri: string, body: unknown) {
    const token = req.headers['x-wallet-auth'];
    if (typeof token !== 'string' || !token) throw unauthorized('Wallet authentication error: missing X-Wallet-Auth header.');
    const jwt = walletKeys.map((k) => verifyJwt(token, k)).find(Boolean);
    if (!jwt) throw unauthorized('Wallet authentication error: invalid wallet auth token.');
    const { claims } = jwt;
    if (Math.abs(Number(claims.iat) - Date.now() / 1000) > 60) throw unauthorized('Wallet authentication error: token expired.');
    if (!Array.isArray(claims.uris) || !claims.uris.includes(uri)) throw unauthorized('Wallet authentication error: uri mismatch.');
    const reqHash = createHash('sha256')
      .update(JSON.stringify(sortKeys(body)))
      .digest('hex');
    if (claims.reqHash !== reqHash) throw unauthorized('Wallet authentication error: request hash mismatch.');
  }

  function findAccount(curve: CdpCurve, address: string): AccountState {
    const account = accounts.get(curve === 'secp256k1' ? address.toLowerCase() : address);
    if (!account || account.curve !== curve)
      throw new CdpFault(404, 'not_found', `${curve === 'secp256k1' ? 'EVM' : 'Solana'} account with given address not found.`);
    return account;
  }

  function route(method: string, path: string, body: Record<string, unknown>, authWallet: () => void): unknown {
    let m: RegExpMatchArray | null;
    if (method === 'POST' && (m = path.match(/^\/platform\/v2\/evm\/accounts\/([^/]+)\/sign$/))) {
      authWallet();
      const account = findAccount('secp256k1', decodeURIComponent(m[1]));
      if (typeof body.hash !== 'string' || !/^0x[0-9a-fA-F]{64}$/.test(body.hash))
        throw new CdpFault(400, 'invalid_request', 'hash must be a 0x-prefixed 32-byte hex string.');
      if (policyDenied.has(account.address.toLowerCase())) throw new CdpFault(403, 'policy_violation', 'Request was denied by a policy.');
      const signer = accounts.get(crossWired.get(account.address.toLowerCase()) ?? account.address.toLowerCase())!;
      return { signature: signer.sign(Buffer.from(body.hash.slice(2), 'hex')) };
    }
    if (method === 'POST' && (m = path.match(/^\/platform\/v2\/solana\/accounts\/([^/]+)\/sign\/message$/))) {
      authWallet();
      const account = findAccount('ed25519', decodeURIComponent(m[1]));
      const encoding = body.encoding ?? 'utf8';
      if (typeof body.message !== 'string' || (encoding !== 'utf8' && encoding !== 'base64')) throw new CdpFault(400, 'invalid_request', 'Invalid request.');
      if (policyDenied.has(account.address)) throw new CdpFault(403, 'policy_violation', 'Request was denied by a policy.');
      return { signature: account.sign(Buffer.from(body.message, encoding)) };
    }
    if (method === 'GET' && (m = path.match(/^\/platform\/v2\/solana\/accounts\/([^/]+)$/))) {
      const account = findAccount('ed25519', decodeURIComponent(m[1]));
      const at = new Date().toISOString();
      return { address: account.address, policies: [], createdAt: at, updatedAt: at };
    }
    throw new CdpFault(404, 'not_found', 'API not found.');
  }

  function answer(req: http.IncomingMessage, raw: Buffer): { status: number; body: unknown } {
    const correlationId = randomBytes(8).toString('hex');
    const fail = (f: { status: number; errorType: string; message: string }) => ({
      status: f.status,
      body: {
        errorType: f.errorType,
        errorMessage: f.message,
        correlationId,
        errorLink: `https://docs.cdp.coinbase.com/api-reference/v2/errors#${f.errorType}`,
      },
    });
    if (fault) return fail({ status: fault.status, errorType: fault.errorType, message: fault.errorMessage });
    try {
      const method = req.method ?? 'GET';
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const uri = `${method} ${req.headers.host}${path}`;
      authenticate(req, uri);
      let body: Record<string, unknown> = {};
      if (raw.length) {
        try {
          body = JSON.parse(raw.toString('utf8'));
        } catch {
          throw new CdpFault(400, 'invalid_request', 'Invalid request body.');
        }
      }
      return { status: 200, body: route(method, path, body, () => authenticateWallet(req, uri, body)) };
    } catch (err) {
      if (!(err instanceof CdpFault)) throw err;
      return fail(err);
    }
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push(`${req.method} ${req.url}`);
      const reply = () => {
        if (res.destroyed) return;
        if (down) {
          res.writeHead(503, { 'content-type': 'text/plain' });
          res.end('Service Unavailable');
          return;
        }
        const { status, body } = answer(req, Buffer.concat(chunks));
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (latencyMs > 0) setTimeout(reply, latencyMs);
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/platform`;

  return {
    /** The base path, as the SDK's `basePath`. */
    url,
    /** A registered Ed25519 API key. */
    apiKey: createApiKey(),
    /** A registered Wallet Secret. */
    walletSecret: createWalletSecret(),
    requests,
    createApiKey,
    /** An API key or Wallet Secret the project has never seen. */
    unknownApiKey: (kind: 'ed25519' | 'ec' = 'ed25519'): CdpApiKey => {
      const { publicKey: _p, ...key } = newApiKey(kind);
      return key;
    },
    unknownWalletSecret: () => newWalletSecret().secret,
    createAccount(curve: CdpCurve): CdpStandinAccount {
      let state: AccountState;
      if (curve === 'secp256k1') {
        const secret = secp256k1.utils.randomPrivateKey();
        const publicKey = secp256k1.getPublicKey(secret, false);
        const address = `0x${keccak256(publicKey.subarray(1)).slice(-40)}`;
        state = {
          curve,
          address,
          publicKey,
          sign(digest) {
            const sig = secp256k1.sign(digest, secret);
            return toHex(new Uint8Array([...sig.toCompactRawBytes(), 27 + sig.recovery]));
          },
        };
        accounts.set(address.toLowerCase(), state);
      } else {
        const key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8, randomBytes(32)]), format: 'der', type: 'pkcs8' });
        const publicKey = new Uint8Array(createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(-32));
        const address = getBase58Decoder().decode(publicKey);
        state = { curve, address, publicKey, sign: (message) => getBase58Decoder().decode(nodeSign(null, message, key)) };
        accounts.set(address, state);
      }
      const { sign: _sign, ...info } = state;
      return info;
    },
    deleteAccount: (address: string) => void accounts.delete(address.startsWith('0x') ? address.toLowerCase() : address),
    /** Makes the project's policy deny signing with the account (403 policy_violation). */
    denyByPolicy: (address: string) => void policyDenied.add(address.startsWith('0x') ? address.toLowerCase() : address),
    /** A misbehaving CDP: hash signing requests for EVM account `a` are signed with account `b`'s key. */
    crossWire: (a: string, b: string) => void crossWired.set(a.toLowerCase(), b.toLowerCase()),
    /** Answers every request with this CDP error (e.g. 429 rate_limit_exceeded), or normally again with undefined. */
    setFault(f: { status: number; errorType: string; errorMessage: string } | undefined) {
      fault = f;
    },
    setLatency(ms: number) {
      latencyMs = ms;
    },
    /** While down, every request is answered 503 by the gateway in front. */
    setDown(flag: boolean) {
      down = flag;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type CdpStandin = Awaited<ReturnType<typeof startCdpStandin>>;
