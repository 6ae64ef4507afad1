import type { FamilySpecs } from '../core/registry.js';
import { createHash } from 'node:crypto';
import type { Db } from '../db/client.js';
import { Prisma } from '../generated/prisma/client.js';
import type { Config } from '../core/settings.js';
import { ConfigError } from './load.js';
import { signerKey, type SignerRegistry } from '../core/signers.js';

const digest = (v: unknown) => createHash('sha256').update(JSON.stringify(v)).digest('hex');

/**
 * Writes the file's notifications and relayers into the database. An entry is written only when it
 * differs from what was applied last time, so a restart with the same file changes nothing and
 * changes made through the API survive it; an edited entry replaces the stored one. A relayer or
 * notification deleted through the API (a tombstone) stays deleted, and one created through it
 * (no digest) is the API's even if the file later names its id.
 */
export async function syncConfig(prisma: Db, config: Config, families: FamilySpecs, signers: SignerRegistry): Promise<void> {
  const tombstones = await prisma.tombstone.findMany({ select: { kind: true, id: true } });
  const deleted = (kind: string) => new Set(tombstones.filter((t) => t.kind === kind).map((t) => t.id));
  const deletedNotifications = deleted('notification');
  for (const n of config.notifications) {
    if (deletedNotifications.has(n.id)) continue;
    const configDigest = digest(n);
    const existing = await prisma.notification.findUnique({ where: { id: n.id }, select: { configDigest: true } });
    if (existing && (existing.configDigest === configDigest || existing.configDigest === null)) continue;
    const data = { url: n.url, type: n.type, signingKey: n.signingKey, configDigest };
    await prisma.notification.upsert({ where: { id: n.id }, create: { id: n.id, ...data }, update: data });
  }

  const problems: string[] = [];
  const deletedRelayers = deleted('relayer');
  for (const r of config.relayers) {
    if (deletedRelayers.has(r.id)) continue;
    // A custody that did not answer at start-up: the address is unknown until it does (core/relayers/checks.ts).
    const address = signers.get(signerKey(r.signerId, families.spec(r.networkType).signerKind))?.address ?? '';
    const { where, ...entry } = r;
    const configDigest = digest({ ...entry, address });
    const existing = await prisma.relayer.findUnique({ where: { id: r.id }, select: { configDigest: true, address: true } });
    if (!address && existing) continue;
    // Unchanged since last applied, or created through the API (no digest): the API's stays.
    if (existing && (existing.configDigest === configDigest || existing.configDigest === null)) continue;
    if (r.notificationId && !(await prisma.notification.findUnique({ where: { id: r.notificationId }, select: { id: true } }))) {
      problems.push(`${where}.notification_id: unknown notification "${r.notificationId}"`);
      continue;
    }
    const data = {
      name: r.name,
      network: r.network,
      networkType: r.networkType,
      address,
      paused: r.paused,
      signerId: r.signerId,
      notificationId: r.notificationId,
      policies: r.policies as Prisma.InputJsonObject,
      customRpcUrls: r.customRpcUrls ? (r.customRpcUrls as unknown as Prisma.InputJsonArray) : Prisma.DbNull,
      configDigest,
    };
    // A new signer means a new account: its nonce must be read from the chain again.
    const resetNonce = existing && existing.address !== address ? { nextNonce: null } : {};
    await prisma.relayer.upsert({ where: { id: r.id }, create: { id: r.id, ...data }, update: { ...data, ...resetNonce } });
  }
  if (problems.length) throw new ConfigError(config.file, problems);
}
