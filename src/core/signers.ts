import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { createLocalSigner, isValidSecp256k1Key, type Signer, type SignerKind } from '../signers/index.js';
import { decryptKeystore, encryptKeystore, readKeystoreFile } from '../signers/keystore.js';
import { curveOf, custodySigner, guarded } from '../signers/remote.js';
import { announce } from './changes.js';
import { CustodyError, type Curve, type Custodies, type CustodyType, type SecretValue } from '../signers/custody.js';
import { describeIssues } from '../lib/validate.js';
import { conflict, invalid, isDomainError, notFound } from './domain-error.js';
import type { Runtime } from './runtime.js';
import { paged, toPage } from './page.js';

// Signers: the config file's, plus those created or changed through the API, kept encrypted with
// SIGNER_STORE_KEY in the signers table (a row there wins over the file's entry of the same id):
// `local` ones as keystores, a custody's (signers/custody.ts) as its config, sealed, beside the fields
// it may show. One removed through the API leaves a tombstone, so the file does not bring it back.
// Key material and secrets never leave this module but as a Signer (which hides them).

export interface SignerView {
  id: string;
  /** `local`, or the custody's type (`aws_kms`, `pkcs11`, ...). */
  type: string;
  /** The config's fields that are not secret (none for `local`). */
  config: Record<string, unknown>;
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

const anyConfig = z.record(z.string(), z.unknown()).meta({ description: "The type's config: see docs/configuration.md#signers." });

/**
 * The create and update inputs, naming the types offered (`local`, `plain` and the custodies the
 * composition root hands down, rt.signers.custodies), so the document lists exactly what is accepted.
 */
export function signerInputs(custodies: Custodies) {
  const types = ['local', 'plain', ...custodies.keys()] as [string, ...string[]];
  const signerType = z.enum(types, { message: `must be one of ${types.join(', ')}` });
  return {
    createInput: z
      .object({
        id: signerId.nullish().meta({ description: 'Letters, digits, ".", "_", ":" and "-" (default: a new UUID).' }),
        // "plain" takes a raw key (the reference's name); "local" a keystore, or nothing for a new key.
        type: signerType.meta({ description: '`local`, `plain`, or the custody holding the key.' }),
        config: anyConfig.nullish(),
      })
      .strict(),
    updateInput: z.object({ type: signerType.nullish(), config: anyConfig }).strict(),
  };
}

/**
 * A create request of each type as the document states it: `type` and the config that type takes
 * (`local`: a keystore with its passphrase, or nothing for a new key; `plain`: a key; a custody: its
 * own schema). The service checks each with the same schemas (stored(), secretOf()).
 */
export function signerCreateVariants(custodies: Custodies): z.ZodObject[] {
  const of = (type: string, config: z.ZodType) => z.strictObject({ id: signerId.nullish(), type: z.literal(type), config }).meta({ title: `type ${type}` });
  const keystore = keyConfig.pick({ keystore: true, passphrase: true }).required();
  return [
    of('local', z.union([keystore, z.strictObject({})]).nullish()),
    of('plain', keyConfig.pick({ key: true }).required()),
    ...[...custodies.values()].map((c) => of(c.type, c.config.safeParse({}).success ? c.config.nullish() : c.config)),
  ];
}

type SignerInputs = ReturnType<typeof signerInputs>;
export type CreateSignerInput = z.input<SignerInputs['createInput']>;
export type UpdateSignerInput = z.input<SignerInputs['updateInput']>;

async function tombstoned(rt: Runtime, id: string) {
  return !!(await rt.db.prisma.tombstone.findUnique({ where: { kind_id: { kind: 'signer', id } } }));
}

/** What the signers table keeps for a custody's signer: the fields it may show, and its whole config sealed. */
interface StoredCustody {
  visible: Record<string, unknown>;
  sealed: { keystore: unknown; iv: string; tag: string; data: string };
}

const LOCAL = ['local', 'plain'];

function viewOf(id: string, type: string, stored: unknown, source: 'config' | 'api'): SignerView {
  return { id, type, config: type === 'local' ? {} : ((stored as StoredCustody | null)?.visible ?? {}), source };
}

function fileView(rt: Runtime, id: string): SignerView | null {
  const entry = rt.config.signers.get(id);
  if (!entry) return null;
  if (entry.type === 'local') return { id, type: 'local', config: {}, source: 'config' };
  return { id, type: entry.custody, config: custodyOf(rt, entry.custody).visible(entry.config), source: 'config' };
}

async function find(rt: Runtime, id: string): Promise<SignerView | null> {
  const row = await rt.db.prisma.signer.findUnique({ where: { id }, select: { type: true, keystore: true } });
  if (row) return viewOf(id, row.type, row.keystore, 'api');
  return (await tombstoned(rt, id)) ? null : fileView(rt, id);
}

export async function getSigner(rt: Runtime, id: string): Promise<SignerView> {
  const found = await find(rt, id);
  if (!found) throw signerNotFound(id);
  return found;
}

/** A page of signers; `shows` narrows them to those the caller may read. */
export async function listSigners(rt: Runtime, page?: number | null, perPage?: number | null, shows: (id: string) => boolean = () => true) {
  const p = toPage(page, perPage);
  const all = async () => {
    const [rows, stones] = await Promise.all([
      rt.db.prisma.signer.findMany({ select: { id: true, type: true, keystore: true } }),
      rt.db.prisma.tombstone.findMany({ where: { kind: 'signer' }, select: { id: true } }),
    ]);
    const api = new Set(rows.map((r) => r.id));
    const gone = new Set(stones.map((s) => s.id));
    const fromFile = [...rt.config.signers.keys()].filter((id) => !api.has(id) && !gone.has(id));
    return [...rows.map((r) => viewOf(r.id, r.type, r.keystore, 'api')), ...fromFile.map((id) => fileView(rt, id)!)]
      .filter((v) => shows(v.id))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  };
  return paged(
    p,
    async () => (await all()).slice(p.skip, p.skip + p.perPage),
    async () => (await all()).length,
  );
}

function custodyOf(rt: Runtime, type: string): CustodyType {
  const custody = rt.signers.custodies.get(type);
  if (!custody) throw invalid(`type: signer type "${type}" is not supported (supported: ${[...LOCAL, ...rt.signers.custodies.keys()].join(', ')})`);
  return custody;
}

/** The whole config, encrypted under a fresh data key, itself kept as a keystore under the store key. */
async function seal(config: unknown, passphrase: string): Promise<StoredCustody['sealed']> {
  const dataKey = randomBytes(32);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', dataKey, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(config), 'utf8'), cipher.final()]);
  const keystore = await encryptKeystore(dataKey, passphrase, { n: KEYSTORE_COST });
  dataKey.fill(0);
  return { keystore, iv: iv.toString('base64'), tag: cipher.getAuthTag().toString('base64'), data: data.toString('base64') };
}

async function unseal(sealed: StoredCustody['sealed'], passphrase: string): Promise<unknown> {
  const dataKey = await decryptKeystore(sealed.keystore, passphrase);
  try {
    const decipher = createDecipheriv('aes-256-gcm', dataKey, Buffer.from(sealed.iv, 'base64'));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return JSON.parse(Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]).toString('utf8'));
  } finally {
    dataKey.fill(0);
  }
}

/** Opens a custody's key for `curve`, every call bounded by SIGNER_TIMEOUT_MS and counted. */
async function openCustody(rt: Runtime, id: string, custody: CustodyType, config: unknown, curve: Curve, baseDir: string) {
  const secret = (s: SecretValue) => {
    if (typeof s === 'string' || s.type === 'plain') return typeof s === 'string' ? s : s.value;
    const value = process.env[s.value];
    if (!value) throw new CustodyError('rejected', `environment variable ${s.value} is not set`);
    return value;
  };
  const opened = await custody.open(config, { id, curve, secret, baseDir });
  return guarded(opened, {
    id,
    type: custody.type,
    timeoutMs: rt.env.signerTimeoutMs,
    observe: (operation, outcome, seconds) => {
      rt.metrics.signerCalls.inc({ signer_type: custody.type, operation, outcome });
      rt.metrics.signerLatency.observe({ signer_type: custody.type, operation }, seconds);
    },
  });
}

/** Reads the key's public part for the first curve the type and the key share; a refusal is a 400 naming why. */
async function checkCustody(rt: Runtime, id: string, custody: CustodyType, config: unknown): Promise<void> {
  let last: Error | undefined;
  for (const curve of custody.curves) {
    try {
      const opened = await openCustody(rt, id, custody, config, curve, process.cwd());
      await opened.publicKey(AbortSignal.timeout(rt.env.signerTimeoutMs));
      await opened.close?.();
      return;
    } catch (e) {
      last = e as Error;
      if (!(e instanceof CustodyError && e.fault === 'wrong_key')) break;
    }
  }
  throw invalid(`config: the key cannot be used: ${last?.message}`);
}

function storeKey(rt: Runtime): string {
  if (!rt.env.signerStoreKey) throw invalid('signers can be created or changed through the API only when SIGNER_STORE_KEY is set');
  return rt.env.signerStoreKey;
}

/** The 32-byte secret a create or update request gives (or a new one). */
async function secretOf(type: string, config: Record<string, unknown> | null | undefined): Promise<Uint8Array> {
  const parsed = keyConfig.safeParse(config ?? {});
  if (!parsed.success) throw invalid(describeIssues(parsed.error, 'config'));
  const c = parsed.data;
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
  const users = await rt.db.prisma.relayer.findMany({ where: { signerId: id }, select: { id: true }, take: 5 });
  return users.map((u) => u.id);
}

/** What the signers table keeps for a create or update request: a keystore, or a custody's sealed config. */
async function stored(rt: Runtime, id: string, type: string, config: Record<string, unknown> | null | undefined) {
  const passphrase = storeKey(rt);
  if (LOCAL.includes(type)) {
    const secret = await secretOf(type, config);
    const keystore = (await encryptKeystore(secret, passphrase, { n: KEYSTORE_COST })) as object;
    secret.fill(0);
    return { type: 'local', keystore };
  }
  const custody = custodyOf(rt, type);
  const parsed = custody.config.safeParse(config ?? {});
  if (!parsed.success) throw invalid(describeIssues(parsed.error, 'config'));
  await checkCustody(rt, id, custody, parsed.data);
  const keystore: StoredCustody = { visible: custody.visible(parsed.data), sealed: await seal(parsed.data, passphrase) };
  return { type: custody.type, keystore: keystore as object };
}

export async function createSigner(rt: Runtime, input: CreateSignerInput): Promise<SignerView> {
  const parsed = signerInputs(rt.signers.custodies).createInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const id = parsed.data.id ?? crypto.randomUUID();
  storeKey(rt);
  if (await find(rt, id)) throw conflict('Signer with this ID already exists', `id: "${id}" is taken`);
  const row = await stored(rt, id, parsed.data.type, parsed.data.config);
  await rt.db.prisma.$transaction([rt.db.prisma.signer.create({ data: { id, ...row } }), rt.db.prisma.tombstone.deleteMany({ where: { kind: 'signer', id } })]);
  return viewOf(id, row.type, row.keystore, 'api');
}

/** Replaces the key of a signer no relayer uses (a relayer's address comes from its signer). */
export async function updateSigner(rt: Runtime, id: string, input: UpdateSignerInput): Promise<SignerView> {
  const current = await getSigner(rt, id);
  const parsed = signerInputs(rt.signers.custodies).updateInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const users = await inUse(rt, id);
  if (users.length) throw invalid(`signer ${id} is used by relayer ${users.join(', ')}: its key cannot change`);
  const row = await stored(rt, id, parsed.data.type ?? current.type, parsed.data.config);
  await rt.db.prisma.signer.upsert({ where: { id }, create: { id, ...row }, update: row });
  forgetSigner(rt, id);
  await announce(rt, { kind: 'signer', id });
  return viewOf(id, row.type, row.keystore, 'api');
}

export async function deleteSigner(rt: Runtime, id: string): Promise<void> {
  await getSigner(rt, id);
  const users = await inUse(rt, id);
  if (users.length) throw invalid(`signer ${id} is used by relayer ${users.join(', ')}; delete or move those first`);
  await rt.db.prisma.$transaction([
    rt.db.prisma.signer.deleteMany({ where: { id } }),
    rt.db.prisma.tombstone.upsert({ where: { kind_id: { kind: 'signer', id } }, create: { kind: 'signer', id }, update: {} }),
  ]);
  forgetSigner(rt, id);
  await announce(rt, { kind: 'signer', id });
}

/** Lets the loaded signer of `id` go (it changed): the next use loads it again. */
export function forgetSigner(rt: Runtime, id: string) {
  for (const kind of ['evm', 'solana', 'stellar'] as const) {
    const key = signerKey(id, kind);
    void rt.signers.loaded
      .get(key)
      ?.close?.()
      .catch(() => {});
    rt.signers.loaded.delete(key);
  }
}

/** Releases every custody session the loaded signers hold (at shutdown). */
export async function closeSigners(rt: Runtime): Promise<void> {
  await Promise.all([...rt.signers.loaded.values()].map((s) => s.close?.().catch((err) => rt.log.warn({ err }, 'a signer did not close'))));
  rt.signers.loaded.clear();
}

/**
 * The signer of `id` for relayers of `networkType`, loaded once into the runtime's registry: from
 * the signers table, else the config file. A custody's key is asked for its public part here, once.
 */
export async function signerFor(rt: Runtime, id: string, networkType: string): Promise<Signer> {
  const kind = rt.families.spec(networkType).signerKind;
  const key = signerKey(id, kind);
  const known = rt.signers.loaded.get(key);
  if (known) return known;
  const signer = await load(rt, id, kind).catch((e: Error) => {
    throw isDomainError(e) ? e : invalid(`signer_id: signer "${id}" cannot sign for ${networkType}: ${e.message}`);
  });
  rt.signers.loaded.set(key, signer);
  return signer;
}

async function load(rt: Runtime, id: string, kind: SignerKind): Promise<Signer> {
  const fromCustody = async (type: string, config: unknown, baseDir: string) =>
    custodySigner(await openCustody(rt, id, custodyOf(rt, type), config, curveOf(kind), baseDir), kind);
  const row = await rt.db.prisma.signer.findUnique({ where: { id } });
  if (row) {
    const storeKey = rt.env.signerStoreKey;
    if (!storeKey) throw new Error('it is stored encrypted and SIGNER_STORE_KEY is not set');
    const decrypted = <T>(p: Promise<T>) =>
      p.catch((e: Error) => {
        throw new Error(`it cannot be decrypted with SIGNER_STORE_KEY (${e.message})`);
      });
    if (row.type !== 'local') return fromCustody(row.type, await decrypted(unseal((row.keystore as unknown as StoredCustody).sealed, storeKey)), process.cwd());
    return localSigner(await decrypted(decryptKeystore(row.keystore, storeKey)), kind);
  }
  const entry = rt.config.signers.get(id);
  if (!entry || (await tombstoned(rt, id))) throw invalid(`signer_id: unknown signer "${id}"`);
  if (entry.type === 'custody') return fromCustody(entry.custody, entry.config, entry.baseDir);
  return localSigner(await readKeystoreFile(entry.keystorePath, entry.passphrase), kind);
}

/** A local signer of `secret`, which is wiped once the signer holds its key. */
function localSigner(secret: Uint8Array, kind: SignerKind): Signer {
  try {
    return createLocalSigner(secret, kind);
  } finally {
    secret.fill(0);
  }
}
