import { randomUUID } from 'node:crypto';
import { columnsAs } from '../../db/columns.js';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../runtime.js';
import { slot } from '../state.js';
import { writeWithEvents } from '../notifications/events.js';
import { insertTransactions } from './store.js';
import type { NetworkType } from '../relayers/policies.js';
import type { Accepted } from './family.js';

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
    q.items.push({ ...item, resolve, reject });
    if (!q.running) {
      q.running = true;
      // Let the requests that arrived in this turn of the event loop join the batch.
      setImmediate(() => void drain(rt, q));
    }
  });
}

interface Queue {
  relayerId: string;
  items: Waiting[];
  running: boolean;
}
/** The queue of each relayer with requests waiting; a queue is dropped once drained. */
const QUEUES = slot('intake queues', () => new Map<string, Queue>());

function queueOf(rt: Runtime, relayerId: string): Queue {
  const byRelayer = rt.state(QUEUES);
  let q = byRelayer.get(relayerId);
  if (!q) byRelayer.set(relayerId, (q = { relayerId, items: [], running: false }));
  return q;
}

async function drain(rt: Runtime, q: Queue) {
  while (q.items.length > 0) {
    const batch = q.items.splice(0, MAX_BATCH);
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
  rt.state(QUEUES).delete(q.relayerId);
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
const LOCK_RELAYER = `SELECT ${columnsAs(['nextNonce', ...CHECKED])} FROM relayers WHERE id = $1 FOR NO KEY UPDATE`;

const same = (a: unknown, b: unknown) => (a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : JSON.stringify(a) === JSON.stringify(b));

async function insertBatch(rt: Runtime, batch: Waiting[]): Promise<Intaken[]> {
  const relayerId = batch[0].relayer.id;
  return writeWithEvents(rt, async (db) => {
    const [row] = await db.$queryRawUnsafe<(Pick<Relayer, CheckedField> & { nextNonce: bigint | null })[]>(LOCK_RELAYER, relayerId);
    const outcomes: (Intaken | undefined)[] = batch.map((w) => {
      if (!row || CHECKED.some((f) => !same(w.relayer[f], row[f]))) return 'stale';
      return w.accepted.takesNonce && row.nextNonce === null ? 'no-nonce' : undefined;
    });
    const writing = batch.flatMap((_w, i) => (outcomes[i] === undefined ? [i] : []));
    if (writing.length > 0) {
      const taking = writing.filter((i) => batch[i].accepted.takesNonce).length;
      if (taking > 0) await db.$executeRaw`UPDATE relayers SET next_nonce = next_nonce + ${taking} WHERE id = ${relayerId}`;
      let nonce = row!.nextNonce;
      const rows = await insertTransactions(
        db,
        writing.map((i) => {
          const w = batch[i];
          return {
            to: null,
            data: null,
            gasLimit: null,
            gasPrice: null,
            maxFeePerGas: null,
            maxPriorityFeePerGas: null,
            speed: null,
            ...w.accepted.data,
            id: randomUUID(),
            relayerId,
            networkType: w.type,
            nonce: w.accepted.takesNonce ? nonce!++ : null,
            request: w.accepted.request,
            idempotencyKey: w.idempotencyKey,
            requestDigest: w.digest,
          };
        }),
        { relayers: [batch[0].relayer], leaseOwner: rt.handOff ? rt.instanceId : null },
      );
      writing.forEach((i, k) => (outcomes[i] = rows[k]));
    }
    return outcomes as Intaken[];
  });
}
