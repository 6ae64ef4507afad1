import { describe, expect, it } from 'vitest';
import type { EvmContext } from '../../../src/chains/evm/context.js';
import { untilMined } from '../../../src/chains/evm/watch.js';
import type { Runtime } from '../../../src/core/runtime.js';
import { createState } from '../../../src/core/state.js';

/** A runtime with no worker and a chain whose mined nonce is `chain.latest`. */
function setup() {
  const chain = { latest: 0n };
  const rt = { state: createState(), log: { debug() {} }, handOff: null } as unknown as Runtime;
  const ctx = {
    relayer: { id: 'r1', address: '0x0000000000000000000000000000000000000001' },
    blocktimeMs: 500, // the watch reads every 50 ms
    rpc: { request: async () => `0x${chain.latest.toString(16)}` },
  } as unknown as EvmContext;
  return { chain, rt, ctx };
}

const LONG = 60_000;
const within = (p: Promise<void>, ms: number) => Promise.race([p.then(() => 'settled'), new Promise<string>((r) => setTimeout(() => r('pending'), ms))]);

describe('waiting for the chain to mine a step’s broadcasts', () => {
  it('settles once the chain’s nonce passes the last broadcast, not before', async () => {
    const { chain, rt, ctx } = setup();
    chain.latest = 3n;
    const mined = untilMined(rt, ctx, 5n, 3n, LONG);
    chain.latest = 5n; // nonce 5 not mined yet
    expect(await within(mined, 300)).toBe('pending');
    chain.latest = 6n;
    expect(await within(mined, 1_000)).toBe('settled');
  });

  it('settles at once when the watch, kept going by a later step, has already seen it mined', async () => {
    const { chain, rt, ctx } = setup();
    chain.latest = 3n;
    const later = untilMined(rt, ctx, 9n, 3n, LONG);
    chain.latest = 7n;
    await new Promise((r) => setTimeout(r, 300)); // the watch reads 7
    // No block comes meanwhile: it is settled by what the watch saw, not by its time limit.
    expect(await within(untilMined(rt, ctx, 5n, 3n, LONG), 300)).toBe('settled');
    chain.latest = 10n;
    expect(await within(later, 1_000)).toBe('settled');
  });
});
