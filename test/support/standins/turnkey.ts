// A loopback Turnkey: the three calls a signer makes (get_private_key, sign_raw_payload, get_activity) on
// Turnkey's paths, each request's X-Stamp checked against the body with a registered P-256 API key, real
// secp256k1 and Ed25519 signing keys, and errors as Turnkey sends them ({ code, message, details }).
import {
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

export type TurnkeyCurve = 'secp256k1' | 'ed25519';
/** How a key's signing activities end: completed, or left in one of Turnkey's other states. */
export type ActivityOutcome = 'COMPLETED' | 'FAILED' | 'REJECTED' | 'CONSENSUS_NEEDED';

export interface TurnkeyApiKey {
  /** Compressed P-256 point, hex (as Turnkey shows API keys). */
  publicKey: string;
  /** The 32-byte scalar, hex. */
  privateKey: string;
}

export interface TurnkeyStandinKey {
  privateKeyId: string;
  curve: TurnkeyCurve;
  /** As Turnkey reports it: compressed secp256k1 point, or the 32-byte Ed25519 key, hex. */
  publicKey: string;
  /** Uncompressed secp256k1 point, or the 32-byte Ed25519 key. */
  rawPublicKey: Uint8Array;
}

interface KeyState extends TurnkeyStandinKey {
  sign(payload: Buffer): { r: string; s: string; v: string };
  outcome: ActivityOutcome;
  /** How many get_activity polls a signing activity stays pending for. */
  pendingPolls: number;
}

interface ActivityState {
  activity: Record<string, unknown>;
  pollsLeft: number;
  final: Record<string, unknown>;
}

class TurnkeyFault extends Error {
  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly errorCode = 'UNSPECIFIED',
  ) {
    super(message);
  }
}

const ED25519_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');

function newApiKey(): TurnkeyApiKey & { key: KeyObject } {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const jwk = privateKey.export({ format: 'jwk' });
  const x = Buffer.from(jwk.x!, 'base64url');
  const y = Buffer.from(jwk.y!, 'base64url');
  return {
    publicKey: Buffer.concat([Buffer.from([y[31] & 1 ? 3 : 2]), x]).toString('hex'),
    privateKey: Buffer.from(jwk.d!, 'base64url').toString('hex'),
    key: createPublicKey(privateKey),
  };
}

function timestamp() {
  const ms = Date.now();
  return { seconds: String(Math.floor(ms / 1000)), nanos: String((ms % 1000) * 1e6) };
}

export async function startTurnkeyStandin(opts: { latencyMs?: number } = {}) {
  const organizationId = randomUUID();
  const apiKeys = new Map<string, { key: KeyObject; allowed: boolean }>();
  const keys = new Map<string, KeyState>();
  const activities = new Map<string, ActivityState>();
  let latencyMs = opts.latencyMs ?? 0;
  let fault: { status: number; code: number; message: string } | undefined;
  const requests: string[] = [];

  function registerApiKey(allowed = true): TurnkeyApiKey {
    const { key, ...pair } = newApiKey();
    apiKeys.set(pair.publicKey, { key, allowed });
    return pair;
  }

  function authenticate(stampHeader: string | string[] | undefined, body: Buffer): { allowed: boolean } {
    if (typeof stampHeader !== 'string' || !stampHeader) {
      throw new TurnkeyFault(
        401,
        16,
        'cannot authenticate public API activity request without a stamp (X-Stamp/X-Stamp-Webauthn header)',
        'REQUEST_NOT_AUTHORIZED',
      );
    }
    let stamp: { publicKey?: string; scheme?: string; signature?: string };
    try {
      stamp = JSON.parse(Buffer.from(stampHeader, 'base64url').toString('utf8'));
    } catch {
      throw new TurnkeyFault(401, 16, 'malformed activity stamp', 'REQUEST_NOT_AUTHORIZED');
    }
    if (stamp.scheme !== 'SIGNATURE_SCHEME_TK_API_P256' || typeof stamp.publicKey !== 'string' || typeof stamp.signature !== 'string') {
      throw new TurnkeyFault(401, 16, 'could not extract api key stamp', 'REQUEST_NOT_AUTHORIZED');
    }
    const apiKey = apiKeys.get(stamp.publicKey.toLowerCase());
    if (!apiKey) throw new TurnkeyFault(401, 16, 'could not find public key in organization or its parent organization', 'PUBLIC_KEY_NOT_FOUND');
    let valid = false;
    try {
      valid = nodeVerify('sha256', body, apiKey.key, Buffer.from(stamp.signature, 'hex'));
    } catch {
      valid = false;
    }
    if (!valid) throw new TurnkeyFault(401, 16, 'could not verify api key signature', 'SIGNATURE_INVALID');
    return apiKey;
  }

  function organization(body: Record<string, unknown>) {
    if (body.organizationId !== organizationId) throw new TurnkeyFault(404, 5, 'no organization found with the given ID', 'ORGANIZATION_NOT_FOUND');
  }

  function getPrivateKey(body: Record<string, unknown>) {
    organization(body);
    const key = keys.get(String(body.privateKeyId));
    if (!key) throw new TurnkeyFault(404, 5, `private key not found: ${String(body.privateKeyId)}`);
    const at = timestamp();
    return {
      privateKey: {
        privateKeyId: key.privateKeyId,
        publicKey: key.publicKey,
        privateKeyName: `key-${key.privateKeyId.slice(0, 8)}`,
        curve: key.curve === 'secp256k1' ? 'CURVE_SECP256K1' : 'CURVE_ED25519',
        addresses: [],
        privateKeyTags: [],
        createdAt: at,
        updatedAt: at,
        exported: false,
        imported: false,
      },
    };
  }

  function signRawPayload(body: Record<string, unknown>) {
    if (body.type !== 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2' || typeof body.timestampMs !== 'string')
      throw new TurnkeyFault(400, 3, 'bad request body', 'BAD_REQUEST');
    organization(body);
    const p = (body.parameters ?? {}) as Record<string, unknown>;
    const key = [...keys.values()].find((k) => k.privateKeyId === p.signWith);
    if (!key) throw new TurnkeyFault(404, 5, 'Could not find any resource to sign with.');
    if (p.encoding !== 'PAYLOAD_ENCODING_HEXADECIMAL' || typeof p.payload !== 'string' || !/^(0x)?([0-9a-fA-F]{2})+$/.test(p.payload)) {
      throw new TurnkeyFault(400, 3, 'invalid payload encoding', 'INVALID_PAYLOAD_ENCODING');
    }
    const payload = Buffer.from(p.payload.replace(/^0x/, ''), 'hex');
    if (key.curve === 'ed25519' && p.hashFunction !== 'HASH_FUNCTION_NOT_APPLICABLE')
      throw new TurnkeyFault(400, 3, 'invalid hash function', 'INVALID_HASH_FUNCTION');
    if (key.curve === 'secp256k1') {
      // Only the no-op mode is served: the signer hands over digests.
      if (p.hashFunction !== 'HASH_FUNCTION_NO_OP') throw new TurnkeyFault(400, 3, 'invalid hash function', 'INVALID_HASH_FUNCTION');
      if (payload.length !== 32) throw new TurnkeyFault(400, 3, 'expected a 32-bytes-long digest');
    }
    const at = timestamp();
    const base = {
      id: randomUUID(),
      organizationId,
      type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
      intent: { signRawPayloadIntentV2: p },
      votes: [],
      fingerprint: `sha256:${randomBytes(32).toString('hex')}`,
      canApprove: false,
      canReject: false,
      createdAt: at,
      updatedAt: at,
    };
    let final: Record<string, unknown>;
    if (key.outcome === 'COMPLETED') final = { ...base, status: 'ACTIVITY_STATUS_COMPLETED', result: { signRawPayloadResult: key.sign(payload) } };
    else if (key.outcome === 'FAILED')
      final = { ...base, status: 'ACTIVITY_STATUS_FAILED', result: {}, failure: { code: 7, message: 'policy evaluation denied the activity', details: [] } };
    else final = { ...base, status: `ACTIVITY_STATUS_${key.outcome}`, result: {} };
    if (key.pendingPolls === 0) return { activity: final };
    const pending = { ...base, status: 'ACTIVITY_STATUS_PENDING', result: {} };
    activities.set(base.id, { activity: pending, pollsLeft: key.pendingPolls, final });
    return { activity: pending };
  }

  function getActivity(body: Record<string, unknown>) {
    organization(body);
    const state = activities.get(String(body.activityId));
    if (!state) throw new TurnkeyFault(404, 5, `activity not found: ${String(body.activityId)}`);
    if (--state.pollsLeft <= 0) state.activity = state.final;
    return { activity: state.activity };
  }

  const routes: Record<string, (body: Record<string, unknown>) => unknown> = {
    '/public/v1/query/get_private_key': getPrivateKey,
    '/public/v1/submit/sign_raw_payload': signRawPayload,
    '/public/v1/query/get_activity': getActivity,
  };

  function answer(req: http.IncomingMessage, raw: Buffer): { status: number; body: unknown } {
    if (fault) return { status: fault.status, body: { code: fault.code, message: fault.message, details: [] } };
    const route = req.method === 'POST' ? routes[req.url ?? ''] : undefined;
    if (!route) return { status: 404, body: { code: 5, message: 'Not Found', details: [] } };
    try {
      const apiKey = authenticate(req.headers['x-stamp'], raw);
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new TurnkeyFault(400, 3, 'bad request body', 'BAD_REQUEST');
      }
      if (!apiKey.allowed) throw new TurnkeyFault(403, 7, 'request not authorized', 'REQUEST_NOT_AUTHORIZED');
      return { status: 200, body: route(body) };
    } catch (err) {
      if (!(err instanceof TurnkeyFault)) throw err;
      const details = [{ '@type': 'type.googleapis.com/errors.v1.TurnkeyErrorDetail', turnkeyErrorCode: err.errorCode }];
      return { status: err.status, body: { code: err.code, message: err.message, details } };
    }
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push(req.url ?? '');
      const reply = () => {
        if (res.destroyed) return;
        if (down) {
          res.writeHead(503, { 'content-type': 'text/plain' });
          res.end('upstream connect error or disconnect/reset before headers');
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
  let down = false;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    organizationId,
    /** A registered API key allowed to do everything. */
    apiKey: registerApiKey(),
    /** Every path requested, in order. */
    requests,
    /** Registers another API key; `allowed: false` makes its requests answer 403 (request not authorized). */
    registerApiKey,
    /** An API key Turnkey has never seen. */
    unknownApiKey: (): TurnkeyApiKey => {
      const { key: _key, ...pair } = newApiKey();
      return pair;
    },
    createKey(curve: TurnkeyCurve): TurnkeyStandinKey {
      const privateKeyId = randomUUID();
      let state: KeyState;
      if (curve === 'secp256k1') {
        const secret = secp256k1.utils.randomPrivateKey();
        const rawPublicKey = secp256k1.getPublicKey(secret, false);
        state = {
          privateKeyId,
          curve,
          publicKey: Buffer.from(secp256k1.getPublicKey(secret, true)).toString('hex'),
          rawPublicKey,
          sign(digest) {
            const sig = secp256k1.sign(digest, secret);
            return { r: sig.r.toString(16).padStart(64, '0'), s: sig.s.toString(16).padStart(64, '0'), v: `0${sig.recovery}` };
          },
          outcome: 'COMPLETED',
          pendingPolls: 0,
        };
      } else {
        const seed = randomBytes(32);
        const key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8, seed]), format: 'der', type: 'pkcs8' });
        const rawPublicKey = new Uint8Array(createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(-32));
        state = {
          privateKeyId,
          curve,
          publicKey: Buffer.from(rawPublicKey).toString('hex'),
          rawPublicKey,
          sign(message) {
            const sig = nodeSign(null, message, key);
            return { r: sig.subarray(0, 32).toString('hex'), s: sig.subarray(32).toString('hex'), v: '00' };
          },
          outcome: 'COMPLETED',
          pendingPolls: 0,
        };
      }
      keys.set(privateKeyId, state);
      const { sign: _sign, outcome: _outcome, pendingPolls: _polls, ...info } = state;
      return info;
    },
    deleteKey: (privateKeyId: string) => void keys.delete(privateKeyId),
    /** How the key's next signing activities end, and for how many get_activity polls they stay pending first. */
    setOutcome(privateKeyId: string, outcome: ActivityOutcome, pendingPolls = 0) {
      const key = keys.get(privateKeyId)!;
      key.outcome = outcome;
      key.pendingPolls = pendingPolls;
    },
    /** Answers every request with this Turnkey error (e.g. 429/8, 500/13), or normally again with undefined. */
    setFault(f: { status: number; code: number; message: string } | undefined) {
      fault = f;
    },
    setLatency(ms: number) {
      latencyMs = ms;
    },
    /** While down, every request is answered 503 by the load balancer in front. */
    setDown(flag: boolean) {
      down = flag;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type TurnkeyStandin = Awaited<ReturnType<typeof startTurnkeyStandin>>;
