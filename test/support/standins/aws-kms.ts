// A loopback AWS KMS: the JSON 1.1 protocol (POST /, X-Amz-Target: TrentService.<Operation>), SigV4 checked
// against one access key, errors as KMS sends them ({"__type", "message"}, mostly HTTP 400), real keys.
// Serves GetPublicKey and Sign, the two operations a signer uses.
import { createHash, createHmac, generateKeyPairSync, randomUUID, sign as nodeSign, timingSafeEqual, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { secp256k1 } from '@noble/curves/secp256k1';

export type AwsKeySpec = 'ECC_SECG_P256K1' | 'ECC_NIST_EDWARDS25519' | 'ECC_NIST_P256' | 'SYMMETRIC_DEFAULT';
export type AwsKeyState = 'Enabled' | 'Disabled' | 'PendingDeletion';

export interface AwsKmsStandin {
  /** For AWS_ENDPOINT_URL_KMS. */
  url: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A new key of `spec` (SIGN_VERIFY, or ENCRYPT_DECRYPT for SYMMETRIC_DEFAULT). */
  createKey(spec: AwsKeySpec): { keyId: string; arn: string };
  setKeyState(keyId: string, state: AwsKeyState): void;
  disableKey(keyId: string): void;
  /** The caller's identity loses its permissions on this key (AccessDeniedException). */
  denyKey(keyId: string): void;
  /** Every request answers this KMS error (e.g. KMSInternalException, ThrottlingException) until cleared. */
  failWith(type: string | undefined): void;
  /** Down: every request answers 503. */
  setDown(down: boolean): void;
  setLatency(ms: number): void;
  /** The operation of every request, in order. */
  calls: string[];
  stop(): Promise<void>;
}

interface Key {
  keyId: string;
  arn: string;
  spec: AwsKeySpec;
  state: AwsKeyState;
  denied: boolean;
  publicKey?: Buffer;
  sign?(message: Buffer): Buffer;
}

const ACCOUNT = '111122223333';
const STATUS: Record<string, number> = { KMSInternalException: 500, DependencyTimeoutException: 503 };
const ALGORITHMS: Record<AwsKeySpec, string[]> = {
  ECC_SECG_P256K1: ['ECDSA_SHA_256'],
  ECC_NIST_P256: ['ECDSA_SHA_256'],
  ECC_NIST_EDWARDS25519: ['ED25519_SHA_512'],
  SYMMETRIC_DEFAULT: [],
};

class KmsError extends Error {
  constructor(
    readonly type: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest();
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

function makeKey(spec: AwsKeySpec, region: string): Key {
  const keyId = randomUUID();
  const key: Key = { keyId, arn: `arn:aws:kms:${region}:${ACCOUNT}:key/${keyId}`, spec, state: 'Enabled', denied: false };
  const spki = (k: KeyObject) => k.export({ format: 'der', type: 'spki' });
  if (spec === 'ECC_SECG_P256K1' || spec === 'ECC_NIST_P256') {
    const pair = generateKeyPairSync('ec', { namedCurve: spec === 'ECC_SECG_P256K1' ? 'secp256k1' : 'prime256v1' });
    key.publicKey = spki(pair.publicKey);
    const d = Buffer.from(pair.privateKey.export({ format: 'jwk' }).d!, 'base64url');
    // DIGEST signs the 32 bytes as given; KMS leaves s as it comes (high or low).
    key.sign =
      spec === 'ECC_SECG_P256K1'
        ? (digest) => Buffer.from(secp256k1.sign(digest, d, { lowS: false }).toDERRawBytes())
        : (digest) => nodeSign(null, digest, { key: pair.privateKey, dsaEncoding: 'der' });
  } else if (spec === 'ECC_NIST_EDWARDS25519') {
    const pair = generateKeyPairSync('ed25519');
    key.publicKey = spki(pair.publicKey);
    key.sign = (message) => nodeSign(null, message, pair.privateKey);
  }
  return key;
}

/** Checks the SigV4 Authorization header the way KMS does: the access key first, then the signature. */
function checkSignature(req: http.IncomingMessage, body: Buffer, accessKeyId: string, secret: string): void {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/,]+)\/(\d{8})\/([^/,]+)\/([^/,]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
    req.headers.authorization ?? '',
  );
  if (!m) throw new KmsError('MissingAuthenticationTokenException', 'Missing Authentication Token');
  const [, keyId, date, region, service, signedHeaders, signature] = m;
  if (keyId !== accessKeyId) throw new KmsError('UnrecognizedClientException', 'The security token included in the request is invalid.');
  const names = signedHeaders.split(';');
  const headers = names
    .map(
      (h) =>
        `${h}:${String(req.headers[h] ?? '')
          .trim()
          .replace(/\s+/g, ' ')}\n`,
    )
    .join('');
  const [path, query = ''] = (req.url ?? '/').split('?');
  const canonical = [req.method, path, query, headers, signedHeaders, sha256(body).toString('hex')].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', String(req.headers['x-amz-date']), scope, sha256(canonical).toString('hex')].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
  const expected = hmac(signingKey, toSign);
  if (!names.includes('host') || !timingSafeEqual(expected, Buffer.from(signature, 'hex'))) {
    throw new KmsError(
      'InvalidSignatureException',
      'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.',
    );
  }
}

export async function startAwsKmsStandin(opts: { latencyMs?: number; region?: string } = {}): Promise<AwsKmsStandin> {
  const region = opts.region ?? 'us-east-1';
  const accessKeyId = `AKIA${randomUUID().replace(/-/g, '').slice(0, 16).toUpperCase()}`;
  const secretAccessKey = randomUUID() + randomUUID();
  const keys = new Map<string, Key>();
  const calls: string[] = [];
  let latencyMs = opts.latencyMs ?? 0;
  let failure: string | undefined;
  let down = false;

  function find(keyIdOrArn: unknown, operation: string): Key {
    const text = String(keyIdOrArn ?? '');
    const id = text.startsWith('arn:') ? text.slice(text.lastIndexOf('/') + 1) : text;
    const key = keys.get(id);
    if (!key) {
      if (!/^[0-9a-f-]{36}$/.test(id)) throw new KmsError('NotFoundException', `Invalid keyId '${text}'`);
      throw new KmsError('NotFoundException', `Key 'arn:aws:kms:${region}:${ACCOUNT}:key/${id}' does not exist`);
    }
    if (key.denied) {
      throw new KmsError(
        'AccessDeniedException',
        `User: arn:aws:iam::${ACCOUNT}:user/relayer is not authorized to perform: kms:${operation} on resource: ${key.arn} because no identity-based policy allows the kms:${operation} action`,
      );
    }
    if (key.state === 'Disabled') throw new KmsError('DisabledException', `${key.arn} is disabled.`);
    if (key.state === 'PendingDeletion') throw new KmsError('KMSInvalidStateException', `${key.arn} is pending deletion.`);
    return key;
  }

  const operations: Record<string, (input: Record<string, unknown>) => object> = {
    GetPublicKey(input) {
      const key = find(input.KeyId, 'GetPublicKey');
      if (!key.publicKey) throw new KmsError('UnsupportedOperationException', `${key.arn} key usage is ENCRYPT_DECRYPT: GetPublicKey needs an asymmetric key.`);
      return {
        KeyId: key.arn,
        KeySpec: key.spec,
        CustomerMasterKeySpec: key.spec,
        KeyUsage: 'SIGN_VERIFY',
        PublicKey: key.publicKey.toString('base64'),
        SigningAlgorithms: ALGORITHMS[key.spec],
      };
    },
    Sign(input) {
      const key = find(input.KeyId, 'Sign');
      if (!key.sign) throw new KmsError('InvalidKeyUsageException', `${key.arn} key usage is ENCRYPT_DECRYPT which is not valid for Sign.`);
      const algorithm = String(input.SigningAlgorithm);
      const messageType = String(input.MessageType ?? 'RAW');
      if (!ALGORITHMS[key.spec].includes(algorithm))
        throw new KmsError('InvalidKeyUsageException', `Algorithm ${algorithm} is incompatible with key spec ${key.spec}.`);
      const message = Buffer.from(String(input.Message ?? ''), 'base64');
      if (message.length < 1 || message.length > 4096)
        throw new KmsError(
          'ValidationException',
          "1 validation error detected: Value at 'message' failed to satisfy constraint: Member must have length between 1 and 4096",
        );
      let signature: Buffer;
      if (algorithm === 'ECDSA_SHA_256') {
        if (messageType === 'DIGEST' && message.length !== 32)
          throw new KmsError('ValidationException', `Digest is invalid length for algorithm ${algorithm}.`);
        signature = key.sign(messageType === 'DIGEST' ? message : sha256(message));
      } else {
        if (messageType !== 'RAW') throw new KmsError('ValidationException', `Message type ${messageType} is incompatible with algorithm ${algorithm}.`);
        signature = key.sign(message);
      }
      return { KeyId: key.arn, Signature: signature.toString('base64'), SigningAlgorithm: algorithm };
    },
  };

  function answer(res: http.ServerResponse, status: number, body: object) {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-requestid': randomUUID() });
    res.end(JSON.stringify(body));
  }

  function handle(req: http.IncomingMessage, body: Buffer): [number, object] {
    const target = String(req.headers['x-amz-target'] ?? '');
    const operation = target.startsWith('TrentService.') ? target.slice('TrentService.'.length) : target;
    calls.push(operation);
    if (down) return [503, { __type: 'ServiceUnavailableException', message: 'Service Unavailable' }];
    try {
      checkSignature(req, body, accessKeyId, secretAccessKey);
      if (failure) throw new KmsError(failure, `${failure} (injected by the stand-in)`, STATUS[failure] ?? 400);
      const run = req.method === 'POST' ? operations[operation] : undefined;
      if (!run) throw new KmsError('UnknownOperationException', '');
      let input: Record<string, unknown>;
      try {
        input = JSON.parse(body.toString('utf8') || '{}');
      } catch {
        throw new KmsError('SerializationException', 'Start of structure or map found where not expected.');
      }
      return [200, run(input)];
    } catch (err) {
      if (err instanceof KmsError) return [err.status, { __type: err.type, message: err.message }];
      return [500, { __type: 'KMSInternalException', message: String(err) }];
    }
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const [status, body] = handle(req, Buffer.concat(chunks));
      if (latencyMs > 0) setTimeout(() => answer(res, status, body), latencyMs).unref();
      else answer(res, status, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const get = (keyId: string) => {
    const key = keys.get(keyId);
    if (!key) throw new Error(`no stand-in key ${keyId}`);
    return key;
  };
  return {
    url,
    region,
    accessKeyId,
    secretAccessKey,
    calls,
    createKey(spec) {
      const key = makeKey(spec, region);
      keys.set(key.keyId, key);
      return { keyId: key.keyId, arn: key.arn };
    },
    setKeyState: (keyId, state) => void (get(keyId).state = state),
    disableKey: (keyId) => void (get(keyId).state = 'Disabled'),
    denyKey: (keyId) => void (get(keyId).denied = true),
    failWith: (type) => void (failure = type),
    setDown: (value) => void (down = value),
    setLatency: (ms) => void (latencyMs = ms),
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
