import { randomUUID } from 'node:crypto';
import { columnsAs } from '../../db/columns.js';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../runtime.js';
import { insertTransactions } from './store.js';
import type { NetworkType } from '../registry.js';
import type { Accepted } from './pipeline.js';

export interface Intake {
  /** The relayer as the request was checked against; the insert refuses it if the row changed since. */
  relayer: Relayer;
  type: NetworkType;
  accepted: Accepted;
  idempotencyKey: string | null;
  digest: string;
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
 * Group commit of accepted transactions: requests for one relayer that arrive while its previous
 * insert is running are written together, in one database transaction that locks the relayer's row
 * once, checks that each request was validated against the relayer as it is now (CHECKED), and
 * allocates the nonces with a single `next_nonce = next_nonce + k`. Each row still gets exactly
 * one nonce, in arrival order, in the transaction that writes it.
 */
export function insertAccepted(rt: Runtime, item: Intake): Promise<Intaken> {
  return new Promise((resolve, reject) => {
    const q = queueOf(rt, item.relayer.id);
    q.items.push({ resolve, reject, ...item });
    if (!q.running) {
      q.running = true;
      // Let the requests that arrived in this turn of the event loop join the batch.
      setImmediate(() => void drain(rt, q));
    }
  });
}

export interface IntakeQueue {
  relayerId: string;
  items: Waiting[];
  running: boolean;
}

function queueOf(rt: Runtime, relayerId: string): IntakeQueue {
  const byRelayer = rt.held.intake;
  let q = byRelayer.get(relayerId);
  if (!q) byRelayer.set(relayerId, (q = { relayerId, items: [], running: false }));
  return q;
}

async function drain(rt: Runtime, q: IntakeQueue) {
  while (q.items.length > 0) {
    await rt.roomForSends();
    const batch = q.items.splice(0, checkedTogether(q.items));
    try {
      const outcomes = await insertBatch(rt, batch);
      toWorker(rt, outcomes);
      batch.forEach((w, i) => w.resolve(outcomes[i]));
    } catch (e) {
      if (batch.length === 1) {
        batch[0].reject(e);
        continue;
      }
      // One bad apple (typically a repeated Idempotency-Key) spoils a batch: write them one by one.
      for (const w of batch) {
        await insertBatch(rt, [w]).then(
          ([outcome]) => {
            toWorker(rt, [outcome]);
            w.resolve(outcome);
          },
          (err) => w.reject(err),
        );
      }
    }
  }
  q.running = false;
  rt.held.intake.delete(q.relayerId);
}

/** New rows go to this instance's worker, leased to it when written (else any worker claims them). */
function toWorker(rt: Runtime, outcomes: Intaken[]) {
  const rows = outcomes.filter((o): o is Transaction => typeof o === 'object');
  if (rows.length === 0) return;
  if (rt.handOff) rt.handOff(rows);
  else rt.wake();
}

/** What a request is checked against; updated_at alone could miss two changes in one millisecond. */
const CHECKED = ['updatedAt', 'paused', 'systemDisabled', 'policies', 'customRpcUrls', 'notificationId', 'signerId', 'address', 'network'] as const;
type CheckedField = (typeof CHECKED)[number];

const same = (a: unknown, b: unknown) => (a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : JSON.stringify(a) === JSON.stringify(b));
const sameChecks = (a: Pick<Relayer, CheckedField>, b: Pick<Relayer, CheckedField>) => CHECKED.every((f) => same(a[f], b[f]));

/** How many requests at the head of the queue were checked against the same relayer (one batch). */
function checkedTogether(items: Waiting[]): number {
  let n = 1;
  while (n < Math.min(items.length, MAX_BATCH) && (items[n].relayer === items[0].relayer || sameChecks(items[n].relayer, items[0].relayer))) n++;
  return n;
}

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
 * The relayer's row, still as the batch was checked against, locked and advanced by the $4
 * nonces the batch takes (the first of them is `base`): no row when it changed, or when nonces are
 * taken and it has none yet. Its parameters follow the insert's own ($1 to $3).
 */
const GUARD = `UPDATE relayers SET next_nonce = next_nonce + $4::bigint
  WHERE id = $5::text AND ($4::bigint = 0 OR next_nonce IS NOT NULL) AND ${CHECKED.map((f, i) => CHECK_SQL[f](`$${i + 6}`)).join(' AND ')}
  RETURNING next_nonce - $4::bigint AS base`;

const RELAYER_NOW = `SELECT ${columnsAs(['nextNonce', ...CHECKED])} FROM relayers WHERE id = $1`;

/**
 * One statement writes the batch: the guard checks the relayer and allocates the nonces, the
 * insert writes the rows (with their deliveries, when the relayer has a notification). When it
 * wrote nothing, the relayer as it is now says why.
 */
async function insertBatch(rt: Runtime, batch: Waiting[]): Promise<Intaken[]> {
  const relayer = batch[0].relayer;
  const taking = batch.filter((w) => w.accepted.takesNonce).length;
  let offset = 0n;
  const rows = await insertTransactions(
    rt,
    batch.map((w) => ({
      to: null,
      data: null,
      gasLimit: null,
      gasPrice: null,
      maxFeePerGas: null,
      maxPriorityFeePerGas: null,
      speed: null,
      ...w.accepted.data,
      id: randomUUID(),
      relayerId: relayer.id,
      networkType: w.type,
      nonce: w.accepted.takesNonce ? offset++ : null,
      request: w.accepted.request,
      idempotencyKey: w.idempotencyKey,
      requestDigest: w.digest,
    })),
    {
      relayers: [relayer],
      leaseOwner: rt.handOff ? rt.instanceId : null,
      guard: {
        sql: GUARD,
        params: [taking, relayer.id, ...CHECKED.map((f) => checkParam(f, relayer[f]))],
      },
    },
  );
  if (rows.length === batch.length) return rows;
  const [now] = await rt.db.read<Pick<Relayer, CheckedField> & { nextNonce: bigint | null }>(RELAYER_NOW, [relayer.id]);
  const noNonce = now && sameChecks(relayer, now) && now.nextNonce === null;
  return batch.map((w) => (noNonce && w.accepted.takesNonce ? 'no-nonce' : 'stale'));
}
