// What consumed a Stellar sequence number, and where the transaction goes next: decided on evidence.
import { describe, expect, it } from 'vitest';
import { attributeSequence, nextSequenceMove } from '../../src/chains/stellar/decide.js';

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
