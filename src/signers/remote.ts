// Signers whose key stays in a custody (src/signers/custody.ts): every call has a timeout, is counted
// by type and outcome, and fails as a CustodyError naming the signer, never a secret.
import { recover } from 'tiny-secp256k1';
import { bytesToHex, hexToBytes } from 'viem';
import { publicKeyToAddress } from 'viem/accounts';
import { CustodyError, type Curve, type KeyCustody } from './custody.js';
import { ed25519Signer, evmSigner, type Signer, type SignerKind } from './index.js';
import type { DigestSignature } from './secp256k1.js';

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

export const curveOf = (kind: SignerKind): Curve => (kind === 'evm' ? 'secp256k1' : 'ed25519');

export interface CallOptions {
  /** How the signer is named in messages: its id and type. */
  id: string;
  type: string;
  timeoutMs: number;
  observe?(operation: 'public_key' | 'sign', outcome: string, seconds: number): void;
}

/** The custody's calls, each bounded by the timeout and counted. */
export function guarded(custody: KeyCustody, o: CallOptions): KeyCustody {
  const name = `signer "${o.id}" (${o.type})`;
  async function call<T>(operation: 'public_key' | 'sign', run: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const started = performance.now();
    const ctrl = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        ctrl.abort();
        reject(new CustodyError('timeout', `did not answer within ${o.timeoutMs} ms`));
      }, o.timeoutMs);
    });
    try {
      const out = await Promise.race([run(ctrl.signal), timedOut]);
      o.observe?.(operation, 'ok', (performance.now() - started) / 1000);
      return out;
    } catch (e) {
      const fault = e instanceof CustodyError ? e : new CustodyError('unavailable', (e as Error)?.message ?? String(e));
      o.observe?.(operation, fault.fault, (performance.now() - started) / 1000);
      throw new CustodyError(fault.fault, `${name}: ${fault.message}`);
    } finally {
      clearTimeout(timer);
    }
  }
  return {
    curve: custody.curve,
    publicKey: (signal) => call('public_key', (own) => custody.publicKey(AbortSignal.any([signal, own]))),
    sign: (data, signal) => call('sign', (own) => custody.sign(data, AbortSignal.any([signal, own]))),
    close: custody.close?.bind(custody),
  };
}

/** A signer for `kind` over the custody's key; reads the public key once. */
export async function custodySigner(custody: KeyCustody, kind: SignerKind): Promise<Signer> {
  // Each call gets its own signal: the custody's timeout (guarded) is what ends a call.
  const signal = () => new AbortController().signal;
  const publicKey = await custody.publicKey(signal());
  const close = async () => custody.close?.();
  if (kind !== 'evm') return ed25519Signer(kind, publicKey, (data) => custody.sign(data, signal()), close);
  return evmSigner(
    publicKeyToAddress(bytesToHex(publicKey)),
    async (digest): Promise<DigestSignature> => {
      const rs = Uint8Array.from(await custody.sign(digest, signal()));
      let s = BigInt(bytesToHex(rs.subarray(32)));
      if (s > N / 2n) s = N - s; // Ethereum takes low s only.
      rs.set(hexToBytes(`0x${s.toString(16).padStart(64, '0')}`), 32);
      for (const yParity of [0, 1] as const) {
        const recovered = recover(digest, rs, yParity, false);
        if (recovered && Buffer.from(recovered).equals(Buffer.from(publicKey))) {
          return { r: bytesToHex(rs.subarray(0, 32)), s: bytesToHex(rs.subarray(32)), yParity };
        }
      }
      throw new CustodyError('rejected', 'the custody answered a signature that is not of its key');
    },
    close,
  );
}
