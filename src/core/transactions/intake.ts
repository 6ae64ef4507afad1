import { randomUUID } from 'node:crypto';
import { columnsAs, recordsetJson } from '../../db/columns.js';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../runtime.js';
import { slot } from '../state.js';
import type { Held } from './held.js';
import { AlsoRefused, insertTransactions, type Also } from './store.js';
import type { NetworkType } from '../family-list.js';
import type { Accepted } from './pipeline.js';

export interface Intake {
  /** The relayer as the request was checked against; the insert refuses it if the row changed since. */
  relayer: Relayer;
  type: NetworkType;
  accepted: Accepted;
  idempotencyKey: string | null;
  /** Of the request, when it has an idempotency key. */
  digest: string | null;
}

/**
 * The row written; 'stale': the relayer changed after the request was checked (check it again);
 * 'no-nonce': the relayer's nonce is not initialised yet.
 */
export type Intaken = Transaction | 'stale' | 'no-nonce';

interface Waiting extends Intake {
  resolve(outcome: Intaken): void;
  reject(e: unknown): void;
}

const MAX_BATCH = 500;

/**
 * Group commit of accepted transactions: requests that arrive while the previous insert is
 * running are written together, those of many relayers in one statement of one database
 * transaction. It locks each relayer's row once (in id order), checks that each request was
 * validated against its relayer as it is now (CHECKED), and allocates each relayer's nonces with a
 * single `next_nonce = next_nonce + k`. Each row still gets exactly one nonce, in its relayer's
 * arrival order, in the transaction that writes it. (With 100 relayers each taking a few sends a
 * second, a group commit per relayer wrote about one statement a send.)
 */
export function insertAccepted(rt: Runtime, item: Intake): Promise<Intaken> {
  return new Promise((resolve, reject) => {
    const q = rt.state(INTAKE);
    q.items.push({ resolve, reject, ...item });
    if (!q.running) {
      q.running = true;
      // Let the requests that arrived in this turn of the event loop join the batch.
      setImmediate(() => void drain(rt, q));
    }
  });
}

interface IntakeQueue {
  items: Waiting[];
  running: boolean;
}

/** Send requests waiting to be written, of every relayer. */
const INTAKE = slot('intake', (): IntakeQueue => ({ items: [], running: false }));

async function drain(rt: Runtime, q: IntakeQueue) {
  while (q.items.length > 0) {
    await rt.work.to?.roomForSends();
    const groups = takeBatch(q.items);
    const written = await insertBatch(rt, groups).catch((e: unknown) => ({ failed: e }));
    if (!('failed' in written)) {
      settle(rt, groups, written);
      continue;
    }
    if (groups.length === 1 && groups[0].length === 1) {
      groups[0][0].reject(written.failed);
      continue;
    }
    // One bad apple (typically a repeated Idempotency-Key) spoils a batch: write each relayer's
    // on its own, and those of a relayer that fails again one by one.
    for (const group of groups) {
      const alone = groups.length === 1 ? null : await insertBatch(rt, [group]).catch(() => null);
      if (alone) settle(rt, [group], alone);
      else
        for (const w of group) {
          const one = await insertBatch(rt, [[w]]).catch((e: unknown) => ({ failed: e }));
          if ('failed' in one) w.reject(one.failed);
          else settle(rt, [[w]], one);
        }
    }
  }
  q.running = false;
}

function settle(rt: Runtime, groups: Waiting[][], outcomes: Intaken[][]) {
  toWorker(rt, outcomes.flat());
  groups.forEach((group, g) => group.forEach((w, i) => w.resolve(outcomes[g][i])));
}

/**
 * Takes the next batch from the queue (in place): up to MAX_BATCH requests in arrival order, as
 * one group per relayer, each group the requests at the head of its relayer's line that were
 * checked against the same relayer. A relayer's requests after one left for a later batch stay
 * too, so its nonces follow its arrival order.
 */
export function takeBatch<W extends { relayer: Pick<Relayer, 'id' | CheckedField> }>(items: W[]): W[][] {
  const groups = new Map<string, W[]>();
  const closed = new Set<string>();
  const left: W[] = [];
  let taken = 0;
  for (const w of items) {
    const id = w.relayer.id;
    const group = groups.get(id);
    if (taken === MAX_BATCH || closed.has(id) || (group && group[0].relayer !== w.relayer && !sameChecks(group[0].relayer, w.relayer))) {
      closed.add(id);
      left.push(w);
    } else {
      if (group) group.push(w);
      else groups.set(id, [w]);
      taken++;
    }
  }
  items.length = 0;
  for (const w of left) items.push(w);
  return [...groups.values()];
}

/**
 * Writes one accepted transaction on its own (not in a group commit) and, in the same database
 * transaction, `also`'s write (its nonce and its effect on other tables commit together).
 * 'refused': `also` did not change what it had to, and nothing was written.
 */
export async function insertTogether(rt: Runtime, item: Intake, also: Also): Promise<Intaken | 'refused'> {
  let out: Intaken;
  try {
    [[out]] = await insertBatch(rt, [[item]], also);
  } catch (e) {
    if (e instanceof AlsoRefused) return 'refused';
    throw e;
  }
  toWorker(rt, [out]);
  return out;
}

/** New rows go to this instance's worker, leased to it when written (rows written free are claimed when due). */
function toWorker(rt: Runtime, outcomes: Intaken[]) {
  const rows = outcomes.filter((o): o is Transaction => typeof o === 'object');
  if (rows.length === 0) return;
  rt.work.to?.handOff(rows.filter((tx) => tx.leaseOwner !== null));
}

/** What a request is checked against; updated_at alone could miss two changes in one millisecond. */
const CHECKED = ['updatedAt', 'paused', 'systemDisabled', 'policies', 'customRpcUrls', 'notificationId', 'signerId', 'address', 'network'] as const;
type CheckedField = (typeof CHECKED)[number];

const same = (a: unknown, b: unknown) => (a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : JSON.stringify(a) === JSON.stringify(b));
const sameChecks = (a: Pick<Relayer, CheckedField>, b: Pick<Relayer, CheckedField>) => CHECKED.every((f) => same(a[f], b[f]));

/** Each checked field compared in SQL as `same` compares it (JSON by value, a JSON null as SQL's). */
const CHECK_SQL: Record<CheckedField, (p: string) => string> = {
  updatedAt: (p) => `updated_at = ${p}::timestamp(3)`,
  paused: (p) => `paused = ${p}::boolean`,
  systemDisabled: (p) => `system_disabled = ${p}::boolean`,
  policies: (p) => `policies = ${p}::jsonb`,
  customRpcUrls: (p) => `coalesce(custom_rpc_urls, 'null'::jsonb) = ${p}::jsonb`,
  notificationId: (p) => `notification_id IS NOT DISTINCT FROM ${p}::text`,
  signerId: (p) => `signer_id = ${p}::text`,
  address: (p) => `address = ${p}::text`,
  network: (p) => `network = ${p}::text`,
};
const checkParam = (f: CheckedField, v: unknown) =>
  f === 'policies' || f === 'customRpcUrls' ? JSON.stringify(v ?? null) : v instanceof Date ? v.toISOString() : v;

/**
 * Each relayer's row, still as its group was checked against (a row of the recordset $4: its id,
 * the nonces its group takes and the checked fields, each as `is_<field>`), locked in id order (two batches locking the
 * same relayers cannot deadlock) as strongly as the UPDATE locks it (FOR NO KEY UPDATE: FOR UPDATE
 * would also wait on, and deadlock with, writes of rows that refer to the relayer) and advanced by the nonces its group takes (the first of them is
 * `base`). No row for a relayer that changed, or whose group takes nonces when it has none yet.
 * Its parameters follow the insert's own ($1 to $3).
 */
const GUARD = `WITH c AS (SELECT * FROM jsonb_to_recordset($4::jsonb) AS c(id text, taking bigint, ${CHECKED.map((f) => `"is_${f}" ${f === 'paused' || f === 'systemDisabled' ? 'boolean' : 'text'}`).join(', ')})),
    locked AS (SELECT id FROM relayers WHERE id IN (SELECT id FROM c) ORDER BY id FOR NO KEY UPDATE)
  UPDATE relayers SET next_nonce = next_nonce + c.taking
  FROM c
  WHERE relayers.id = c.id AND relayers.id IN (SELECT id FROM locked) AND (c.taking = 0 OR next_nonce IS NOT NULL)
    AND ${CHECKED.map((f) => CHECK_SQL[f](`c."is_${f}"`)).join(' AND ')}
  RETURNING relayers.id AS relayer_id, next_nonce - c.taking AS base`;

const RELAYER_NOW = `SELECT ${columnsAs(['id', 'nextNonce', ...CHECKED])} FROM relayers WHERE id IN (SELECT jsonb_array_elements_text($1::jsonb))`;

/**
 * One statement writes the batch: the guard checks each group's relayer and allocates its nonces,
 * the insert writes the rows (with their deliveries, when a relayer has a notification). The
 * groups it wrote nothing of, their relayers as they are now say why. Outcomes by group, in order.
 */
async function insertBatch(rt: Runtime, groups: Pick<Waiting, keyof Intake>[][], also?: Also): Promise<Intaken[][]> {
  const rows = groups.flatMap((group) => {
    let offset = 0n;
    return group.map((w) => ({
      to: null,
      data: null,
      gasLimit: null,
      gasPrice: null,
      maxFeePerGas: null,
      maxPriorityFeePerGas: null,
      speed: null,
      ...w.accepted.data,
      id: randomUUID(),
      relayerId: w.relayer.id,
      networkType: w.type,
      nonce: w.accepted.takesNonce ? offset++ : null,
      request: w.accepted.request,
      idempotencyKey: w.idempotencyKey,
      requestDigest: w.digest,
    }));
  });
  const checks = groups.map((group) => {
    const relayer = group[0].relayer;
    const taking = group.filter((w) => w.accepted.takesNonce).length;
    return { id: relayer.id, taking, ...Object.fromEntries(CHECKED.map((f) => [`is_${f}`, checkParam(f, relayer[f])])) };
  });
  const held = new Map<string, Held>();
  for (const group of groups) {
    const h = rt.families.pipeline(group[0].type)?.heldFrom?.(rt, group[0].relayer);
    if (h) held.set(group[0].relayer.id, h);
  }
  const written = await insertTransactions(rt, rows, {
    relayers: groups.map((group) => group[0].relayer),
    leaseOwner: rt.work.to ? rt.instanceId : null,
    held,
    guard: { sql: GUARD, params: [recordsetJson(checks)] },
    also,
  });
  if (written.length === rows.length) {
    let i = 0;
    return groups.map((group) => group.map(() => written[i++]));
  }
  const byRelayer = new Map<string, Transaction[]>();
  for (const tx of written) byRelayer.set(tx.relayerId, [...(byRelayer.get(tx.relayerId) ?? []), tx]);
  const refused = groups.filter((group) => !byRelayer.has(group[0].relayer.id)).map((group) => group[0].relayer.id);
  const now = new Map(
    (await rt.db.read<Pick<Relayer, 'id' | CheckedField> & { nextNonce: bigint | null }>(RELAYER_NOW, [JSON.stringify(refused)])).map((r) => [r.id, r]),
  );
  return groups.map((group) => {
    const mine = byRelayer.get(group[0].relayer.id);
    if (mine) return mine;
    const relayer = now.get(group[0].relayer.id);
    const noNonce = relayer && sameChecks(group[0].relayer, relayer) && relayer.nextNonce === null;
    return group.map((w) => (noNonce && w.accepted.takesNonce ? 'no-nonce' : 'stale'));
  });
}
