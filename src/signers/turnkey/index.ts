// Turnkey: the key stays in Turnkey's enclaves; each request is stamped (X-Stamp) with a P-256 API key.
// Endpoint: `base_url` (default https://api.turnkey.com) points the client at another deployment or a stand-in.
import type { TSignedRequest, TurnkeyApiTypes } from '@turnkey/http';
import { isPoint, pointCompress } from 'tiny-secp256k1';
import { z } from 'zod';
import { type Curve, CustodyError, type CustodyType, type KeyCustody, secretValue } from '../custody.js';
import { urlText } from '../../lib/validate.js';

// The SDK is loaded when a turnkey signer is first opened, not with the service.
const loadStamper = () => import('@turnkey/api-key-stamper');
const loadHttp = () => import('@turnkey/http');

const DEFAULT_BASE_URL = 'https://api.turnkey.com';
// A signing activity Turnkey answers as pending is polled this often, this many times, then left.
const POLL_MS = 250;
const POLLS = 8;

const config = z
  .object({
    api_public_key: z.string().regex(/^0[23][0-9a-fA-F]{64}$/, 'must be a compressed P-256 public key in hex'),
    api_private_key: secretValue,
    organization_id: z.string().min(1),
    private_key_id: z.string().min(1),
    public_key: z.string().regex(/^(0x)?([0-9a-fA-F]{64}|0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$/, 'must be a secp256k1 or Ed25519 public key in hex'),
    base_url: urlText.url().optional(),
  })
  .strict();
export type TurnkeyConfig = z.infer<typeof config>;

type Activity = TurnkeyApiTypes['v1Activity'];

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text);

/** The key as the contract speaks it (65-byte point or 32 bytes), or undefined when it is not one of `curve`. */
function normalKey(text: string, curve: Curve): Uint8Array | undefined {
  const bytes = new Uint8Array(Buffer.from(text.replace(/^0x/i, ''), 'hex'));
  if (curve === 'ed25519') return bytes.length === 32 ? bytes : undefined;
  return (bytes.length === 33 || bytes.length === 65) && isPoint(bytes) ? pointCompress(bytes, false) : undefined;
}

/** Turnkey's error body is { code (gRPC), message, details }; the HTTP status says the same more reliably. */
function turnkeyFault(status: number, body: unknown, what: string): CustodyError {
  const { code, message } = (body ?? {}) as { code?: number; message?: string };
  const said = `${what}: Turnkey answered HTTP ${status}${typeof message === 'string' && message ? `, ${clip(message)}` : ''}`;
  if (status === 401 || status === 403 || code === 16 || code === 7) return new CustodyError('denied', said);
  if (status === 429 || status >= 500 || code === 8 || code === 14) return new CustodyError('unavailable', said);
  if (status === 404 || code === 5 || /not found|could not find/i.test(message ?? '')) return new CustodyError('not_found', said);
  return new CustodyError('rejected', said);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', done);
      resolve();
    }, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

export const turnkey: CustodyType<TurnkeyConfig> = {
  type: 'turnkey',
  curves: ['secp256k1', 'ed25519'],
  config,
  visible: (c) => ({ api_public_key: c.api_public_key, organization_id: c.organization_id, private_key_id: c.private_key_id, public_key: c.public_key }),
  async open(c, ctx): Promise<KeyCustody> {
    const keyName = `Turnkey private key ${c.private_key_id}`;
    const reading = `signer ${ctx.id}, reading ${keyName}`;
    const signing = `signer ${ctx.id}, signing with ${keyName}`;
    const expected = normalKey(c.public_key, ctx.curve);
    if (!expected) throw new CustodyError('wrong_key', `signer ${ctx.id}: public_key is not a ${ctx.curve} public key`);
    const apiPrivateKey = ctx.secret(c.api_private_key).trim().replace(/^0x/i, '');
    if (!/^[0-9a-fA-F]{1,64}$/.test(apiPrivateKey)) throw new CustodyError('denied', `signer ${ctx.id}: api_private_key is not a P-256 private key in hex`);
    const [{ ApiKeyStamper }, { TurnkeyClient }] = await Promise.all([loadStamper(), loadHttp()]);
    const client = new TurnkeyClient(
      { baseUrl: (c.base_url ?? DEFAULT_BASE_URL).replace(/\/+$/, '') },
      new ApiKeyStamper({ apiPublicKey: c.api_public_key.toLowerCase(), apiPrivateKey }),
    );

    // The client stamps the request; it is sent here so that the signal and the HTTP status reach us.
    async function send<T>(stamping: () => Promise<TSignedRequest>, what: string, signal: AbortSignal): Promise<T> {
      let req: TSignedRequest;
      try {
        req = await stamping();
      } catch {
        // The stamper's own messages can quote the private key: none of them is passed on.
        throw new CustodyError('denied', `signer ${ctx.id}: the API key (api_public_key, api_private_key) cannot stamp requests`);
      }
      try {
        const res = await fetch(req.url, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', [req.stamp.stampHeaderName]: req.stamp.stampHeaderValue },
          body: req.body,
          redirect: 'error',
          signal,
        });
        const text = await res.text();
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          if (res.ok) throw new CustodyError('unavailable', `${what}: Turnkey answered with something that is not JSON`);
        }
        if (!res.ok) throw turnkeyFault(res.status, body, what);
        return body as T;
      } catch (err) {
        if (err instanceof CustodyError) throw err;
        if (signal.aborted) throw new CustodyError('timeout', `${what}: Turnkey did not answer in time`);
        throw new CustodyError('unavailable', `${what}: Turnkey could not be reached (${clip(String((err as Error).cause ?? (err as Error).message))})`);
      }
    }

    async function activityOf(answer: Promise<Partial<TurnkeyApiTypes['v1ActivityResponse']> | null>): Promise<Activity> {
      const { activity } = (await answer) ?? {};
      if (!activity?.id || !activity.status) throw new CustodyError('rejected', `${signing}: Turnkey answered no activity`);
      return activity;
    }

    function finished(activity: Activity): TurnkeyApiTypes['v1SignRawPayloadResult'] {
      const result = activity.result?.signRawPayloadResult;
      if (activity.status === 'ACTIVITY_STATUS_COMPLETED' && result) return result;
      const why = activity.failure?.message ? `: ${clip(activity.failure.message)}` : '';
      const status = activity.status.replace('ACTIVITY_STATUS_', '').toLowerCase();
      throw new CustodyError('rejected', `${signing}: Turnkey activity ${activity.id} ended ${status}${why}`);
    }

    let verified: Uint8Array | undefined;
    return {
      curve: ctx.curve,
      async publicKey(signal) {
        if (verified) return verified;
        const answer = await send<Partial<TurnkeyApiTypes['v1GetPrivateKeyResponse']> | null>(
          () => client.stampGetPrivateKey({ organizationId: c.organization_id, privateKeyId: c.private_key_id }),
          reading,
          signal,
        );
        const privateKey = answer?.privateKey;
        const curve = ctx.curve === 'secp256k1' ? 'CURVE_SECP256K1' : 'CURVE_ED25519';
        if (privateKey?.curve !== curve) throw new CustodyError('wrong_key', `${reading}: it is ${privateKey?.curve ?? 'of no known curve'}, not ${curve}`);
        const actual = normalKey(String(privateKey.publicKey), ctx.curve);
        if (!actual || hex(actual) !== hex(expected)) {
          throw new CustodyError('wrong_key', `${reading}: its public key is ${privateKey.publicKey}, not the configured ${c.public_key}`);
        }
        verified = expected;
        return expected;
      },
      async sign(data, signal) {
        if (ctx.curve === 'secp256k1' && data.length !== 32)
          throw new CustodyError('rejected', `signer ${ctx.id} signs 32-byte digests, got ${data.length} bytes`);
        const parameters = {
          signWith: c.private_key_id,
          payload: hex(data),
          encoding: 'PAYLOAD_ENCODING_HEXADECIMAL',
          // The digest is signed as it is; Ed25519 hashes inside the signature and takes no hash function.
          hashFunction: ctx.curve === 'secp256k1' ? 'HASH_FUNCTION_NO_OP' : 'HASH_FUNCTION_NOT_APPLICABLE',
        } as const;
        const stampSign = () =>
          client.stampSignRawPayload({
            type: 'ACTIVITY_TYPE_SIGN_RAW_PAYLOAD_V2',
            timestampMs: String(Date.now()),
            organizationId: c.organization_id,
            parameters,
          });
        let activity = await activityOf(send(stampSign, signing, signal));
        for (let polls = 0; activity.status === 'ACTIVITY_STATUS_PENDING' || activity.status === 'ACTIVITY_STATUS_CREATED'; polls++) {
          if (polls === POLLS) throw new CustodyError('unavailable', `${signing}: Turnkey activity ${activity.id} is still pending`);
          try {
            await sleep(POLL_MS, signal);
          } catch {
            throw new CustodyError('timeout', `${signing}: Turnkey activity ${activity.id} did not finish in time`);
          }
          const activityId = activity.id;
          activity = await activityOf(send(() => client.stampGetActivity({ organizationId: c.organization_id, activityId }), signing, signal));
        }
        const { r, s } = finished(activity);
        const rs = [r, s].map((part) => Buffer.from(String(part).replace(/^0x/i, '').padStart(64, '0'), 'hex'));
        if (rs.some((part) => part.length !== 32)) throw new CustodyError('rejected', `${signing}: Turnkey answered a signature of the wrong size`);
        return new Uint8Array(Buffer.concat(rs));
      },
    };
  },
};
