// When a Solana transaction may be signed again with a fresh blockhash: only on evidence.
import { describe, expect, it } from 'vitest';
import { solanaVerdict, type SolanaSigning } from '../../../src/chains/solana/decide.js';
import type { SignatureStatus } from '../../../src/chains/solana/rpc-client.js';

const first: SolanaSigning = { signature: 'sig-1', blockhash: 'bh-1', lastValidBlockHeight: '100' };
const second: SolanaSigning = { signature: 'sig-2', blockhash: 'bh-2', lastValidBlockHeight: '250' };
const st = (confirmationStatus: SignatureStatus['confirmationStatus'], err: unknown = null, slot = 77): SignatureStatus => ({
  slot,
  confirmations: null,
  err,
  confirmationStatus,
});

describe('solanaVerdict', () => {
  it('may re-sign only once the finalized height is past every signing’s lastValidBlockHeight and none is on chain', () => {
    expect(solanaVerdict([first, second], [null, null], 251n)).toMatchObject({ kind: 'gone' });
    expect(solanaVerdict([first, second], [null, null], 250n)).toMatchObject({ kind: 'open' });
    expect(solanaVerdict([first, second], [null, null], 120n)).toMatchObject({ kind: 'open' });
  });

  it('never re-signs without the block height, nor a durable-nonce transaction', () => {
    expect(solanaVerdict([first], [null], null)).toMatchObject({ kind: 'open' });
    expect(solanaVerdict([{ ...first, lastValidBlockHeight: null }], [null], 10_000n)).toMatchObject({
      kind: 'open',
      reason: expect.stringMatching(/durable nonce/),
    });
  });

  it('finds an earlier signing on chain, whatever the height', () => {
    expect(solanaVerdict([first, second], [st('finalized'), null], 10_000n)).toEqual({ kind: 'landed', signature: 'sig-1', slot: 77, status: 'confirmed' });
    expect(solanaVerdict([first, second], [null, st('processed')], 10_000n)).toEqual({ kind: 'landed', signature: 'sig-2', slot: 77, status: 'mined' });
  });

  it('reports a landed error only once it is confirmed', () => {
    expect(solanaVerdict([first], [st('confirmed', { InstructionError: [0, 'Custom'] })], 0n)).toEqual({
      kind: 'landed',
      signature: 'sig-1',
      slot: 77,
      status: 'failed',
      reason: '{"InstructionError":[0,"Custom"]}',
    });
    expect(solanaVerdict([first], [st('processed', 'AccountInUse')], 0n)).toMatchObject({ kind: 'landed', status: 'mined' });
  });
});

// The step's decisions: what the core writes and performs for a row, and what each answer means.
import type { Transaction } from '../../../src/generated/prisma/client.js';
import { decideSolana, recordSolana, type SolanaDecision, type SolanaState } from '../../../src/chains/solana/decide.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const pace = { pollMs: 400 };
const txOf = (over: Partial<Transaction> = {}) =>
  ({
    id: 't1',
    status: 'pending',
    hashes: [],
    hash: null,
    request: { transaction: 'AA' },
    validUntil: new Date(NOW.getTime() + 60_000),
    chainState: null,
    ...over,
  }) as Transaction;
const signedState: SolanaState = {
  wire: 'W1',
  signature: 'sig-1',
  blockhash: 'bh-1',
  lastValidBlockHeight: '100',
  accepted: false,
  kind: 'send',
  signings: [first],
  public: {},
};
const made = { signed: true as const, signing: { ...first, wire: 'W1', fee: 5000n } };

describe('the Solana step', () => {
  it('signs a new transaction, and writes the signing (status sent) without sending it in the same step', () => {
    const d = decideSolana(txOf(), undefined, pace, NOW);
    expect(d.effects).toEqual([{ stage: 'sign', point: 'send', request: { transaction: 'AA' }, resubmit: false }]);
    const after = recordSolana(d, [made], NOW);
    expect(after).toMatchObject({ effects: [], nextInMs: 0, patch: { status: 'sent', hash: 'sig-1', hashes: ['sig-1'] } });
    expect(after.patch.chainState).toMatchObject({ wire: 'W1', accepted: false, kind: 'send', signings: [first] });
  });

  it('expires a transaction past valid_until before signing, with nothing to perform', () => {
    const d = decideSolana(txOf({ validUntil: new Date(NOW.getTime() - 1) }), undefined, pace, NOW);
    expect(d).toMatchObject({ effects: [], nextInMs: null, patch: { status: 'expired' } });
  });

  it('sends the written bytes; a refusal is looked up on chain before anything is decided', () => {
    const tx = txOf({ status: 'sent', hash: 'sig-1', hashes: ['sig-1'], chainState: signedState as never });
    const d = decideSolana(tx, undefined, pace, NOW);
    expect(d.effects).toEqual([{ stage: 'send', point: 'send', wire: 'W1' }]);
    expect(recordSolana(d, [{ submitted: 'submitted' }], NOW)).toMatchObject({ nextInMs: 400, patch: { status: 'submitted' } });

    const refused = recordSolana(d, [{ submitted: 'rejected', reason: 'bad' }], NOW);
    expect(refused.effects).toEqual([{ stage: 'read', signings: [first] }]);
    expect(refused.patch).toEqual({});
    // An earlier broadcast whose answer was lost landed after all: it is the result.
    expect(recordSolana(refused, [{ verdict: { kind: 'landed', signature: 'sig-1', slot: 9, status: 'confirmed' } }], NOW)).toMatchObject({
      nextInMs: null,
      patch: { status: 'confirmed', hash: 'sig-1' },
    });
    expect(recordSolana(refused, [{ verdict: { kind: 'open', reason: 'x' } }], NOW)).toMatchObject({
      patch: { status: 'failed', statusReason: 'rejected by the network: bad' },
    });
  });

  it('signs again only when every signing is gone; while one may land, it waits', () => {
    const tx = txOf({ status: 'sent', hash: 'sig-1', hashes: ['sig-1'], chainState: signedState as never });
    const expired = recordSolana(decideSolana(tx, undefined, pace, NOW), [{ submitted: 'expired', reason: 'blockhash not found' }], NOW);
    const open = recordSolana(expired, [{ verdict: { kind: 'open', reason: 'may land' } }], NOW);
    expect(open).toMatchObject({ effects: [], patch: {}, nextInMs: 400 });
    const gone = recordSolana(expired, [{ verdict: { kind: 'gone', reason: 'past 100' } }], NOW);
    expect(gone.effects).toEqual([{ stage: 'sign', point: 'resign', request: { transaction: 'AA' }, resubmit: true }]);
    const second = { signature: 'sig-2', blockhash: 'bh-2', lastValidBlockHeight: '250' };
    const resigned = recordSolana(gone, [{ signed: true, signing: { ...second, wire: 'W2' } }], NOW);
    expect(resigned.patch).toMatchObject({ hash: 'sig-2', hashes: ['sig-1', 'sig-2'] });
    expect(resigned.patch.status).toBeUndefined();
    expect(resigned.patch.chainState).toMatchObject({ kind: 'resign', signings: [first, second] });
  });

  it('keeps an accepted transaction unchanged while no answer came, and sends the same bytes again while it may land', () => {
    const tx = txOf({ status: 'submitted', hash: 'sig-1', hashes: ['sig-1'], chainState: { ...signedState, accepted: true } as never });
    expect(decideSolana(tx, { error: 'timeout' }, pace, NOW)).toMatchObject({ effects: [], patch: {}, nextInMs: 5_000 });
    const d: SolanaDecision = decideSolana(tx, { kind: 'open', reason: 'x' }, pace, NOW);
    expect(d.effects).toEqual([{ stage: 'send', wire: 'W1', again: true }]);
    expect(recordSolana(d, [{ error: 'reset' }], NOW)).toMatchObject({ patch: {}, nextInMs: 400 });
  });
});
