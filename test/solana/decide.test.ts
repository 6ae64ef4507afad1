// When a Solana transaction may be signed again with a fresh blockhash: only on evidence.
import { describe, expect, it } from 'vitest';
import { solanaVerdict, type SolanaSigning } from '../../src/chains/solana/decide.js';
import type { SignatureStatus } from '../../src/chains/solana/rpc.js';

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
