import { randomUUID } from 'node:crypto';
import type { Relayer, Transaction } from '../../generated/prisma/client.js';
import type { Runtime } from '../../runtime.js';
import { emitTransactionUpdates } from '../notifications/events.js';
import { insertTransactions } from './sql.js';
import type { NetworkType } from '../relayers/policies.js';
import type { Accepted } from './family.js';

export interface Intake {
  relayer: Relayer;
  type: NetworkType;
  accepted: Accepted;
  idempotencyKey: string | null;
  digest: string;
}

interface Waiting extends Intake {
  resolve(tx: Transaction | null): void;
  reject(e: unknown): void;
}

const MAX_BATCH = 500;

/**
 * Group commit of accepted transactions: requests for one relayer that arrive while its previous
 * insert is running are written together, in one database transaction that allocates their nonces
 * with a single `next_nonce = next_nonce + k` (the relayer's row is locked once per batch, not once
 * per request). Each row still gets exactly one nonce, in arrival order, in the transaction that
 * writes it. Resolves null when the relayer's nonce is not initialised yet.
 */
export function insertAccepted(rt: Runtime, item: Intake): Promise<Transaction | null> {
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
  items: Waiting[];
  running: boolean;
}
const queues = new WeakMap<Runtime, Map<string, Queue>>();

function queueOf(rt: Runtime, relayerId: string): Queue {
  let byRelayer = queues.get(rt);
  if (!byRelayer) queues.set(rt, (byRelayer = new Map()));
  let q = byRelayer.get(relayerId);
  if (!q) byRelayer.set(relayerId, (q = { items: [], running: false }));
  return q;
}

async function drain(rt: Runtime, q: Queue) {
  while (q.items.length > 0) {
    const batch = q.items.splice(0, MAX_BATCH);
    try {
      const rows = await insertBatch(rt, batch);
      batch.forEach((w, i) => w.resolve(rows ? rows[i] : null));
    } catch (e) {
      if (batch.length === 1) {
        batch[0].reject(e);
        continue;
      }
      // One bad apple (typically a repeated Idempotency-Key) spoils a batch: write them one by one.
      for (const w of batch) {
        await insertBatch(rt, [w]).then(
          (rows) => w.resolve(rows ? rows[0] : null),
          (err) => w.reject(err),
        );
      }
    }
  }
  q.running = false;
}

async function insertBatch(rt: Runtime, batch: Waiting[]): Promise<Transaction[] | null> {
  const { relayer, type, accepted } = batch[0];
  return rt.prisma.$transaction(async (db) => {
    let first: bigint | null = null;
    if (accepted.takesNonce) {
      const k = batch.length;
      const rows = await db.$queryRaw<{ first: bigint }[]>`
        UPDATE relayers SET next_nonce = next_nonce + ${k}
        WHERE id = ${relayer.id} AND next_nonce IS NOT NULL
        RETURNING next_nonce - ${k} AS first`;
      if (rows.length === 0) return null;
      first = BigInt(rows[0].first);
    }
    const rows = await insertTransactions(
      db,
      batch.map((w, i) => ({
        to: null, data: null, gasLimit: null, gasPrice: null, maxFeePerGas: null, maxPriorityFeePerGas: null, speed: null,
        ...w.accepted.data,
        id: randomUUID(),
        relayerId: relayer.id,
        networkType: type,
        nonce: first === null ? null : first + BigInt(i),
        request: w.accepted.request,
        idempotencyKey: w.idempotencyKey,
        requestDigest: w.digest,
      })),
    );
    await emitTransactionUpdates(db, rows.map((transaction) => ({ relayer, transaction })));
    return rows;
  });
}
