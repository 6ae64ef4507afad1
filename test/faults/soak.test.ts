import { describe, expect, it } from 'vitest';
import { DEV_ADDRESS } from '../support/service.js';
import { runSoak } from '../support/soak.js';

// The short version of bench/soak.ts: a fixed seed, so a failure here replays with
// `npx tsx bench/soak.ts --rounds 3 --seed 7 --sends 20 --concurrency 8`.
describe('exactly once under RPC chaos, mining stops and kill -9 (short soak)', () => {
  it('confirms every accepted transaction exactly once: nothing lost, nothing doubled, chain and database agree', async () => {
    const r = await runSoak({ rounds: 3, seed: 7, sends: 20, concurrency: 8, settleMs: 120_000 });
    expect(r.kills).toBe(3);
    expect(r.accepted).toBeGreaterThan(0);
    // The chaos happened: answers were lost after the node had them, and requests reached it twice.
    expect(r.faults.lose + r.faults.duplicate + r.faults.drop).toBeGreaterThan(0);
    expect({ lost: r.lost, doubled: r.doubled, problems: r.problems }).toEqual({ lost: 0, doubled: 0, problems: [] });
    expect(r.transactions).toBeGreaterThanOrEqual(r.accepted);
  }, 300_000);

  it('holds with the EVM send window holding transactions: blocks of 4 transfers, so sends run more than 16 ahead of the chain', async () => {
    const r = await runSoak({ rounds: 3, seed: 13, sends: 30, concurrency: 10, gasLimit: 4 * 23_100, settleMs: 180_000 });
    expect(r.kills).toBe(3);
    expect(r.accepted).toBeGreaterThan(16);
    expect({ lost: r.lost, doubled: r.doubled, problems: r.problems }).toEqual({ lost: 0, doubled: 0, problems: [] });
    expect(r.transactions).toBeGreaterThanOrEqual(r.accepted);
  }, 300_000);

  it('the check itself catches a payload mined twice (a copy sent from the relayer account behind its back)', async () => {
    const r = await runSoak({
      rounds: 1,
      seed: 11,
      sends: 5,
      concurrency: 5,
      mix: {},
      settleMs: 60_000,
      beforeCheck: async ({ url, receiver, rows }) => {
        const copy = rows.find((row) => row.status === 'confirmed')!;
        const call = (method: string, params: unknown[]) =>
          fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
        await call('eth_sendTransaction', [{ from: DEV_ADDRESS, to: receiver, value: `0x${BigInt(copy.value).toString(16)}` }]);
        await call('evm_mine', []);
      },
    });
    expect(r.transactions).toBeGreaterThan(0);
    expect(r.doubled).toBe(1);
    expect(r.problems.join('\n')).toMatch(/mined 2 times/);
    expect(r.problems.join('\n')).toMatch(/account nonce/);
  }, 300_000);
});
