// AWS KMS: an asymmetric KMS key (ECC_SECG_P256K1, or ECC_NIST_EDWARDS25519 for Ed25519) signs inside KMS.
// Endpoint and credentials are the SDK's own: AWS_ENDPOINT_URL_KMS (or AWS_ENDPOINT_URL) points the client at
// another endpoint or a stand-in, and the default credentials chain (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY,
// profiles, SSO, web identity, container and instance roles) supplies the keys; neither is in the config.
import type { KMSClient, SigningAlgorithmSpec } from '@aws-sdk/client-kms';
import { z } from 'zod';
import { type Curve, CustodyError, type CustodyFault, type CustodyType, type KeyCustody } from '../custody.js';
import { derToCompact, spkiPublicKey } from '../der.js';

// The SDK is loaded at the first call of an aws_kms signer, not with the service.
const loadSdk = () => import('@aws-sdk/client-kms');
type KmsSdk = Awaited<ReturnType<typeof loadSdk>>;

const config = z
  .object({
    region: z.string().min(1),
    key_id: z.string().min(1),
  })
  .strict();
export type AwsKmsConfig = z.infer<typeof config>;

const KEY_SPEC: Record<Curve, string> = { secp256k1: 'ECC_SECG_P256K1', ed25519: 'ECC_NIST_EDWARDS25519' };
// ECDSA over the digest as given (MessageType DIGEST: KMS does not hash it again); Ed25519 over the message itself.
const SIGNING: Record<Curve, { algorithm: SigningAlgorithmSpec; messageType: 'DIGEST' | 'RAW' }> = {
  secp256k1: { algorithm: 'ECDSA_SHA_256', messageType: 'DIGEST' },
  ed25519: { algorithm: 'ED25519_SHA_512', messageType: 'RAW' },
};

// KMS's error names (the JSON `__type`) by what they mean for the signer.
const FAULTS: Record<string, [CustodyFault, string]> = {
  AccessDeniedException: ['denied', 'access denied'],
  UnrecognizedClientException: ['denied', 'the access key is not recognised'],
  InvalidSignatureException: ['denied', 'the request signature does not match (check the secret access key)'],
  IncompleteSignatureException: ['denied', 'the request signature is incomplete'],
  MissingAuthenticationTokenException: ['denied', 'no credentials were sent'],
  ExpiredTokenException: ['denied', 'the session token has expired'],
  InvalidClientTokenId: ['denied', 'the access key is not recognised'],
  CredentialsProviderError: ['denied', 'no AWS credentials were found'],
  NotFoundException: ['not_found', 'the key does not exist'],
  DisabledException: ['disabled', 'the key is disabled'],
  KMSInvalidStateException: ['disabled', 'the key is not enabled (pending deletion or import)'],
  InvalidKeyUsageException: ['wrong_key', 'the key cannot sign with this algorithm'],
  UnsupportedOperationException: ['wrong_key', 'the key is not an asymmetric signing key'],
  KMSInternalException: ['unavailable', 'KMS had an internal error'],
  DependencyTimeoutException: ['unavailable', 'KMS timed out'],
  KeyUnavailableException: ['unavailable', 'the key is not available right now'],
  ThrottlingException: ['unavailable', 'the request was throttled'],
  LimitExceededException: ['unavailable', 'a KMS limit was exceeded'],
};

interface SdkError {
  name?: string;
  code?: string;
  $fault?: 'client' | 'server';
  $metadata?: { httpStatusCode?: number };
}

/** The SDK's error as a CustodyError; the SDK's own messages are not passed on (some quote the signed request). */
function kmsFault(err: unknown, keyName: string, signal: AbortSignal): CustodyError {
  if (err instanceof CustodyError) return err;
  if (signal.aborted) return new CustodyError('timeout', `AWS KMS did not answer in time for ${keyName}`);
  const e = (err ?? {}) as SdkError;
  const known = e.name ? FAULTS[e.name] : undefined;
  if (known) return new CustodyError(known[0], `AWS KMS ${keyName}: ${known[1]} (${e.name})`);
  const status = e.$metadata?.httpStatusCode;
  if (status === undefined) {
    // No HTTP answer: the connection failed.
    const why = e.code ?? e.name ?? 'error';
    return new CustodyError('unavailable', `AWS KMS could not be reached for ${keyName} (${why})`);
  }
  const said = e.name ? `HTTP ${status}, ${e.name}` : `HTTP ${status}`;
  if (e.$fault === 'server' || status >= 500 || status === 429) return new CustodyError('unavailable', `AWS KMS could not serve ${keyName} (${said})`);
  return new CustodyError('rejected', `AWS KMS rejected the request for ${keyName} (${said})`);
}

export const awsKms: CustodyType<AwsKmsConfig> = {
  type: 'aws_kms',
  curves: ['secp256k1', 'ed25519'],
  config,
  visible: (c) => ({ region: c.region, key_id: c.key_id }),
  open(c, ctx): KeyCustody {
    const curve = ctx.curve;
    const keyName = `key ${c.key_id} in ${c.region}`;
    const signing = SIGNING[curve];
    // Made at the first call.
    let client: KMSClient | undefined;

    async function send<T>(run: (sdk: KmsSdk, client: KMSClient) => Promise<T>, signal: AbortSignal): Promise<T> {
      if (signal.aborted) throw kmsFault(undefined, keyName, signal);
      try {
        const sdk = await loadSdk();
        client ??= new sdk.KMSClient({ region: c.region });
        return await run(sdk, client);
      } catch (err) {
        throw kmsFault(err, keyName, signal);
      }
    }

    // KMS signs ECDSA_SHA_256 with a P-256 key too: the key's spec is checked before its first signature.
    let checked = false;
    async function publicKey(signal: AbortSignal): Promise<Uint8Array> {
      const out = await send((sdk, kms) => kms.send(new sdk.GetPublicKeyCommand({ KeyId: c.key_id }), { abortSignal: signal }), signal);
      if (out.KeyUsage !== 'SIGN_VERIFY' || out.KeySpec !== KEY_SPEC[curve]) {
        throw new CustodyError('wrong_key', `AWS KMS ${keyName} is ${out.KeySpec} for ${out.KeyUsage}, not ${KEY_SPEC[curve]} for SIGN_VERIFY (${curve})`);
      }
      if (!out.PublicKey) throw new CustodyError('rejected', `AWS KMS answered no public key for ${keyName}`);
      const key = spkiPublicKey(out.PublicKey);
      if (key.length !== (curve === 'secp256k1' ? 65 : 32)) throw new CustodyError('wrong_key', `AWS KMS ${keyName} is not a ${curve} key`);
      checked = true;
      return key;
    }

    return {
      curve,
      publicKey,
      async sign(data, signal) {
        if (!checked) await publicKey(signal);
        const out = await send(
          (sdk, kms) =>
            kms.send(new sdk.SignCommand({ KeyId: c.key_id, Message: data, MessageType: signing.messageType, SigningAlgorithm: signing.algorithm }), {
              abortSignal: signal,
            }),
          signal,
        );
        if (!out.Signature) throw new CustodyError('rejected', `AWS KMS answered no signature for ${keyName}`);
        if (curve === 'secp256k1') return derToCompact(out.Signature);
        if (out.Signature.length !== 64)
          throw new CustodyError('rejected', `AWS KMS answered an Ed25519 signature of ${out.Signature.length} bytes for ${keyName}`);
        return out.Signature;
      },
      async close() {
        client?.destroy();
      },
    };
  },
};
