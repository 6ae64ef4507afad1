// The `user_operations` policy as a relayer's policies carry it: what it accepts and how it refuses.
import { describe, expect, it } from 'vitest';
import { ENTRY_POINT_V07, ENTRY_POINT_V08 } from '../../../../src/chains/evm/aa/canonical.js';
import { servedEntryPoints, userOperationsPolicy } from '../../../../src/chains/evm/aa/policy.js';
import { evmPolicy } from '../../../../src/chains/evm/request.js';

const messages = (v: unknown) => {
  const r = evmPolicy.safeParse({ user_operations: v });
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

describe('user_operations policy', () => {
  it('takes a deployed paymaster with wei as decimal strings, kept exactly', () => {
    const p = userOperationsPolicy.parse({ paymaster: { deploy: true, deposit: '1000000000000000000000', min_deposit: '1' } });
    expect(p.paymaster).toEqual({ deploy: true, deposit: '1000000000000000000000', min_deposit: '1' });
    expect(servedEntryPoints(p)).toEqual([ENTRY_POINT_V07.toLowerCase(), ENTRY_POINT_V08.toLowerCase()]);
  });

  it('takes an existing paymaster, one EntryPoint and sponsorship limits', () => {
    const p = userOperationsPolicy.parse({
      entry_points: [ENTRY_POINT_V08],
      paymaster: { address: `0x${'ab'.repeat(20)}` },
      sponsorship: { allowed_targets: [`0x${'cd'.repeat(20)}`], max_cost_per_operation: '5', max_operations_per_sender_per_hour: 3 },
    });
    expect(servedEntryPoints(p)).toEqual([ENTRY_POINT_V08.toLowerCase()]);
  });

  it('refuses wei as a number, an unknown EntryPoint, an unknown field and a missing paymaster', () => {
    expect(messages({ paymaster: { deploy: true, deposit: 1 } }).join('\n')).toMatch(/paymaster/);
    expect(messages({ paymaster: { deploy: true, deposit: '01' } }).length).toBeGreaterThan(0);
    expect(messages({ paymaster: { deploy: true, deposit: '1'.repeat(40) } }).length).toBeGreaterThan(0);
    expect(messages({ entry_points: [`0x${'11'.repeat(20)}`], paymaster: { address: `0x${'ab'.repeat(20)}` } })).toEqual([
      expect.stringMatching(/^user_operations\.entry_points\.0: must be EntryPoint v0\.7/),
    ]);
    expect(messages({ paymaster: { address: `0x${'ab'.repeat(20)}` }, bundle_size: 3 })).toEqual([expect.stringMatching(/bundle_size/)]);
    expect(messages({})).toEqual([expect.stringMatching(/^user_operations\.paymaster/)]);
  });
});
