import type { FamilySpecs } from '../core/registry.js';
import { signerKey, type SignerRegistry } from '../core/signers.js';
import { createLocalSigner } from '../signers/index.js';
import { readKeystoreFile } from '../signers/keystore.js';
import type { Config } from '../core/settings.js';
import { ConfigError } from './load.js';

/** Decrypts every keystore a relayer uses; a wrong passphrase stops start-up naming the entry. */
export async function loadSigners(config: Config, families: FamilySpecs): Promise<SignerRegistry> {
  const problems: string[] = [];
  const registry: SignerRegistry = new Map();
  const secrets = new Map<string, Promise<Uint8Array | undefined>>();
  for (const s of config.signers.values()) {
    // A custody's key is asked for once the runtime is up (core/signers.ts); it may be away at start-up.
    if (s.type !== 'local') continue;
    secrets.set(
      s.id,
      readKeystoreFile(s.keystorePath, s.passphrase).catch((e: Error) => {
        problems.push(`${s.where}: cannot decrypt keystore ${s.keystorePath}: ${e.message}`);
        return undefined;
      }),
    );
  }
  for (const r of config.relayers) {
    const secret = await secrets.get(r.signerId);
    if (!secret) continue;
    const kind = families.spec(r.networkType).signerKind;
    const key = signerKey(r.signerId, kind);
    if (registry.has(key)) continue;
    try {
      registry.set(key, createLocalSigner(secret, kind));
    } catch (e) {
      problems.push(`${r.where}.signer_id: signer "${r.signerId}" cannot sign for ${r.networkType}: ${(e as Error).message}`);
    }
  }
  await Promise.all(secrets.values());
  if (problems.length) throw new ConfigError(config.file, problems);
  return registry;
}
