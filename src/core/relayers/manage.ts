import { z } from 'zod';
import { announce } from '../changes.js';
import { Prisma, type Relayer } from '../../generated/prisma/client.js';
import { describeIssues } from '../../lib/validate.js';
import { conflict, invalid, isDomainError, unavailable } from '../domain-error.js';
import type { FamilySpecs } from '../registry.js';
import type { Runtime } from '../runtime.js';
import { signerFor } from '../signers.js';
import { FINAL_STATUSES } from '../transactions/service.js';
import { networkKey } from '../networks.js';
import { relayerEntry } from './entry.js';
import { parsePolicies } from './policies.js';
import { getRelayer } from './service.js';

// Relayers created and deleted through the API. A created relayer has no config digest: the config
// file's sync leaves it alone. A deleted one leaves a tombstone: the file does not bring it back.

export interface CreateRelayerInput {
  id?: string | null;
  name?: string | null;
  network?: string | null;
  networkType?: string | null;
  paused?: boolean | null;
  signerId?: string | null;
  notificationId?: string | null;
  customRpcUrls?: { url: string; weight?: number | null }[] | null;
  policies?: unknown;
}

const relayerId = z
  .string()
  .min(1, 'must not be empty')
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'may contain only letters, digits, ".", "_", ":" and "-"');

// The config file's relayer entry, with the id optional (a new UUID) as the reference has it.
export const createEntry = (types: FamilySpecs['types']) => relayerEntry(types).extend({ id: relayerId.optional() }).strict();

const snake = (i: CreateRelayerInput) =>
  Object.fromEntries(
    Object.entries({
      id: i.id,
      name: i.name,
      network: i.network,
      network_type: i.networkType,
      paused: i.paused,
      signer_id: i.signerId,
      notification_id: i.notificationId,
      custom_rpc_urls: i.customRpcUrls,
      policies: i.policies,
    }).filter(([, v]) => v !== undefined && v !== null),
  );

/** Validated as a config file entry is; the address is the signer's for the relayer's chain family. */
export async function createRelayer(rt: Runtime, input: CreateRelayerInput): Promise<Relayer> {
  const parsed = createEntry(rt.families.types).safeParse(snake(input));
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const e = parsed.data;
  const id = e.id ?? crypto.randomUUID();
  if (!rt.config.networks.has(networkKey(e.network_type, e.network))) throw invalid(`network: unknown ${e.network_type} network "${e.network}"`);
  const policies = parsePolicies(rt.families.spec(e.network_type), e.policies ?? {});
  if (!policies.ok) throw invalid(describeIssues(policies.error, 'policies'));
  if (e.notification_id && !(await rt.db.prisma.notification.findUnique({ where: { id: e.notification_id }, select: { id: true } }))) {
    throw invalid(`notification_id: unknown notification "${e.notification_id}"`);
  }
  if (await rt.db.prisma.relayer.findUnique({ where: { id }, select: { id: true } })) {
    throw conflict('Relayer with this ID already exists', `id: "${id}" is taken`);
  }
  const signer = await signerFor(rt, e.signer_id, e.network_type);
  const customRpcUrls = e.custom_rpc_urls;
  try {
    const [row] = await rt.db.prisma.$transaction([
      rt.db.prisma.relayer.create({
        data: {
          id,
          name: e.name,
          network: e.network,
          networkType: e.network_type,
          address: signer.address,
          paused: e.paused,
          signerId: e.signer_id,
          notificationId: e.notification_id ?? null,
          policies: policies.value as Prisma.InputJsonObject,
          customRpcUrls: customRpcUrls?.length ? (customRpcUrls as Prisma.InputJsonArray) : Prisma.DbNull,
          // The relayer check (nonce from the chain, signer, RPC) runs at once.
          checkAt: new Date(),
        },
      }),
      rt.db.prisma.tombstone.deleteMany({ where: { kind: 'relayer', id } }),
    ]);
    return row;
  } catch (err) {
    if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002')
      throw conflict('Relayer with this ID already exists', `id: "${id}" is taken`);
    throw err;
  }
}

const inFlight = { notIn: FINAL_STATUSES };

/** Deletes a relayer with no transaction in flight (its finished transactions go with it). */
export async function deleteRelayer(rt: Runtime, id: string): Promise<void> {
  await getRelayer(rt, id);
  await rt.db.prisma.$transaction(async (tx) => {
    // Locks the row: a send commits its transaction before or after this check, never during it.
    await tx.$queryRaw`SELECT id FROM relayers WHERE id = ${id} FOR UPDATE`;
    const pending = await tx.transaction.count({ where: { relayerId: id, status: inFlight } });
    if (pending > 0) throw invalid(`relayer ${id} has ${pending} transaction(s) in flight; cancel them or wait until they are final`);
    await tx.relayer.delete({ where: { id } });
    await tx.tombstone.upsert({ where: { kind_id: { kind: 'relayer', id } }, create: { kind: 'relayer', id }, update: { deletedAt: new Date() } });
  });
  await announce(rt, { kind: 'relayer', id });
}

export interface RelayerBalance {
  balance: bigint;
  unit: string;
}

/** The relayer account's balance on chain, in the chain's smallest unit. */
export async function relayerBalance(rt: Runtime, id: string, relayer?: Relayer): Promise<RelayerBalance> {
  const r = relayer ?? (await getRelayer(rt, id));
  const family = rt.families.pipeline(r.networkType);
  if (!family) throw invalid(`network_type: ${r.networkType} is not served`);
  try {
    return await family.balance(rt, r);
  } catch (e) {
    if (isDomainError(e)) throw e;
    throw unavailable(`relayer ${r.id}: the balance could not be read from the network: ${(e as Error).message}`);
  }
}

export interface RelayerStatus {
  networkType: string;
  balance: bigint;
  /** EVM: the next nonce; Stellar: the next sequence number; Solana: none. */
  nonce: bigint | null;
  pendingTransactionsCount: number;
  lastConfirmedTransactionTimestamp: Date | null;
  paused: boolean;
  systemDisabled: boolean;
}

export async function relayerStatus(rt: Runtime, id: string): Promise<RelayerStatus> {
  const relayer = await getRelayer(rt, id);
  const [{ balance }, pending, last, nonce] = await Promise.all([
    relayerBalance(rt, id, relayer),
    rt.db.prisma.transaction.count({ where: { relayerId: id, status: inFlight } }),
    rt.db.prisma.transaction.findFirst({ where: { relayerId: id, status: 'confirmed' }, orderBy: { confirmedAt: 'desc' }, select: { confirmedAt: true } }),
    nextNonce(rt, relayer),
  ]);
  return {
    networkType: relayer.networkType,
    balance,
    nonce,
    pendingTransactionsCount: pending,
    lastConfirmedTransactionTimestamp: last?.confirmedAt ?? null,
    paused: relayer.paused,
    systemDisabled: relayer.systemDisabled,
  };
}

/** The next nonce the relayer allocates (synced with the chain), or the chain's when not synced yet. */
async function nextNonce(rt: Runtime, relayer: Relayer): Promise<bigint | null> {
  if (relayer.networkType === 'solana') return null;
  if (relayer.nextNonce !== null) return relayer.nextNonce;
  try {
    return await rt.families.pipeline(relayer.networkType)!.chainNonce(rt, relayer);
  } catch (e) {
    if (isDomainError(e)) throw e;
    throw unavailable(`relayer ${relayer.id}: the nonce could not be read from the network: ${(e as Error).message}`);
  }
}
