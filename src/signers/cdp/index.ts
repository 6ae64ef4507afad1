// Coinbase Developer Platform (CDP) Server Wallet v2: EVM and Solana accounts whose keys CDP holds, named by address.
// Endpoint: `base_path` (default https://api.cdp.coinbase.com/platform), the SDK's `basePath`.
//
// The SDK's own CdpClient keeps one process-wide configuration (the last client's credentials sign every
// request) and takes no abort signal, so each request here is authenticated with the SDK's auth module
// (the Bearer JWT from api_key_secret, the X-Wallet-Auth JWT from wallet_secret) and sent with fetch.
import { getBase58Encoder } from '@solana/kit';
import { recover } from 'tiny-secp256k1';
import { z } from 'zod';
import { CustodyError, type CustodyType, type KeyCustody, secretValue } from '../custody.js';
import { keccak256Bytes } from '../../lib/keccak.js';
import { urlText } from '../../lib/validate.js';

// The SDK's auth module is loaded at the first request of a cdp signer, not with the service.
const loadAuth = () => import('@coinbase/cdp-sdk/auth');

const DEFAULT_BASE_PATH = 'https://api.cdp.coinbase.com/platform';
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const SOLANA_ADDRESS = /^[1-9A-HJ-NP-Za-km-z]{32,44}$/;
// CDP answers no public key for an account: one is recovered from a signature over this fixed digest,
// the keccak of a text no transaction hashes to.
const PROBE_DIGEST = keccak256Bytes(new TextEncoder().encode('relayer: CDP account public key probe'));

const config = z
  .object({
    api_key_id: z.string().min(1),
    api_key_secret: secretValue,
    wallet_secret: secretValue,
    account_address: z.string().regex(new RegExp(`${EVM_ADDRESS.source}|${SOLANA_ADDRESS.source}`), 'must be an EVM 0x address or a Solana base58 address'),
    base_path: urlText.url().optional(),
  })
  .strict();
export type CdpConfig = z.infer<typeof config>;

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 200)}…` : text);

/** CDP's error body is { errorType, errorMessage, correlationId, errorLink }. */
function cdpFault(status: number, body: unknown, what: string): CustodyError {
  const { errorType, errorMessage } = (body ?? {}) as { errorType?: string; errorMessage?: string };
  const said = `${what}: CDP answered HTTP ${status}${errorType ? ` ${errorType}` : ''}${typeof errorMessage === 'string' && errorMessage ? `, ${clip(errorMessage)}` : ''}`;
  if (status === 429 || status >= 500) return new CustodyError('unavailable', said);
  if (errorType === 'policy_violation') return new CustodyError('rejected', said);
  if (status === 401 || status === 403) return new CustodyError('denied', said);
  if (status === 404) return new CustodyError('not_found', said);
  return new CustodyError('rejected', said);
}

export const cdp: CustodyType<CdpConfig> = {
  type: 'cdp',
  curves: ['secp256k1', 'ed25519'],
  config,
  visible: (c) => ({ api_key_id: c.api_key_id, account_address: c.account_address }),
  open(c, ctx): KeyCustody {
    const evm = EVM_ADDRESS.test(c.account_address);
    if (evm !== (ctx.curve === 'secp256k1')) {
      throw new CustodyError(
        'wrong_key',
        `signer ${ctx.id}: account ${c.account_address} is ${evm ? 'an EVM' : 'a Solana'} account, which does not sign ${ctx.curve}`,
      );
    }
    const apiKeySecret = ctx.secret(c.api_key_secret);
    const walletSecret = ctx.secret(c.wallet_secret);
    const basePath = (c.base_path ?? DEFAULT_BASE_PATH).replace(/\/+$/, '');
    const account = encodeURIComponent(c.account_address);
    const reading = `signer ${ctx.id}, reading CDP account ${c.account_address}`;
    const signing = `signer ${ctx.id}, signing with CDP account ${c.account_address}`;

    async function call<T>(method: 'GET' | 'POST', path: string, body: Record<string, string> | undefined, what: string, signal: AbortSignal): Promise<T> {
      const url = new URL(`${basePath}${path}`);
      const { getAuthHeaders } = await loadAuth();
      let headers: Record<string, string>;
      try {
        headers = await getAuthHeaders({
          apiKeyId: c.api_key_id,
          apiKeySecret,
          walletSecret,
          requestMethod: method,
          requestHost: url.host,
          requestPath: url.pathname,
          requestBody: body,
        });
      } catch {
        // The SDK's messages may quote what it was given: none of them is passed on.
        throw new CustodyError(
          'denied',
          `${what}: api_key_secret (an Ed25519 key in base64 or an EC key in PEM) or wallet_secret (a base64 EC key) is not a key CDP accepts`,
        );
      }
      try {
        const res = await fetch(url, { method, headers, body: body && JSON.stringify(body), redirect: 'error', signal });
        const text = await res.text();
        let answer: unknown;
        try {
          answer = JSON.parse(text);
        } catch {
          if (res.ok) throw new CustodyError('unavailable', `${what}: CDP answered with something that is not JSON`);
        }
        if (!res.ok) throw cdpFault(res.status, answer, what);
        return answer as T;
      } catch (err) {
        if (err instanceof CustodyError) throw err;
        if (signal.aborted) throw new CustodyError('timeout', `${what}: CDP did not answer in time`);
        throw new CustodyError('unavailable', `${what}: CDP could not be reached (${clip(String((err as Error).cause ?? (err as Error).message))})`);
      }
    }

    /** CDP's 65-byte r ‖ s ‖ v over a digest, signed as it is. */
    async function signHash(digest: Uint8Array, what: string, signal: AbortSignal): Promise<Uint8Array> {
      const answer = await call<{ signature?: string } | null>('POST', `/v2/evm/accounts/${account}/sign`, { hash: `0x${hex(digest)}` }, what, signal);
      const bytes = Buffer.from(String(answer?.signature ?? '').replace(/^0x/i, ''), 'hex');
      if (bytes.length !== 65) throw new CustodyError('rejected', `${what}: CDP answered a signature that is not 65 bytes`);
      return new Uint8Array(bytes);
    }

    let verified: Uint8Array | undefined;
    return {
      curve: ctx.curve,
      async publicKey(signal) {
        if (verified) return verified;
        if (!evm) {
          const found = await call<{ address?: string } | null>('GET', `/v2/solana/accounts/${account}`, undefined, reading, signal);
          if (found?.address !== c.account_address) throw new CustodyError('wrong_key', `${reading}: CDP answered account ${found?.address}`);
          verified = new Uint8Array(getBase58Encoder().encode(c.account_address));
          if (verified.length !== 32) throw new CustodyError('wrong_key', `${reading}: the address is not a 32-byte Ed25519 key`);
          return verified;
        }
        const sig = await signHash(PROBE_DIGEST, reading, signal);
        const v = sig[64] >= 27 ? sig[64] - 27 : sig[64];
        let point: Uint8Array | null = null;
        try {
          if (v === 0 || v === 1) point = recover(PROBE_DIGEST, sig.subarray(0, 64), v, false);
        } catch {
          // r or s out of range: no point, as for a bad v.
        }
        if (!point) throw new CustodyError('rejected', `${reading}: CDP answered a signature no public key can be recovered from`);
        const address = `0x${hex(keccak256Bytes(point.subarray(1)).subarray(12))}`;
        if (address !== c.account_address.toLowerCase()) throw new CustodyError('wrong_key', `${reading}: CDP signed with the key of ${address}`);
        verified = point;
        return point;
      },
      async sign(data, signal) {
        if (evm) {
          if (data.length !== 32) throw new CustodyError('rejected', `signer ${ctx.id} signs 32-byte digests, got ${data.length} bytes`);
          return (await signHash(data, signing, signal)).subarray(0, 64);
        }
        // `base64` makes CDP sign the decoded bytes as they are (the default, utf8, would take the text's bytes).
        const body = { message: Buffer.from(data).toString('base64'), encoding: 'base64' };
        const answer = await call<{ signature?: string } | null>('POST', `/v2/solana/accounts/${account}/sign/message`, body, signing, signal);
        let bytes: Uint8Array;
        try {
          bytes = new Uint8Array(getBase58Encoder().encode(String(answer?.signature ?? '')));
        } catch {
          bytes = new Uint8Array();
        }
        if (bytes.length !== 64) throw new CustodyError('rejected', `${signing}: CDP answered a signature that is not 64 bytes of base58`);
        return bytes;
      },
    };
  },
};
