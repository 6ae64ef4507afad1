// What consumed a Stellar sequence number, and where the transaction goes next: decided on evidence.
import { describe, expect, it } from 'vitest';
import { attributeSequence, nextSequenceMove } from '../../../src/chains/stellar/decide.js';

const OURS = ['aa'.repeat(32), 'bb'.repeat(32)];
const OTHER = 'cc'.repeat(32);

describe('attributeSequence', () => {
  it('nothing is recorded at a number the account has not reached', () => {
    expect(attributeSequence({ n: 11n, chainSequence: 10n, recorded: null, signings: OURS })).toEqual({ kind: 'unused' });
  });

  it('a used number whose transaction was not found proves nothing', () => {
    const a = attributeSequence({ n: 10n, chainSequence: 12n, recorded: null, signings: OURS });
    expect(a).toMatchObject({ kind: 'unproven' });
    expect((a as { reason: string }).reason).toMatch(
      /sequence number 10 is used on chain \(the account is at 12\), but the transaction that used it was not found/,
    );
  });

  it('is ours when the recorded transaction is any of our signings, the first or a later one, or wraps one in a fee bump', () => {
    expect(attributeSequence({ n: 10n, chainSequence: 10n, recorded: { hash: OURS[0], innerHash: OURS[0] }, signings: OURS })).toEqual({
      kind: 'ours',
      hash: OURS[0],
    });
    expect(attributeSequence({ n: 10n, chainSequence: 11n, recorded: { hash: OURS[1].toUpperCase(), innerHash: OURS[1] }, signings: OURS })).toEqual({
      kind: 'ours',
      hash: OURS[1],
    });
    expect(attributeSequence({ n: 10n, chainSequence: 11n, recorded: { hash: OTHER, innerHash: OURS[1] }, signings: OURS })).toEqual({
      kind: 'ours',
      hash: OURS[1],
    });
  });

  it('is another transaction when the recorded one is none of our signings', () => {
    expect(attributeSequence({ n: 10n, chainSequence: 15n, recorded: { hash: OTHER, innerHash: OTHER }, signings: OURS })).toEqual({
      kind: 'other',
      hash: OTHER,
    });
  });
});

describe('nextSequenceMove', () => {
  const base = { n: 10n, chainSequence: 12n, counter: 20n as bigint | null, openBelow: false };

  it('holds, and sends nothing, without proof of what used its number', () => {
    expect(nextSequenceMove({ ...base, attribution: { kind: 'unproven', reason: 'why' } })).toEqual({ kind: 'hold', reason: 'why' });
  });

  it('tracks the signing that used its number', () => {
    expect(nextSequenceMove({ ...base, attribution: { kind: 'ours', hash: OURS[1] } })).toEqual({ kind: 'landed', hash: OURS[1] });
  });

  it('moves up, above both the counter and the chain, only when another transaction used its number', () => {
    expect(nextSequenceMove({ ...base, attribution: { kind: 'other', hash: OTHER } })).toEqual({ kind: 'up', target: 20n, usedBy: OTHER });
    expect(nextSequenceMove({ ...base, counter: 5n, attribution: { kind: 'other', hash: OTHER } })).toEqual({ kind: 'up', target: 13n, usedBy: OTHER });
    expect(nextSequenceMove({ ...base, counter: null, attribution: { kind: 'other', hash: OTHER } })).toEqual({ kind: 'up', target: 13n, usedBy: OTHER });
  });

  it('retries at the next valid number, or while a transaction below may still land', () => {
    expect(nextSequenceMove({ ...base, n: 13n, attribution: { kind: 'unused' } })).toEqual({ kind: 'retry' });
    expect(nextSequenceMove({ ...base, n: 15n, openBelow: true, attribution: { kind: 'unused' } })).toEqual({ kind: 'retry' });
  });

  it('moves down to close a gap nothing below can fill', () => {
    expect(nextSequenceMove({ ...base, n: 15n, attribution: { kind: 'unused' } })).toEqual({ kind: 'down', target: 13n });
  });
});

// The step's decisions: what the core writes and performs for a row, and what each answer means.
import type { Transaction } from '../../../src/generated/prisma/client.js';
import { decideStellar, recordStellar, type Reconciliation, type StellarState } from '../../../src/chains/stellar/decide.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const pace = { pollMs: 5_000 };
const txOf = (over: Partial<Transaction> = {}) =>
  ({
    id: 't1',
    status: 'pending',
    nonce: 11n,
    from: 'GRELAYER',
    hashes: [],
    hash: null,
    validUntil: new Date(NOW.getTime() + 60_000),
    chainState: null,
    ...over,
  }) as Transaction;
const envelope = (over: Partial<StellarState> = {}): StellarState => ({
  envelope: 'ENV1',
  hash: OURS[0],
  sequence: '11',
  maxTime: null,
  accepted: false,
  polls: 0,
  kind: 'send',
  signings: [{ hash: OURS[0], sequence: '11' }],
  public: {},
  ...over,
});
const reconciliation = (over: Partial<Reconciliation> = {}): Reconciliation => ({
  n: 11n,
  chainSequence: 11n,
  landed: null,
  recorded: null,
  signings: [OURS[0]],
  counter: 12n,
  openBelow: false,
  ...over,
});

describe('the Stellar step', () => {
  it('signs a new transaction at its sequence number and writes it (status sent) before a later step sends it', () => {
    const d = decideStellar(txOf(), undefined, pace, NOW);
    expect(d.effects).toEqual([{ stage: 'sign', point: 'send', sequence: 11n }]);
    const after = recordStellar(d, [{ signed: true, state: envelope() }], NOW);
    expect(after).toMatchObject({ effects: [], nextInMs: 0, patch: { status: 'sent', hash: OURS[0], hashes: [OURS[0]] } });
    const next = decideStellar(txOf({ status: 'sent', chainState: envelope() as never }), undefined, pace, NOW);
    expect(next.effects).toEqual([{ stage: 'send', point: 'send', envelope: 'ENV1' }]);
  });

  it('on tx_bad_seq reconciles on evidence: another transaction at its number moves it up, signed again and the number taken before it is written', () => {
    const tx = txOf({ status: 'sent', hashes: [OURS[0]], chainState: envelope() as never });
    const refused = recordStellar(
      decideStellar(tx, undefined, pace, NOW),
      [{ submitted: { outcome: 'rejected', code: 'tx_bad_seq', reason: 'tx_bad_seq' } }],
      NOW,
    );
    expect(refused.effects).toEqual([{ stage: 'read', reconcile: 'own' }]);
    const other = { hash: OTHER, innerHash: OTHER, landed: { hash: OTHER, status: 'confirmed' as const, ledger: 5 } };
    const moving = recordStellar(refused, [{ reconciled: reconciliation({ recorded: other }) }], NOW);
    expect(moving.effects).toEqual([{ stage: 'sign', point: 'resubmit', sequence: 12n, move: { target: 12n, direction: 'up' } }]);
    const signed = recordStellar(
      moving,
      [{ signed: true, state: envelope({ envelope: 'ENV2', hash: OURS[1], sequence: '12', kind: 'resubmit', signings: [{ hash: OURS[1], sequence: '12' }] }) }],
      NOW,
    );
    expect(signed.effects).toEqual([{ stage: 'read', take: { target: 12n, direction: 'up' } }]);
    expect(signed.patch).toEqual({});
    const moved = recordStellar(signed, [{ taken: true }], NOW);
    expect(moved).toMatchObject({ effects: [], nextInMs: 0, patch: { nonce: 12n, hash: OURS[1], hashes: [OURS[0], OURS[1]] } });
    expect((moved.patch.chainState as unknown as StellarState).signings).toEqual([
      { hash: OURS[0], sequence: '11' },
      { hash: OURS[1], sequence: '12' },
    ]);
    // Another transaction took the number first: nothing moves, it is looked at again.
    expect(recordStellar(signed, [{ taken: false }], NOW)).toMatchObject({ effects: [], nextInMs: 5_000, patch: { chainState: { accepted: false } } });
  });

  it('holds a transaction whose number was used by a transaction not found, and a held one is never sent', () => {
    const tx = txOf({ status: 'submitted', chainState: envelope({ accepted: true }) as never });
    const held = decideStellar(tx, { reconciled: reconciliation() }, pace, NOW);
    expect(held).toMatchObject({ effects: [], nextInMs: 60_000, patch: { statusReason: expect.stringMatching(/left for a person to decide/) } });
    const row = txOf({ status: 'submitted', chainState: held.patch.chainState as never });
    expect(decideStellar(row, { reconciled: reconciliation() }, pace, NOW).effects).toEqual([]);
    // Proof turns up: its own signing was recorded at that number.
    const ours = { hash: OURS[0], innerHash: OURS[0], landed: { hash: OURS[0], status: 'confirmed' as const, ledger: 7 } };
    expect(decideStellar(row, { reconciled: reconciliation({ recorded: ours }) }, pace, NOW)).toMatchObject({ patch: { status: 'confirmed', hash: OURS[0] } });
  });

  it('sends a tracked envelope again every fifth look, and only a verdict on its number or time bound changes anything', () => {
    const tx = txOf({ status: 'submitted', chainState: envelope({ accepted: true, polls: 4 }) as never });
    const d = decideStellar(tx, { looked: { landed: null, latestLedgerCloseTime: 0 }, chainSequence: null }, pace, NOW);
    expect(d.effects).toEqual([{ stage: 'send', envelope: 'ENV1', again: true }]);
    expect(recordStellar(d, [{ submitted: { outcome: 'rejected', code: 'tx_insufficient_fee', reason: 'tx_insufficient_fee' } }], NOW)).toMatchObject({
      effects: [],
      nextInMs: 5_000,
      patch: { chainState: { polls: 5 } },
    });
    expect(recordStellar(d, [{ submitted: { outcome: 'rejected', code: 'tx_too_late', reason: 'tx_too_late' } }], NOW).effects).toEqual([
      { stage: 'read', look: [OURS[0]] },
    ]);
  });
});
