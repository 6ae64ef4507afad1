import { claimDue, release } from './db/lease.js';
import { startLoop } from './lib/loop.js';
import type { NetworkType } from './modules/relayers/policies.js';
import { familyOf } from './modules/transactions/family.js';
import type { Runtime } from './runtime.js';

const LEASE_MS = 30_000;
const BATCH = 32;

/**
 * Works every accepted transaction to a final state: claims due rows (a lease, so another instance
 * picks up the work of one that died) and lets the chain family advance each by one step.
 */
function startTransactionWorker(rt: Runtime) {
  return startLoop(
    async () => {
      const ids = await claimDue(rt.prisma, 'transactions', { owner: rt.instanceId, limit: BATCH, leaseMs: LEASE_MS, where: 'due_at IS NOT NULL' });
      await Promise.all(
        ids.map(async (id) => {
          try {
            const tx = await rt.prisma.transaction.findUnique({ where: { id } });
            const family = tx && familyOf(tx.networkType as NetworkType);
            if (tx && family) await family.process(rt, tx);
          } catch (err) {
            rt.log.error({ err, transactionId: id }, 'transaction step failed; retrying later');
            await release(rt.prisma, 'transactions', id, rt.instanceId, new Date(Date.now() + 5_000));
          }
        }),
      );
      return ids.length === BATCH;
    },
    { idleMs: 250, onError: (err) => rt.log.error({ err }, 'transaction worker error') },
  );
}

export function startWorkers(rt: Runtime) {
  const loops = [startTransactionWorker(rt)];
  rt.wake = () => loops.forEach((l) => l.wake());
  return { stop: () => Promise.all(loops.map((l) => l.stop())).then(() => undefined) };
}
