import { describe, expect, it } from 'vitest';
import type { Hex } from 'viem';
import {
  actionOf,
  attribute,
  expireIfDue,
  heldAtIntake,
  heldByWindow,
  movedTo,
  newWork,
  onBroadcast,
  onReceipt,
  patchOf,
  planFees,
  reasonOf,
  recordSigning,
  resumeSigned,
  minedWithinMs,
  searchDue,
  sendWindow,
  type Work,
} from '../../../src/chains/evm/decide.js';
import { replacementFees } from '../../../src/chains/evm/pricing.js';
import type { EvmContext } from '../../../src/chains/evm/context.js';
import { readState, type Broadcast } from '../../../src/chains/evm/state.js';
import { evmSteps } from '../../../src/chains/evm/steps.js';
import type { Transaction } from '../../../src/generated/prisma/client.js';
import { createState } from '../../../src/core/state.js';
import { heldDueMs } from '../../../src/core/transactions/held.js';
import { ExpiringMap } from '../../../src/lib/expiring.js';

const pace = { blocktimeMs: 1_000, requiredConfirmations: 1 };
const h = (n: number) => `0x${n.toString(16).padStart(64, '0')}` as Hex;
const gwei = (n: number) => BigInt(n) * 1_000_000_000n;

function row(over: Partial<Transaction> = {}): Transaction {
  return {
    id: 'tx-1',
    relayerId: 'r',
    networkType: 'evm',
    status: 'pending',
    statusReason: null,
    nonce: 5n,
    from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    to: '0x000000000000000000000000000000000000dEaD',
    value: '1',
    data: null,
    gasLimit: 21_000n,
    gasPrice: null,
    maxFeePerGas: null,
    maxPriorityFeePerGas: null,
    speed: 'fast',
    hash: null,
    hashes: [],
    signature: null,
    sentAt: null,
    confirmedAt: null,
    validUntil: new Date(Date.now() + 3600_000),
    attempts: 0,
    chainState: null,
    updatedAt: new Date(),
    createdAt: new Date(),
    leaseOwner: 'me',
    leaseUntil: new Date(Date.now() + 30_000),
    dueAt: new Date(),
    ...over,
  } as Transaction;
}

const broadcast = (n: number, over: Partial<Broadcast> = {}): Broadcast => ({
  hash: h(n),
  kind: 'payload',
  version: 0,
  nonce: '5',
  gasLimit: '21000',
  fees: { maxFeePerGas: gwei(10).toString(), maxPriorityFeePerGas: gwei(1).toString() },
  signedAt: new Date().toISOString(),
  ...over,
});

/** A transaction at nonce 5 with these signings, broadcast and waiting to be mined. */
function inFlight(broadcasts: Broadcast[], over: Partial<Transaction> = {}): Work {
  const tx = row({ status: 'submitted', sentAt: new Date(), ...over });
  const w = newWork(tx, readState({ chainState: { goal: 'payload', phase: 'broadcast', broadcasts, version: 0, payloadOut: true, raw: '0x02' } as never }));
  return w;
}

describe('nonce attribution: by evidence, never by absence', () => {
  it('a receipt missing moments after the nonce passed is read again before what took the nonce is searched for: half a block', () => {
    expect(searchDue(pace, 10_000, 10_000)).toBe(false);
    expect(searchDue(pace, 10_000, 10_499)).toBe(false);
    expect(searchDue(pace, 10_000, 10_500)).toBe(true);
    // A quarter block a look, at most 3 s: a 12 s chain searches after 6 s.
    expect(searchDue({ blocktimeMs: 12_000 }, 0, 5_999)).toBe(false);
    expect(searchDue({ blocktimeMs: 12_000 }, 0, 6_000)).toBe(true);
  });

  it('a mined transaction that is any signing of this one (an older fee bump, an earlier nonce) is ours: nothing moves', () => {
    const w = inFlight([broadcast(1, { nonce: '3' }), broadcast(2), broadcast(3)]);
    expect(attribute(pace, w, h(1), new Date())).toBe('ours');
    expect(attribute(pace, w, h(2), new Date())).toBe('ours');
    expect(w.patch.nonce).toBeUndefined();
    expect(w.st.phase).toBe('broadcast');
  });

  it('hash comparison ignores letter case', () => {
    const w = inFlight([broadcast(0xabc)]);
    expect(attribute(pace, w, h(0xabc).toUpperCase().replace('0X', '0x') as Hex, new Date())).toBe('ours');
  });

  it('proven to be another transaction: the payload moves to a new nonce and is signed afresh there', () => {
    const w = inFlight([broadcast(2)]);
    expect(attribute(pace, w, h(99), new Date())).toBe('move');
    movedTo(w, 5n, 9n, h(99));
    expect(w.patch.nonce).toBe(9n);
    expect(w.st.phase).toBe('new');
    expect(w.st.raw).toBeUndefined();
    expect(reasonOf(w)).toContain('sent again at nonce 9');
    expect(reasonOf(w)).toContain(h(99));
  });

  it('no proof of whose transaction used the nonce: nothing is sent again, the nonce is kept and the reason says so', () => {
    const w = inFlight([broadcast(2)]);
    expect(attribute(pace, w, null, new Date('2026-01-01T00:00:00Z'))).toBe('hold');
    expect(w.patch.nonce).toBeUndefined();
    expect(w.st.phase).toBe('broadcast');
    expect(w.st.unattributed).toBe('2026-01-01T00:00:00.000Z');
    expect(w.dueInMs).toBe(30_000);
    expect(reasonOf(w)).toMatch(/nonce 5 was used on chain.*not sent again/);
    // Proof arriving later clears the hold.
    expect(attribute(pace, w, h(2), new Date())).toBe('ours');
  });

  it('a NOOP (cancel, expiry) whose nonce another transaction took is done: the nonce is consumed either way', () => {
    const w = inFlight([broadcast(2)]);
    w.st.goal = 'noop';
    w.st.outcome = { status: 'canceled', reason: 'canceled: replaced by a 0-value self-transfer' };
    expect(attribute(pace, w, h(77), new Date())).toBe('consumed');
    expect(w.status).toBe('canceled');
    expect(w.st.phase).toBe('done');
  });
});

/** Records a legacy-priced signing of 21,000 gas as `hash`, at `gasPrice` gwei, on 1 January 2026. */
function sign(w: Work, hash: Hex, gasPrice: number) {
  recordSigning(w, {
    raw: '0x02',
    hash,
    gasLimit: 21_000n,
    fees: { gasPrice: gwei(gasPrice) },
    feesJson: { gasPrice: gwei(gasPrice).toString() },
    now: new Date('2026-01-01T00:00:00Z'),
  });
}

describe('broadcast answers', () => {
  const signed = () => {
    const w = newWork(row(), readState({ chainState: null }));
    sign(w, h(7), 2);
    return w;
  };

  it('signing makes it sent, with sent_at in the same write', () => {
    const w = signed();
    expect(w.status).toBe('sent');
    expect(w.patch.sentAt).toEqual(new Date('2026-01-01T00:00:00Z'));
    expect(w.patch.hashes).toEqual([h(7)]);
    expect(w.st.phase).toBe('signed');
  });

  it('a definitive refusal of a payload no node can have fails it and sends a NOOP for its nonce', () => {
    const w = signed();
    onBroadcast(pace, w, 'invalid', new Error('intrinsic gas too low'), new Date());
    expect(w.status).toBe('failed');
    expect(w.st.goal).toBe('noop');
  });

  it('an answer that never came counts as possibly sent: a later refusal does not fail it', () => {
    const w = signed();
    onBroadcast(pace, w, 'unreachable', new Error('socket hang up'), new Date());
    expect(w.st.payloadOut).toBe(true);
    onBroadcast(pace, w, 'invalid', new Error('something odd'), new Date());
    expect(w.status).toBe('sent');
    expect(w.st.goal).toBe('payload');
  });

  it('a row saved signed by a step whose end nobody recorded (a crash) counts as possibly sent', () => {
    const w = signed();
    const resumed = newWork(row({ status: 'sent', chainState: w.st as never }), readState({ chainState: JSON.parse(JSON.stringify(w.st)) }));
    resumeSigned(resumed);
    expect(resumed.st.payloadOut).toBe(true);
  });

  it('accepted: submitted, resubmission clock started', () => {
    const w = signed();
    expect(onBroadcast(pace, w, 'ok', undefined, new Date())).toBe(false);
    expect(w.status).toBe('submitted');
    expect(w.via).toEqual(['sent']);
    expect(w.dueInMs).toBe(3_000);
  });
});

describe('the state a step writes', () => {
  it('never changes the row it was read from, nor a patch already taken, and leaves out what is unset', () => {
    const w = inFlight([broadcast(1)]);
    const stored = JSON.stringify(w.tx.chainState);
    onBroadcast(pace, w, 'ok', undefined, new Date());
    const first = patchOf(w);
    const written = JSON.stringify(first.chainState);
    sign(w, h(2), 3);
    expect(w.st.broadcasts.map((b) => b.hash)).toEqual([h(1), h(2)]);
    expect(JSON.stringify(w.tx.chainState)).toBe(stored);
    expect(JSON.stringify(first.chainState)).toBe(written);
    const second = patchOf(w).chainState as Record<string, unknown>;
    expect((second.broadcasts as Broadcast[]).map((b) => b.hash)).toEqual([h(1), h(2)]);
    expect(Object.values(second)).not.toContain(undefined);
  });
});

describe('fees of the next signing', () => {
  const ctx = { policy: {} } as EvmContext;
  const bump = (p: any, f: any) => replacementFees(ctx, p, f);

  it('a first signing takes the fresh price', () => {
    const w = newWork(row(), readState({ chainState: null }));
    expect(planFees(w, undefined, { gasPrice: gwei(3) }, bump)).toEqual({ gasPrice: gwei(3) });
  });

  it('a resubmission bids at least 10% more than the last signing at the nonce', () => {
    const w = inFlight([broadcast(1)]);
    const fees = planFees(
      w,
      { kind: 'payload', version: 0, fees: { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) } },
      { maxFeePerGas: gwei(5), maxPriorityFeePerGas: gwei(1) },
      bump,
    );
    expect(fees).not.toBe('resend');
    expect((fees as any).maxFeePerGas).toBeGreaterThanOrEqual(gwei(11));
    expect((fees as any).maxPriorityFeePerGas).toBeGreaterThanOrEqual(1_100_000_000n);
  });

  it('in line behind a lower nonce and still paying the market price: the same bytes go out again', () => {
    const w = inFlight([broadcast(1)]);
    w.behind = true;
    expect(
      planFees(
        w,
        { kind: 'payload', version: 0, fees: { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) } },
        { maxFeePerGas: gwei(5), maxPriorityFeePerGas: gwei(1) },
        bump,
      ),
    ).toBe('resend');
  });

  it("at the relayer's gas_price_cap: the same bytes again, and the reason says why", () => {
    const capped = { policy: { gas_price_cap: gwei(10) } } as EvmContext;
    const w = inFlight([broadcast(1)]);
    const fees = planFees(
      w,
      { kind: 'payload', version: 0, fees: { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) } },
      { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) },
      (p, f) => replacementFees(capped, p, f),
    );
    // The tip can still rise under the cap, so it is a new bid; once both are at the cap it is a resend.
    const atCap = planFees(
      w,
      { kind: 'payload', version: 0, fees: { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(10) } },
      { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) },
      (p, f) => replacementFees(capped, p, f),
    );
    expect(fees).not.toBe('resend');
    expect(atCap).toBe('resend');
    expect(reasonOf(w)).toContain('gas_price_cap');
  });

  it('at what the balance covers: the same bytes again, never a bid the node would refuse for want of funds', () => {
    const uncapped = { policy: {} } as EvmContext;
    const prev = { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(10) };
    const w = inFlight([broadcast(1)]);
    // Room for 5% more: the bump stops there; no room at all: the bid before goes out again.
    expect(replacementFees(uncapped, prev, prev, 10_500_000_000n)).toMatchObject({ maxFeePerGas: 10_500_000_000n, capped: true });
    expect(planFees(w, { kind: 'payload', version: 0, fees: prev }, prev, (p, f) => replacementFees(uncapped, p, f, gwei(9)))).toBe('resend');
    expect(reasonOf(w)).toContain('balance');
  });
});

describe('expiry', () => {
  it('unsigned when valid_until passes: expired at once, a NOOP takes the nonce', () => {
    const w = newWork(row({ validUntil: new Date(1_000) }), readState({ chainState: null }));
    expireIfDue(w, 2_000);
    expect(w.status).toBe('expired');
    expect(w.st.goal).toBe('noop');
  });

  it('signed when valid_until passes: replaced by a NOOP, expired only once that is mined', () => {
    const w = inFlight([broadcast(1)], { validUntil: new Date(1_000) });
    expireIfDue(w, 2_000);
    expect(w.status).toBe('submitted');
    expect(w.st.goal).toBe('noop');
    expect(w.st.outcome?.status).toBe('expired');
  });
});

describe('receipts', () => {
  const receipt = (hash: Hex, block: number, status = '0x1') => ({
    transactionHash: hash,
    blockNumber: `0x${block.toString(16)}` as Hex,
    blockHash: h(1000 + block),
    status: status as Hex,
    gasUsed: '0x5208' as Hex,
  });

  it('mined deep enough: confirmed through mined', () => {
    const w = inFlight([broadcast(1), broadcast(2)]);
    expect(onReceipt(pace, w, w.st.broadcasts[0], receipt(h(1), 10), 10n)).toBe('mined');
    expect(w.status).toBe('confirmed');
    expect(w.via).toEqual(['mined']);
    expect(w.patch.hash).toBe(h(1));
  });

  it('the NOOP of a cancel mined: canceled', () => {
    const w = inFlight([broadcast(1), broadcast(2, { kind: 'noop', version: undefined })]);
    w.st.goal = 'noop';
    w.st.outcome = { status: 'canceled', reason: 'canceled: replaced by a 0-value self-transfer' };
    expect(onReceipt(pace, w, w.st.broadcasts[1], receipt(h(2), 10), 10n)).toBe('noop');
    expect(w.status).toBe('canceled');
  });

  it('a signing at an earlier nonce of the transaction is where it was mined', () => {
    const w = inFlight([broadcast(1, { nonce: '3' }), broadcast(2)]);
    onReceipt(pace, w, w.st.broadcasts[0], receipt(h(1), 10), 10n);
    expect(w.patch.nonce).toBe(3n);
    expect(w.status).toBe('confirmed');
  });

  it('a revert: failed', () => {
    const w = inFlight([broadcast(1)]);
    expect(onReceipt(pace, w, w.st.broadcasts[0], receipt(h(1), 10, '0x0'), 10n)).toBe('reverted');
    expect(w.status).toBe('failed');
  });
});

describe('crash point names', () => {
  it('name each signing path', () => {
    const w = inFlight([broadcast(1), broadcast(2), broadcast(3, { version: 1 }), broadcast(4, { kind: 'noop', version: undefined })]);
    expect(actionOf(w, w.st.broadcasts[0])).toBe('send');
    expect(actionOf(w, w.st.broadcasts[1])).toBe('resubmit');
    expect(actionOf(w, w.st.broadcasts[2])).toBe('replace');
    expect(actionOf(w, w.st.broadcasts[3])).toBe('cancel');
    w.st.outcome = { status: 'expired', reason: 'x' };
    expect(actionOf(w, w.st.broadcasts[3])).toBe('expire');
  });
});

describe('a step after the node took its broadcasts', () => {
  const signed = (i: number) =>
    row({
      id: `tx-${i}`,
      nonce: BigInt(i),
      status: 'sent',
      chainState: {
        goal: 'payload',
        phase: 'signed',
        raw: '0x02',
        version: 0,
        broadcasts: [
          {
            hash: h(i),
            kind: 'payload',
            version: 0,
            nonce: String(i),
            gasLimit: '21000',
            fees: { maxFeePerGas: '2', maxPriorityFeePerGas: '1' },
            signedAt: new Date().toISOString(),
          },
        ],
      },
    });
  /** The effects of the first row once the node answered `ok` to the step's broadcasts. */
  function afterOk(rows: number, blocktimeMs: number) {
    const seen = { pace: { blocktimeMs, requiredConfirmations: 1 }, latest: 0n, lineSince: Date.now(), head: 0n, answers: new Map() };
    const [d] = evmSteps.decide(
      Array.from({ length: rows }, (_, i) => signed(i)),
      seen,
      new Date(),
    );
    expect(d.effects.map((e) => e.stage)).toEqual(['send']);
    return evmSteps.record(d, [{ verdict: 'ok' }], new Date()).effects;
  }

  it('waits for them to be mined when it has 32 rows or more on a chain with blocks at most 2 s apart, else ends', () => {
    expect(afterOk(32, 1_000)).toEqual([{ stage: 'read', resolve: true, waits: true }]);
    expect(afterOk(31, 1_000)).toEqual([]);
    expect(afterOk(32, 12_000)).toEqual([]);
  });

  it('waits as long as full blocks of the send window take to mine its last broadcast, and half a block more', () => {
    // A window of 3 blocks of 100: the last broadcast 1, 150 and 300 ahead of the mined nonce; 5,000 ahead is still 3 blocks.
    expect([100n, 249n, 399n, 5_099n].map((upTo) => minedWithinMs(pace, 100n, upTo, 300))).toEqual([1_500, 2_500, 3_500, 3_500]);
    // No window known: a block and a half.
    expect(minedWithinMs(pace, 100n, 399n, undefined)).toBe(1_500);
  });
});

describe('the send window', () => {
  const fresh = (nonce: number) => row({ id: `tx-${nonce}`, nonce: BigInt(nonce) });
  const decide = (rows: Transaction[], window: number | undefined, latest = 100n) =>
    evmSteps.decide(rows, { pace, latest, lineSince: Date.now(), window, head: 0n, answers: new Map() }, new Date());

  it('is three blocks of transfers, at least 16', () => {
    expect(sendWindow(30_000_000n, 21_000n)).toBe(3 * 1428);
    expect(sendWindow(105_000n, 21_000n)).toBe(16);
  });

  it('signs what is within it; a row as far ahead as the window waits, unchanged, due about when full blocks let it in', () => {
    const ds = decide([fresh(100), fresh(139), fresh(140), fresh(153), fresh(167)], 40);
    expect(ds.map((d) => d.effects.map((e) => e.stage))).toEqual([['sign'], ['sign'], [], [], []]);
    // Nothing written for a held row: its lease is only given back, with its due time.
    expect(ds.slice(2).map((d) => d.patch)).toEqual([{}, {}, {}]);
    // 40 over 3 blocks: about 13 a block. Nonce 140 is let in by the next block, 153 by the one after, 167 by the third;
    // each is due a block after that.
    expect(ds.slice(2).map((d) => d.nextInMs)).toEqual([2_000, 3_000, 4_000]);
  });

  it('holds at intake the rows a block beyond it or more, each due when a step would have made it due', () => {
    const window = 40; // 13 a block
    const held = heldAtIntake(pace, 100n, window);
    expect(held).toEqual({ from: 153n, per: 13, firstMs: 3_000, everyMs: 1_000 });
    for (const nonce of [153, 154, 165, 166, 200, 1_000]) {
      const w = newWork(fresh(nonce), readState({ chainState: null }));
      expect(heldByWindow(pace, w, 100n, window)).toBe(true);
      expect(heldDueMs(held, BigInt(nonce))).toBe(w.dueInMs);
    }
  });

  it('is read from the latest block only for a step with a row 16 or more ahead; none when the block cannot be read', async () => {
    const calls: string[] = [];
    let block: () => unknown = () => ({ gasLimit: '0x1c9c380' }); // 30,000,000
    const client = () => {
      const kept = new ExpiringMap<string, Promise<unknown>>(60_000);
      const request = async (method: string) => {
        calls.push(method);
        return method === 'eth_getTransactionCount' ? '0x64' : block(); // mined nonce 100
      };
      return {
        request,
        gather: (asked: { method: string }[]) => Promise.all(asked.map(async ({ method }) => ({ ok: true, result: await request(method) }))),
        memo: (key: string, _ttlMs: number, load: () => Promise<unknown>) => kept.load(key, load),
      };
    };
    const c = { rt: { state: createState() }, relayer: { id: 'w1' }, evm: { rpc: client(), relayer: { address: '0x1' } }, log: { debug() {} } };
    const observe = (nonce: number) => evmSteps.observe(c as never, [row({ nonce: BigInt(nonce) })]);
    expect((await observe(115)).window).toBeUndefined();
    expect(calls).toEqual(['eth_getTransactionCount']);
    expect((await observe(116)).window).toBe(3 * 1428);
    block = () => {
      throw new Error('no such block');
    };
    c.evm.rpc = client(); // another node (the limit is kept per client)
    expect((await observe(116)).window).toBeUndefined();
  });

  it('holds nothing without a window, nor a row signed before (moved to a new nonce, or signed again)', () => {
    expect(decide([fresh(1_000)], undefined)[0].effects).toEqual([{ stage: 'sign' }]);
    const moved = row({
      nonce: 1_000n,
      chainState: {
        goal: 'payload',
        phase: 'new',
        version: 0,
        broadcasts: [{ hash: h(1), kind: 'payload', version: 0, nonce: '7', gasLimit: '21000', fees: { gasPrice: '1' }, signedAt: new Date().toISOString() }],
      },
    });
    expect(decide([moved], 40)[0].effects).toEqual([{ stage: 'sign' }]);
  });
});
