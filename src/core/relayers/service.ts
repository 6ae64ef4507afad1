import { z } from 'zod';
import { announce } from '../changes.js';
import { columnsAs } from '../../db/columns.js';
import { Prisma, type Relayer } from '../../generated/prisma/client.js';
import { invalid, relayerNotFound } from '../domain-error.js';
import { describeIssues } from '../../lib/validate.js';
import { rpcEntries } from '../rpc-urls.js';
import type { Runtime } from '../runtime.js';
import { slot } from '../state.js';
import { ExpiringMap } from '../../lib/expiring.js';
import { paged, toPage } from '../page.js';
import { parsePolicies } from './policies.js';
import { emitRelayerState, writeWithEvents } from '../notifications/events.js';

const RELAYERS_BY_ID = `SELECT ${columnsAs(Object.values(Prisma.RelayerScalarFieldEnum))} FROM relayers WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))`;

/**
 * The relayers of `ids` that exist, in hand-written SQL read as Prisma reads them: every step reads
 * its rows' relayers, and Prisma's findMany cost the event loop several times the database's work.
 */
export const readRelayers = (rt: Runtime, ids: readonly string[]): Promise<Relayer[]> =>
  rt.db.read<Relayer>(RELAYERS_BY_ID, [JSON.stringify(ids)], { prepare: true });

export async function getRelayer(rt: Runtime, id: string): Promise<Relayer> {
  const relayer = await rt.db.prisma.relayer.findUnique({ where: { id } });
  if (!relayer) throw relayerNotFound(id);
  return relayer;
}

// Relayers as last read here; one not asked for in SNAPSHOT_IDLE_MS (deleted) is let go.
const SNAPSHOT_IDLE_MS = 10 * 60_000;
const SNAPSHOTS = slot('relayer snapshots', () => new ExpiringMap<string, Relayer>(SNAPSHOT_IDLE_MS, { touch: true }));

/** Lets go of the relayer (every relayer without `id`) as last read here: it is read again when next used. */
export function forgetRelayers(rt: Runtime, id?: string) {
  if (id === undefined) rt.state(SNAPSHOTS).clear();
  else rt.state(SNAPSHOTS).delete(id);
}

/**
 * The relayer as last read here (`fresh`: read it now). Only for work whose write checks the row's
 * updated_at under its lock (the send path), so a change made anywhere is never missed: a snapshot
 * that is behind only costs another read. It spares a read per request under load.
 */
export async function relayerSnapshot(rt: Runtime, id: string, fresh = false): Promise<Relayer> {
  const byId = rt.state(SNAPSHOTS);
  const known = fresh ? undefined : byId.get(id);
  if (known) return known;
  const relayer = await getRelayer(rt, id);
  byId.set(id, relayer);
  return relayer;
}

/** A page of relayers; `where` narrows them to those the caller may read. */
export async function listRelayers(rt: Runtime, page?: number | null, perPage?: number | null, where?: Prisma.RelayerWhereInput) {
  const p = toPage(page, perPage);
  return paged(
    p,
    () => rt.db.prisma.relayer.findMany({ where, orderBy: { id: 'asc' }, skip: p.skip, take: p.perPage }),
    () => rt.db.prisma.relayer.count({ where }),
  );
}

export const updateInput = z
  .object({
    name: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
    paused: z.boolean().optional(),
    notificationId: z.string().min(1, 'must not be empty').nullish(),
    customRpcUrls: rpcEntries.nullish(),
    policies: z.record(z.string(), z.unknown()).nullish(),
  })
  .strict();

export type UpdateRelayerInput = z.input<typeof updateInput>;

/** Applies every change or none: a field that fails validation leaves the relayer as it was. */
export async function updateRelayer(rt: Runtime, id: string, input: UpdateRelayerInput): Promise<Relayer> {
  const relayer = await getRelayer(rt, id);
  const parsed = updateInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const i = parsed.data;
  const data: Prisma.RelayerUpdateInput = {};
  if (i.name) data.name = i.name;
  if (i.paused !== undefined) data.paused = i.paused;
  if (i.notificationId !== undefined) {
    if (i.notificationId !== null) {
      const exists = await rt.db.prisma.notification.findUnique({ where: { id: i.notificationId }, select: { id: true } });
      if (!exists) throw invalid(`notification_id: notification "${i.notificationId}" does not exist`);
      data.notification = { connect: { id: i.notificationId } };
    } else {
      data.notification = { disconnect: true };
    }
  }
  if (i.customRpcUrls !== undefined) data.customRpcUrls = i.customRpcUrls ?? Prisma.DbNull;
  if (i.policies !== undefined) {
    // A policy object updates the fields it names; null clears every policy. Only the fields given
    // are validated: the stored ones were checked when set, and are kept in storable form.
    const result = parsePolicies(rt.families.spec(relayer.networkType), i.policies ?? {});
    if (!result.ok) throw invalid(describeIssues(result.error, 'policies'));
    data.policies = (i.policies === null ? {} : { ...(relayer.policies as object), ...result.value }) as Prisma.InputJsonValue;
  }
  const updated = await writeWithEvents(rt, async (out) => {
    const row = await out.db.relayer.update({ where: { id }, data });
    if (row.paused !== relayer.paused) await emitRelayerState(out, row);
    return row;
  });
  await announce(rt, { kind: 'relayer', id });
  return updated;
}
