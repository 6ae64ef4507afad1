import { Prisma, type Relayer } from '../../generated/prisma/client.js';
import { startLoop } from '../../lib/loop.js';
import type { Runtime } from '../runtime.js';
import { emitRelayerState, writeWithEvents } from '../notifications/events.js';
import type { NetworkType } from '../family-list.js';
import { RelayerCheckError } from '../domain-error.js';
import { signerFor } from '../signers.js';

export { RelayerCheckError };

const BACKOFF_BASE_MS = 2_000;
const BACKOFF_MAX_MS = 5 * 60_000;
/** While a check runs, its relayer is not due again for this long (another instance skips it). */
const CHECK_LEASE_MS = 60_000;

export const checkBackoffMs = (attempts: number) => Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1));

/**
 * Runs the family's check of one relayer and records the verdict: a failure disables the relayer
 * (system_disabled, disabled_reason) and schedules a re-check with backoff; a success re-enables
 * it. A change of state queues the relayer_state_update event in the same database transaction.
 */
export async function checkRelayer(rt: Runtime, relayer: Relayer): Promise<Relayer> {
  const family = rt.families.pipeline(relayer.networkType as NetworkType);
  let failure: { type: string; details: string } | null = null;
  try {
    relayer = await withSigner(rt, relayer);
    await family?.checkRelayer?.(rt, relayer);
  } catch (e) {
    failure = e instanceof RelayerCheckError ? { type: e.type, details: e.details } : { type: 'CheckFailed', details: (e as Error).message };
  }
  return writeWithEvents(rt, async (out) => {
    const current = await out.db.relayer.findUnique({ where: { id: relayer.id } });
    if (!current) return relayer;
    let data: Prisma.RelayerUpdateInput;
    if (failure) {
      const attempts = current.checkAttempts + 1;
      data = { systemDisabled: true, disabledReason: failure, checkAttempts: attempts, checkAt: new Date(Date.now() + checkBackoffMs(attempts)) };
    } else {
      data = { systemDisabled: false, disabledReason: Prisma.DbNull, checkAttempts: 0, checkAt: null };
    }
    const updated = await out.db.relayer.update({ where: { id: relayer.id }, data });
    const before = current.systemDisabled ? JSON.stringify(current.disabledReason) : null;
    const after = updated.systemDisabled ? JSON.stringify(updated.disabledReason) : null;
    if (before !== after) await emitRelayerState(out, updated);
    if (failure && before !== after) rt.log.warn({ relayerId: relayer.id, reason: failure }, 'relayer disabled');
    if (failure && !current.systemDisabled) rt.metrics.relayersDisabled.inc({ relayer_id: relayer.id });
    if (!failure && before) rt.log.info({ relayerId: relayer.id }, 'relayer enabled again');
    return updated;
  });
}

/**
 * Loads the relayer's signer if it is not yet (a custody that did not answer before), and gives a
 * relayer whose address was not known then (its first start) the signer's.
 */
async function withSigner(rt: Runtime, relayer: Relayer): Promise<Relayer> {
  let signer: Awaited<ReturnType<typeof signerFor>>;
  try {
    signer = await signerFor(rt, relayer.signerId, relayer.networkType);
  } catch (e) {
    throw new RelayerCheckError('SignerUnavailable', (e as Error).message);
  }
  if (relayer.address !== '') return relayer;
  return rt.db.prisma.relayer.update({ where: { id: relayer.id }, data: { address: signer.address, nextNonce: null } });
}

/**
 * Checks every relayer at start-up, then re-checks disabled ones when their backoff is over.
 * A relayer is claimed by moving its check_at forward, so two instances do not check it at once.
 */
export function startRelayerChecks(rt: Runtime) {
  let started = false;
  return startLoop(
    async () => {
      if (!started) {
        await rt.db.prisma.relayer.updateMany({ data: { checkAt: new Date() } });
        started = true;
      }
      const due = await rt.db.prisma.$queryRaw<{ id: string }[]>`
        UPDATE relayers SET check_at = ${new Date(Date.now() + CHECK_LEASE_MS)}
        WHERE id IN (SELECT id FROM relayers WHERE check_at <= ${new Date()} ORDER BY check_at LIMIT 16 FOR UPDATE SKIP LOCKED)
        RETURNING id`;
      if (due.length === 0) return false;
      const relayers = await rt.db.prisma.relayer.findMany({ where: { id: { in: due.map((d) => d.id) } } });
      await Promise.all(relayers.map((r) => checkRelayer(rt, r).catch((err) => rt.log.error({ err, relayerId: r.id }, 'relayer check failed to run'))));
      return due.length === 16;
    },
    { idleMs: 1_000, onError: (err) => rt.log.error({ err }, 'relayer check loop error') },
  );
}
