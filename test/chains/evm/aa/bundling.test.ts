import { describe, expect, it } from 'vitest';
import { afterMiss } from '../../../../src/chains/evm/aa/bundling.js';

describe('a submitted operation its bundle did not include', () => {
  it('goes back to pending while its nonce is unused on chain, and fails once another transaction used it', () => {
    const key = 5n << 64n;
    expect(afterMiss(key + 3n, key + 3n, 'its bundle reverted')).toEqual({ to: 'pending' });
    expect(afterMiss(key + 3n, key + 4n, 'its bundle reverted')).toEqual({
      to: 'failed',
      reason: 'its bundle reverted; its nonce was used by another transaction',
    });
  });
});
