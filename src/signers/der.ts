import { createPublicKey } from 'node:crypto';
import { CustodyError } from './custody.js';

// The shapes custodies answer in, turned into the ones the contract speaks (src/signers/custody.ts).

/** r ‖ s (64 bytes) from an ASN.1 DER ECDSA signature (SEQUENCE { INTEGER r, INTEGER s }). */
export function derToCompact(der: Uint8Array): Uint8Array {
  const fail = () => new CustodyError('rejected', 'the custody answered a signature that is not DER ECDSA');
  let i = 0;
  const byte = () => {
    if (i >= der.length) throw fail();
    return der[i++];
  };
  const length = () => {
    const first = byte();
    if (first < 0x80) return first;
    let n = 0;
    for (let k = first & 0x7f; k > 0; k--) n = (n << 8) | byte();
    return n;
  };
  if (byte() !== 0x30) throw fail();
  length();
  const out = new Uint8Array(64);
  for (const at of [0, 32]) {
    if (byte() !== 0x02) throw fail();
    let n = length();
    while (n > 32 && der[i] === 0) {
      i++;
      n--;
    }
    if (n > 32 || i + n > der.length) throw fail();
    out.set(der.subarray(i, i + n), at + 32 - n);
    i += n;
  }
  return out;
}

/** The raw public key in an SPKI document (DER bytes or PEM text): 65 bytes for EC points, 32 for Ed25519. */
export function spkiPublicKey(spki: Uint8Array | string): Uint8Array {
  let key: ReturnType<typeof createPublicKey>;
  try {
    key = typeof spki === 'string' ? createPublicKey(spki) : createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
  } catch {
    // Node's OpenSSL may not know secp256k1 in SPKI: read the BIT STRING at the end by hand.
    const der = typeof spki === 'string' ? Buffer.from(spki.replace(/-----[^-]+-----|\s/g, ''), 'base64') : Buffer.from(spki);
    if (der.length >= 65 && der[der.length - 65] === 0x04) return new Uint8Array(der.subarray(der.length - 65));
    if (der.length >= 32) return new Uint8Array(der.subarray(der.length - 32));
    throw new CustodyError('rejected', 'the custody answered a public key that is not SPKI');
  }
  if (key.asymmetricKeyType === 'ed25519') return new Uint8Array(key.export({ format: 'der', type: 'spki' }).subarray(-32));
  const jwk = key.export({ format: 'jwk' });
  if (jwk.crv !== 'secp256k1' || !jwk.x || !jwk.y)
    throw new CustodyError('wrong_key', `the custody's key is ${jwk.crv ?? key.asymmetricKeyType}, not secp256k1 or Ed25519`);
  return Uint8Array.from([4, ...Buffer.from(jwk.x, 'base64url'), ...Buffer.from(jwk.y, 'base64url')]);
}
