import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { createLocalSigner, isValidSecp256k1Key, type Signer, type SignerKind } from '../signers/index.js';
import { decryptKeystore, encryptKeystore, readKeystoreFile } from '../signers/keystore.js';
import { describeIssues } from '../lib/validate.js';
import { conflict, invalid, notFound } from './domain-error.js';
import type { Runtime } from './runtime.js';
import { paged, toPage } from './page.js';

// Signers: the config file's `local` signers, plus those created or changed through the API, kept
// as keystores encrypted with SIGNER_STORE_KEY in the signers table (a row there wins over the
// file's entry of the same id). One removed through the API leaves a tombstone, so the file does not
// bring it back. Key material never leaves this module but as a Signer (which hides it).

export interface SignerView {
  id: string;
  type: 'local';
  /** Where the signer is defined: the config file or the API. */
  source: 'config' | 'api';
}

/** Signers by `${signerId}:${kind}`: one keystore can serve relayers of several chain families. */
export type SignerRegistry = Map<string, Signer>;
export const signerKey = (signerId: string, kind: SignerKind) => `${signerId}:${kind}`;

export const signerNotFound = (id: string) => notFound(`Signer with ID ${id} not found`);

const KEYSTORE_COST = 1 << 15;

const signerId = z
  .string()
  .min(1, 'must not be empty')
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'may contain only letters, digits, ".", "_", ":" and "-"');
const hexKey = z
  .string()
  .regex(/^(0x)?[0-9a-fA-F]{64}$/, 'must be a 32-byte hex private key')
  .transform((k) => Uint8Array.from(Buffer.from(k.replace(/^0x/, ''), 'hex')));
const keyConfig = z
  .object({
    key: hexKey.optional().meta({ description: 'type `plain`: the 32-byte private key in hex.' }),
    keystore: z
      .union([z.string().min(1), z.record(z.string(), z.unknown())])
      .optional()
      .meta({ description: 'type `local`: a V3 keystore (object or JSON text).' }),
    passphrase: z.string().min(1).optional().meta({ description: "The keystore's passphrase." }),
  })
  .strict();

export const createInput = z
  .object({
    id: signerId.nullish().meta({ description: 'Letters, digits, ".", "_", ":" and "-" (default: a new UUID).' }),
    // "plain" takes a raw key (the reference's name); "local" a keystore, or nothing for a new key.
    type: z.enum(['local', 'plain'], { message: 'must be "local" or "plain"' }).meta({ description: '`local` or `plain`.' }),
    config: keyConfig.nullish(),
  })
  .strict();
export const updateInput = z.object({ type: z.enum(['local', 'plain'], { message: 'must be "local" or "plain"' }).nullish(), config: keyConfig }).strict();

export type CreateSignerInput = z.input<typeof createInput>;
export type UpdateSignerInput = z.input<typeof updateInput>;

async function tombstoned(rt: Runtime, id: string) {
  return !!(await rt.prisma.tombstone.findUnique({ where: { kind_id: { kind: 'signer', id } } }));
}

async function find(rt: Runtime, id: string): Promise<SignerView | null> {
  if (await rt.prisma.signer.findUnique({ where: { id }, select: { id: true } })) return { id, type: 'local', source: 'api' };
  if (rt.config.signers.has(id) && !(await tombstoned(rt, id))) return { id, type: 'local', source: 'config' };
  return null;
}

export async function getSigner(rt: Runtime, id: string): Promise<SignerView> {
  const found = await find(rt, id);
  if (!found) throw signerNotFound(id);
  return found;
}

export async function listSigners(rt: Runtime, page?: number | null, perPage?: number | null) {
  const p = toPage(page, perPage);
  const all = async () => {
    const [rows, stones] = await Promise.all([
      rt.prisma.signer.findMany({ select: { id: true } }),
      rt.prisma.tombstone.findMany({ where: { kind: 'signer' }, select: { id: true } }),
    ]);
    const api = new Set(rows.map((r) => r.id));
    const gone = new Set(stones.map((s) => s.id));
    const fromFile = [...rt.config.signers.keys()].filter((id) => !api.has(id) && !gone.has(id));
    return [
      ...[...api].map((id) => ({ id, type: 'local' as const, source: 'api' as const })),
      ...fromFile.map((id) => ({ id, type: 'local' as const, source: 'config' as const })),
    ].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  };
  return paged(
    p,
    async () => (await all()).slice(p.skip, p.skip + p.perPage),
    async () => (await all()).length,
  );
}

function storeKey(rt: Runtime): string {
  if (!rt.env.signerStoreKey) throw invalid('signers can be created or changed through the API only when SIGNER_STORE_KEY is set');
  return rt.env.signerStoreKey;
}

/** The 32-byte secret a create or update request gives (or a new one). */
async function secretOf(type: 'local' | 'plain', config: z.infer<typeof keyConfig> | null | undefined): Promise<Uint8Array> {
  const c = config ?? {};
  if (type === 'plain') {
    if (!c.key) throw invalid('config.key: required for plain signers');
    if (c.keystore !== undefined) throw invalid('config.keystore: not taken by plain signers');
    if (!isValidSecp256k1Key(c.key)) throw invalid('config.key: not a valid private key');
    return c.key;
  }
  if (c.key !== undefined) throw invalid('config.key: not taken by local signers (use type "plain", or config.keystore)');
  if (c.keystore === undefined) {
    if (c.passphrase !== undefined) throw invalid('config.passphrase: only taken with config.keystore');
    let secret: Uint8Array;
    do secret = new Uint8Array(randomBytes(32));
    while (!isValidSecp256k1Key(secret));
    return secret;
  }
  if (c.passphrase === undefined) throw invalid('config.passphrase: required with config.keystore');
  try {
    return await decryptKeystore(c.keystore, c.passphrase);
  } catch (e) {
    throw invalid(`config.keystore: cannot be decrypted (${(e as Error).message})`);
  }
}

async function inUse(rt: Runtime, id: string) {
  const users = await rt.prisma.relayer.findMany({ where: { signerId: id }, select: { id: true }, take: 5 });
  return users.map((u) => u.id);
}

export async function createSigner(rt: Runtime, input: CreateSignerInput): Promise<SignerView> {
  const parsed = createInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const id = parsed.data.id ?? crypto.randomUUID();
  const passphrase = storeKey(rt);
  if (await find(rt, id)) throw conflict('Signer with this ID already exists', `id: "${id}" is taken`);
  const secret = await secretOf(parsed.data.type, parsed.data.config);
  const keystore = await encryptKeystore(secret, passphrase, { n: KEYSTORE_COST });
  secret.fill(0);
  await rt.prisma.$transaction([
    rt.prisma.signer.create({ data: { id, keystore: keystore as object } }),
    rt.prisma.tombstone.deleteMany({ where: { kind: 'signer', id } }),
  ]);
  return { id, type: 'local', source: 'api' };
}

/** Replaces the key of a signer no relayer uses (a relayer's address comes from its signer). */
export async function updateSigner(rt: Runtime, id: string, input: UpdateSignerInput): Promise<SignerView> {
  await getSigner(rt, id);
  const parsed = updateInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const users = await inUse(rt, id);
  if (users.length) throw invalid(`signer ${id} is used by relayer ${users.join(', ')}: its key cannot change`);
  const passphrase = storeKey(rt);
  const secret = await secretOf(parsed.data.type ?? 'local', parsed.data.config);
  const keystore = (await encryptKeystore(secret, passphrase, { n: KEYSTORE_COST })) as object;
  secret.fill(0);
  await rt.prisma.signer.upsert({ where: { id }, create: { id, keystore }, update: { keystore } });
  for (const kind of ['evm', 'solana', 'stellar'] as const) rt.signers.delete(signerKey(id, kind));
  return { id, type: 'local', source: 'api' };
}

export async function deleteSigner(rt: Runtime, id: string): Promise<void> {
  await getSigner(rt, id);
  const users = await inUse(rt, id);
  if (users.length) throw invalid(`signer ${id} is used by relayer ${users.join(', ')}; delete or move those first`);
  await rt.prisma.$transaction([
    rt.prisma.signer.deleteMany({ where: { id } }),
    rt.prisma.tombstone.upsert({ where: { kind_id: { kind: 'signer', id } }, create: { kind: 'signer', id }, update: {} }),
  ]);
  for (const kind of ['evm', 'solana', 'stellar'] as const) rt.signers.delete(signerKey(id, kind));
}

/**
 * The signer of `id` for relayers of `networkType`, loaded once into the runtime's registry: from
 * the signers table, else the config file's keystore.
 */
export async function signerFor(rt: Runtime, id: string, networkType: string): Promise<Signer> {
  const kind = rt.families.spec(networkType).signerKind;
  const key = signerKey(id, kind);
  const known = rt.signers.get(key);
  if (known) return known;
  const row = await rt.prisma.signer.findUnique({ where: { id } });
  let secret: Uint8Array;
  if (row) {
    if (!rt.env.signerStoreKey) throw invalid(`signer_id: signer "${id}" is stored encrypted and SIGNER_STORE_KEY is not set`);
    secret = await decryptKeystore(row.keystore, rt.env.signerStoreKey).catch((e: Error) => {
      throw invalid(`signer_id: signer "${id}" cannot be decrypted with SIGNER_STORE_KEY (${e.message})`);
    });
  } else {
    const entry = rt.config.signers.get(id);
    if (!entry || (await tombstoned(rt, id))) throw invalid(`signer_id: unknown signer "${id}"`);
    secret = await readKeystoreFile(entry.keystorePath, entry.passphrase);
  }
  try {
    const signer = createLocalSigner(secret, kind);
    rt.signers.set(key, signer);
    return signer;
  } catch (e) {
    throw invalid(`signer_id: signer "${id}" cannot sign for ${networkType}: ${(e as Error).message}`);
  } finally {
    secret.fill(0);
  }
}
