import { describe, expect, it } from 'vitest';
import { afterMiss, BUNDLE_MARGIN_MS, bundleValidUntil, windowClosed } from '../../../../src/chains/evm/aa/bundling.js';
import { authorizationFate } from '../../../../src/chains/evm/aa/bundle.js';
import { SIMPLE_7702_ACCOUNT } from '../../../../src/chains/evm/aa/canonical.js';
import { windowEnd } from '../../../../src/chains/evm/aa/simulate.js';

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

describe("an operation's EIP-7702 authorization at bundling", () => {
  const a = { address: SIMPLE_7702_ACCOUNT, chainId: 31337, nonce: 4, r: '0x01', s: '0x02', yParity: 0 } as const;
  it("is carried at the sender's account nonce; past it, left out if the sender is delegated there already, else the operation is dropped", () => {
    expect(authorizationFate(a, 4n, undefined)).toBe('carry');
    expect(authorizationFate(a, 5n, SIMPLE_7702_ACCOUNT)).toBe('delegated');
    expect(authorizationFate(a, 5n, '0x000000000000000000000000000000000000dEaD')).toEqual({
      stale: `eip7702Auth: its nonce 4 is not the sender's account nonce (5) any more, and the sender is not delegated to ${SIMPLE_7702_ACCOUNT}: the authorization would be skipped`,
    });
    expect(authorizationFate(a, 3n, undefined)).toHaveProperty('stale');
  });
});

describe("a bundle transaction's valid_until", () => {
  const now = Date.parse('2026-12-07T20:00:00Z');
  it('is the default 8 hours when no operation has a window, else ends BUNDLE_MARGIN_MS before the first window ends', () => {
    expect(bundleValidUntil([null, null], now)).toEqual(new Date(now + 8 * 3600_000));
    const soon = new Date(now + 15 * 60_000);
    const sooner = new Date(now + 5 * 60_000);
    expect(bundleValidUntil([soon, null, sooner], now)).toEqual(new Date(sooner.getTime() - BUNDLE_MARGIN_MS));
  });

  it("translates the windows (the chain's time) to this machine's clock by how far the chain's is ahead", () => {
    const ends = new Date(now + 5 * 60_000);
    expect(bundleValidUntil([ends], now, 60_000)).toEqual(new Date(ends.getTime() - 60_000 - BUNDLE_MARGIN_MS));
    expect(bundleValidUntil([ends], now, -60_000)).toEqual(new Date(ends.getTime() + 60_000 - BUNDLE_MARGIN_MS));
    // Ended by the chain's clock already: a deadline already past, never sent.
    expect(bundleValidUntil([ends], now, 10 * 60_000).getTime()).toBeLessThan(now);
  });

  it('an operation whose window ends within the margin is not bundled', () => {
    expect(windowClosed(null, now)).toBe(false);
    expect(windowClosed(new Date(now + BUNDLE_MARGIN_MS + 1), now)).toBe(false);
    expect(windowClosed(new Date(now + BUNDLE_MARGIN_MS), now)).toBe(true);
    expect(windowClosed(new Date(now - 1), now)).toBe(true);
  });

  it("an operation's window is the earlier end of its account's and its paymaster's (0: no end)", () => {
    const d = (validUntil: number) => ({ aggregator: 'none' as const, validAfter: 0, validUntil });
    expect(windowEnd({ account: d(0), paymaster: d(0) })).toBeNull();
    expect(windowEnd({ account: d(0), paymaster: d(1_800_000_000) })).toEqual(new Date(1_800_000_000_000));
    expect(windowEnd({ account: d(1_700_000_000), paymaster: d(1_800_000_000) })).toEqual(new Date(1_700_000_000_000));
  });
});
