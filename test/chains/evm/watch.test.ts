import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { EvmContext } from '../../../src/chains/evm/context.js';
import { lineLevel, placeInLine, untilMined, watchMined } from '../../../src/chains/evm/watch.js';
import type { Runtime } from '../../../src/core/runtime.js';
import { line } from '../../../src/lib/line.js';
import { createState } from '../../../src/core/state.js';
import { openDatabase } from '../../../src/db/client.js';
import type { Transaction } from '../../../src/generated/prisma/client.js';

/** A runtime with no worker and a chain whose mined nonce is `chain.latest`. */
function setup() {
  const chain = { latest: 0n };
  const rt = { state: createState(), log: { debug() {} }, work: line() } as unknown as Runtime;
  const ctx = {
    relayer: { id: 'r1', address: '0x0000000000000000000000000000000000000001' },
    blocktimeMs: 500, // the watch reads every 50 ms
    rpc: { gather: async () => [{ ok: true, result: `0x${chain.latest.toString(16)}` }] },
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

const ADDRESS = '0x0000000000000000000000000000000000000001';
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Relayer r1's rows on a fresh database, each due in `dueInMs`: signed ones (submitted, with a
 * hash) unless `unsigned` has their nonce, those in `leased` held by a step. The watch's runtime
 * hands what it claims to `handed`; the chain's mined nonce is `chain.latest`.
 */
async function rowsAt(nonces: bigint[], opts: { unsigned?: bigint[]; leased: bigint[]; dueInMs: number }) {
  const db = await openDatabase({ inMemory: true });
  await db.prisma.relayer.create({ data: { id: 'r1', name: 'r1', network: 'localnet', networkType: 'evm', signerId: 's', address: ADDRESS, policies: {} } });
  const ids = new Map<bigint, string>();
  for (const nonce of nonces) {
    const id = randomUUID();
    ids.set(nonce, id);
    const unsigned = opts.unsigned?.includes(nonce);
    await db.prisma.transaction.create({
      data: {
        id,
        relayerId: 'r1',
        networkType: 'evm',
        from: ADDRESS,
        value: '1',
        nonce,
        status: unsigned ? 'pending' : 'submitted',
        hash: unsigned ? null : `0x${nonce.toString(16).padStart(64, '0')}`,
        request: {},
        requestDigest: 'd',
        validUntil: new Date(Date.now() + 3_600_000),
        dueAt: new Date(Date.now() + opts.dueInMs),
        ...(opts.leased.includes(nonce) ? { leaseOwner: 'step', leaseUntil: new Date(Date.now() + 60_000) } : {}),
      },
    });
  }
  const handed: bigint[] = [];
  const chain = { latest: 0n };
  const rt = {
    db,
    instanceId: 'w',
    state: createState(),
    log: { debug() {} },
    work: { to: { handOff: (rows: Transaction[]) => handed.push(...rows.map((r) => r.nonce!)) } },
  } as unknown as Runtime;
  const ctx = {
    relayer: { id: 'r1', address: ADDRESS },
    blocktimeMs: 500,
    rpc: { gather: async () => [{ ok: true, result: `0x${chain.latest.toString(16)}` }] },
  } as unknown as EvmContext;
  const giveBack = (ns: bigint[]) => db.prisma.transaction.updateMany({ where: { nonce: { in: ns } }, data: { leaseOwner: null, leaseUntil: null } });
  return { db, ids, handed, chain, rt, ctx, giveBack };
}

describe('rows the chain passed while a step held them', () => {
  it('are claimed when the step gives them back, not left until their resubmission time', async () => {
    // Broadcast at nonces 0 to 3, due again at their resubmission time; 2 and 3 held by a step.
    const { db, ids, handed, chain, rt, ctx, giveBack } = await rowsAt([0n, 1n, 2n, 3n], { leased: [2n, 3n], dueInMs: 3_000 });
    try {
      // The chain mines all four; the watch claims what is free.
      watchMined(rt, ctx, 9n, 0n);
      chain.latest = 4n;
      await settle(300);
      expect(handed).toEqual([0n, 1n]);

      // The step ends, giving its rows back (due in 3 s), and tells the watch what it broadcast.
      await giveBack([2n, 3n]);
      watchMined(rt, ctx, 3n, 0n, 2n);
      await settle(300);
      expect(handed).toEqual([0n, 1n, 2n, 3n]);
      const claimed = await db.prisma.transaction.findMany({ where: { id: { in: [ids.get(2n)!, ids.get(3n)!] } } });
      expect(claimed.map((t) => t.leaseOwner)).toEqual(['w', 'w']);

      // A step that read the chain past its rows decided on that: nothing is claimed for it again.
      await giveBack([2n, 3n]);
      watchMined(rt, ctx, 3n, 4n, 2n);
      await settle(300);
      expect(handed).toEqual([0n, 1n, 2n, 3n]);
      chain.latest = 10n; // past every broadcast: the watch ends
      await settle(300);
    } finally {
      await db.close();
    }
  });
});

describe('rows the send window held', () => {
  it('are claimed as the chain lets them in, rows never signed only, and those let in while a step held them when it gives them back', async () => {
    // Broadcast at nonces 0 to 3; held by the window at 10, 12 and 13, the last two still leased by
    // the step that held them; 11 is signed (a row the window does not hold).
    const { db, handed, chain, rt, ctx, giveBack } = await rowsAt([0n, 1n, 2n, 3n, 10n, 11n, 12n, 13n], {
      unsigned: [10n, 12n, 13n],
      leased: [12n, 13n],
      dueInMs: 10_000,
    });
    const claimed = () => [...handed].sort((a, b) => (a < b ? -1 : 1));
    try {
      // A window of 10: nothing from 10 up is let in while the chain's nonce is 0.
      // Broadcasts out up to nonce 9 keep the watch going.
      watchMined(rt, ctx, 9n, 0n, undefined, { size: 10, from: 10n });
      await settle(300);
      expect(handed).toEqual([]);
      // Two mined: 0 and 1 for their receipts, 10 and 11 let in, of which 11 was signed already.
      chain.latest = 2n;
      await settle(300);
      expect(claimed()).toEqual([0n, 1n, 10n]);
      // Two more: 12 and 13 are let in, but the step still holds them.
      chain.latest = 4n;
      await settle(300);
      expect(claimed()).toEqual([0n, 1n, 2n, 3n, 10n]);
      // The step gives them back and tells the watch: claimed at once.
      await giveBack([12n, 13n]);
      watchMined(rt, ctx, 9n, 2n, undefined, { size: 10, from: 12n });
      await settle(300);
      expect(claimed()).toEqual([0n, 1n, 2n, 3n, 10n, 12n, 13n]);
      chain.latest = 30n; // past every broadcast: the watch ends
      await settle(300);
    } finally {
      await db.close();
    }
  });
});

describe('a chain’s line', () => {
  it('keeps its level while it covers what the line needs, and raises it past the need when not', () => {
    const { rt, ctx } = setup();
    expect(lineLevel(rt, ctx.rpc, 100n, 400n)).toBe(400n);
    expect(lineLevel(rt, ctx.rpc, 400n, 900n)).toBe(400n);
    expect(lineLevel(rt, ctx.rpc, 401n, 900n)).toBe(900n);
  });

  it('counts a relayer’s places from where its first bid found it, and starts a newcomer level with the slowest', async () => {
    const { chain, rt, ctx } = setup();
    const other = { ...ctx, relayer: { id: 'r2', address: '0x0000000000000000000000000000000000000002' } } as unknown as EvmContext;
    // r1's step bids nonces 10 to 14 with its mined nonce at 10, and its watch starts.
    expect(placeInLine(rt, ctx, 10n, 10n)).toBe(0n);
    expect(placeInLine(rt, ctx, 10n, 14n)).toBe(4n);
    chain.latest = 10n;
    watchMined(rt, ctx, 14n, 10n);
    // Three mined: its next bid keeps counting from 10; a relayer new to the line starts three in.
    chain.latest = 13n;
    await settle(200);
    expect(placeInLine(rt, ctx, 13n, 15n)).toBe(5n);
    expect(placeInLine(rt, other, 50n, 50n)).toBe(3n);
    expect(placeInLine(rt, other, 50n, 52n)).toBe(5n);
    // All of r1’s mined, its watch ends: back with new sends, its places count afresh (from 15, not 10).
    chain.latest = 15n;
    await settle(200);
    expect(placeInLine(rt, ctx, 15n, 15n)).toBe(0n);
    chain.latest = 60n;
    await settle(200);
  });
});
