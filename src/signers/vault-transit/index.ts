import { z } from 'zod';
import { CustodyError, type CustodyType, type KeyCustody, secretValue } from '../custody.js';
import { urlText } from '../../lib/validate.js';
import { vaultFault, vaultPath, vaultSession } from '../vault/index.js';

// HashiCorp Vault's transit engine signs with an Ed25519 key that never leaves Vault (transit has no
// secp256k1). Endpoint: `address` (node-vault's endpoint), `namespace` as X-Vault-Namespace; the
// AppRole session and the error mapping are the `vault` type's (../vault).
// The key version whose public key is `pubkey` is the one asked to sign, so a rotation in Vault does
// not change the signer's address behind the relayer's back.

const ed25519PublicKey = z
  .string()
  // 43 characters carry the 32 bytes (the last one's low bits unused); the padding is optional.
  .regex(/^[A-Za-z0-9+/]{43}={0,2}$/, 'must be the base64 of a 32-byte Ed25519 public key');

const config = z
  .object({
    key_name: z.string().min(1),
    address: urlText.url(),
    role_id: secretValue,
    secret_id: secretValue,
    pubkey: ed25519PublicKey,
    mount_point: z.string().min(1).optional(),
    namespace: z.string().min(1).optional(),
  })
  .strict();
type Config = z.infer<typeof config>;

interface TransitKey {
  type?: string;
  latest_version?: number;
  keys?: Record<string, { public_key?: string } | number>;
}

export const vaultTransit: CustodyType<Config> = {
  type: 'vault_transit',
  curves: ['ed25519'],
  config,
  visible: (c) => ({ key_name: c.key_name, address: c.address, pubkey: c.pubkey, mount_point: c.mount_point, namespace: c.namespace }),
  open(c, ctx): KeyCustody {
    const mount = c.mount_point ?? 'transit';
    const ref = `transit key ${mount}/${c.key_name} at ${c.address}${c.namespace ? ` (namespace ${c.namespace})` : ''}`;
    const session = vaultSession(c, ctx, ref);
    const expected = Buffer.from(c.pubkey, 'base64');
    let version: number | undefined;

    /** The version of the key whose public key is `pubkey` (the latest that is), read once. */
    const keyVersion = async (signal: AbortSignal) => {
      if (version !== undefined) return version;
      const key = (await session.read(vaultPath(mount, 'keys', c.key_name), signal))?.data as TransitKey | undefined;
      if (key?.type !== 'ed25519') throw new CustodyError('wrong_key', `Vault ${ref} is ${key?.type ?? 'of no known type'}, not ed25519`);
      const matching = Object.entries(key.keys ?? {})
        .filter(([, v]) => typeof v === 'object' && typeof v.public_key === 'string' && expected.equals(Buffer.from(v.public_key, 'base64')))
        .map(([n]) => Number(n))
        .sort((a, b) => b - a);
      if (matching.length === 0) throw new CustodyError('wrong_key', `Vault ${ref} has no version whose public key is ${c.pubkey}`);
      version = matching[0];
      return version;
    };

    return {
      curve: 'ed25519',
      async publicKey(signal) {
        try {
          await keyVersion(signal);
          return new Uint8Array(expected);
        } catch (err) {
          throw vaultFault(err, signal, ref, 'reading the key');
        }
      },
      async sign(message, signal) {
        let doing = 'reading the key';
        try {
          const key_version = await keyVersion(signal);
          doing = 'signing';
          const answer = await session.write(vaultPath(mount, 'sign', c.key_name), { input: Buffer.from(message).toString('base64'), key_version }, signal);
          const signature = /^vault:v(\d+):([A-Za-z0-9+/]+={0,2})$/.exec(String(answer?.data?.signature ?? ''));
          const bytes = signature ? Buffer.from(signature[2], 'base64') : undefined;
          if (!signature || Number(signature[1]) !== key_version || bytes?.length !== 64) {
            throw new CustodyError('rejected', `Vault ${ref} answered no Ed25519 signature of version ${key_version}`);
          }
          return new Uint8Array(bytes);
        } catch (err) {
          throw vaultFault(err, signal, ref, doing);
        }
      },
    };
  },
};
