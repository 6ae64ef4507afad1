// kill -9 at every crash point of the Solana pipeline, then a restart: every accepted transaction
// ends confirmed, and each payload executed on the chain (LiteSVM behind the stand-in) exactly once.
import type { Address } from '@solana/kit';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSolanaTx } from '../../src/chains/solana/transaction.js';
import { createLocalSigner } from '../../src/signers/index.js';
import { faultEnv, startArmed } from '../support/crash.js';
import { startInstance, type Instance } from '../support/instance.js';
import { startSolanaRpc, type SolanaRpcStub } from '../support/solana-rpc.js';
import { buildTx, COMPUTE_BUDGET, NO_BLOCKHASH, setComputeUnitLimit, SOL } from '../chains/solana/support.js';
import { keystores, localSigner } from '../chains/stellar/support.js';

const RELAYER = 'solana-relayer';
const SEND_PATH = `/api/v1/relayers/${RELAYER}/transactions`;
const FEE = 5_000n;
// Blockhashes expire only when the test moves the chain past them (stub.advance).
const LIFETIME = 3_000;
const FINAL = ['confirmed', 'failed', 'expired', 'canceled'];

/** The compute-unit limit a wire transaction sets: each test transaction's unique payload. */
function unitsOf(wire: string): number | null {
  const { message } = decodeSolanaTx(wire);
  for (const ix of message.instructions) {
    if (message.staticAccounts[ix.programAddressIndex] !== COMPUTE_BUDGET || !ix.data || ix.data[0] !== 2) continue;
    return new DataView(ix.data.buffer, ix.data.byteOffset).getUint32(1, true);
  }
  return null;
}

async function allRows(instance: Instance): Promise<any[]> {
  const res = await instance.request('GET', `${SEND_PATH}?per_page=100`);
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data;
}

async function untilAllFinal(instance: Instance, ms = 60_000): Promise<any[]> {
  const until = Date.now() + ms;
  for (;;) {
    const rows = await allRows(instance);
    if (rows.length > 0 && rows.every((r) => FINAL.includes(r.status))) return rows;
    if (Date.now() > until)
      throw new Error(
        `not all final: ${JSON.stringify(rows.filter((r) => !FINAL.includes(r.status)).map((r) => [r.status, r.status_reason]))}\n${instance.output().slice(-3000)}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

const POINTS: { point: string; resign: boolean; takeover?: boolean }[] = [
  { point: 'solana.send.signed', resign: false },
  { point: 'solana.send.saved', resign: false },
  { point: 'solana.send.broadcast', resign: false },
  { point: 'solana.resign.signed', resign: true },
  { point: 'solana.resign.saved', resign: true },
  { point: 'solana.resign.broadcast', resign: true },
  // Taken over by another instance once the dead one's leases run out (PostgreSQL: several instances share it).
  { point: 'solana.resign.broadcast', resign: true, takeover: true },
];

/**
 * The suite on one database. It runs from two files, one per database (solana-pglite.test.ts and
 * solana-postgres.test.ts), so that the two halves, each minutes long, run in parallel workers.
 */
export function solanaCrashPoints(db: 'pglite' | 'postgres', run = true): void {
  describe.runIf(run)(`solana: kill -9 at each crash point, then restart (${db})`, () => {
    const cleanup: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      while (cleanup.length) await cleanup.pop()!().catch(() => {});
    });

    it.each(POINTS.filter((p) => !p.takeover || db === 'postgres').map((p) => ({ ...p, name: p.takeover ? `${p.point}+takeover` : p.point })))(
      '$name: every accepted transaction confirmed, each payload executed once',
      async ({ point, takeover, resign }) => {
        const keys = await keystores();
        cleanup.push(() => keys.remove());
        const key = await keys.create('solana');
        const relayer = createLocalSigner(key.seed, 'solana').address as Address;
        const stub: SolanaRpcStub = await startSolanaRpc({
          airdrops: [{ address: relayer, lamports: 10n * SOL }],
          slotMs: 100,
          blockhashLifetime: LIFETIME,
          finalizedAfter: 3,
        });
        cleanup.push(() => stub.stop());
        const env = await faultEnv(
          db,
          {
            relayers: [
              { id: RELAYER, name: 'Solana relayer', network: 'solana-local', network_type: 'solana', paused: false, signer_id: 'solana-key', policies: {} },
            ],
            signers: [localSigner('solana-key', key.file)],
            notifications: [],
            networks: [{ type: 'solana', network: 'solana-local', rpc_urls: [stub.url], average_blocktime_ms: 100, is_testnet: true }],
          },
          'faults-solana',
          cleanup,
        );
        const balanceBefore = stub.svm.getBalance(relayer) ?? 0n;

        const armed = await startArmed(env, point);
        cleanup.push(() => armed.kill());
        // The re-signing paths need blockhashes that expire with nothing landed: nodes drop the first sends.
        stub.dropSends = resign;
        const accepted = new Map<string, number>();
        const sends = Array.from({ length: 6 }, async (_, i) => {
          const units = 100_000 + i;
          try {
            const res = await armed.request('POST', SEND_PATH, { transaction: await buildTx(relayer, [setComputeUnitLimit(units)], NO_BLOCKHASH) });
            if (res.status === 200) accepted.set(((await res.json()) as any).data.id, units);
          } catch {
            // The process died before answering: not known to the client, so not counted as accepted.
          }
        });
        if (resign) {
          await Promise.all(sends);
          // Every one sent and dropped; then their blockhashes expire and nodes forward again.
          const until = Date.now() + 30_000;
          while (stub.calls.filter((c) => c === 'sendTransaction').length < accepted.size && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
          stub.dropSends = false;
          stub.advance(LIFETIME + 10);
        }
        await armed.crashed;
        await Promise.all(sends);
        expect(accepted.size).toBeGreaterThan(0);
        // While the service is down every blockhash it signed with expires: the restart has to find
        // out on chain what landed before it signs anything again.
        stub.advance(LIFETIME + 10);

        const instance = await startInstance(takeover ? { ...env, INSTANCE_ID: 'faults-other' } : env);
        cleanup.push(() => instance.stop());
        const rows = await untilAllFinal(instance, 90_000);

        for (const [id, units] of accepted)
          expect(
            rows.find((r) => r.id === id),
            `${id} (${units})`,
          ).toMatchObject({ status: 'confirmed', sent_at: expect.any(String) });
        expect(rows.map((r) => [r.status, r.status_reason])).toEqual(rows.map(() => ['confirmed', null]));
        // On chain: each row's signature executed, carrying that row's payload, and no payload executed twice.
        const executed = stub.executed.map((e) => ({ signature: e.signature, units: unitsOf(e.wire) }));
        expect(executed.map((e) => e.units).sort()).toEqual([...new Set(executed.map((e) => e.units))].sort());
        expect(executed).toHaveLength(rows.length);
        for (const r of rows) expect(executed.find((e) => e.signature === r.hash)).toBeDefined();
        for (const [id, units] of accepted) expect(executed.find((e) => e.signature === rows.find((r) => r.id === id).hash)?.units).toBe(units);
        // The relayer paid one fee per transaction, no more.
        expect(stub.svm.getBalance(relayer)).toBe(balanceBefore - FEE * BigInt(rows.length));
      },
      150_000,
    );
  });
}
