import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseGwei, toHex, type Hex } from 'viem';
import { ANVIL_DEV_ADDRESS, startAnvil, type AnvilInstance } from '../../../src/chains/evm/anvil.js';
import { blocksOf, bumpFees, capForBacklog, eip1559Fees, estimateGasWithMargin, legacyGasPrice } from '../../../src/chains/evm/fees.js';
import { bidInLine, blockGasLimit, marketFees } from '../../../src/chains/evm/pricing.js';
import { SPEEDS } from '../../../src/chains/evm/request.js';
import { createEvmRpc, type EvmRpc, type RpcRequester } from '../../../src/chains/evm/rpc-client.js';

const RECIPIENT = '0x000000000000000000000000000000000000dEaD';

let anvil: AnvilInstance;
let rpc: EvmRpc;

beforeAll(async () => {
  anvil = await startAnvil();
  rpc = createEvmRpc([{ url: anvil.url, weight: 100 }]);
});

afterAll(async () => {
  await anvil?.stop();
});

/** Fake requester answering from a fixed table. */
function stub(answers: Record<string, unknown>): RpcRequester {
  return {
    request: async <T>(method: string) => {
      if (!(method in answers)) throw new Error(`unexpected ${method}`);
      return answers[method] as T;
    },
  };
}

describe('legacyGasPrice', () => {
  it('applies the speed multipliers to eth_gasPrice', async () => {
    const gasPrice = BigInt(await rpc.request<Hex>('eth_gasPrice'));
    expect(gasPrice).toBeGreaterThan(0n);
    expect(await legacyGasPrice(rpc, 'safeLow')).toBe(gasPrice);
    expect(await legacyGasPrice(rpc, 'average')).toBe((gasPrice * 125n + 99n) / 100n);
    expect(await legacyGasPrice(rpc, 'fast')).toBe((gasPrice * 150n + 99n) / 100n);
    expect(await legacyGasPrice(rpc, 'fastest')).toBe(gasPrice * 2n);
  });

  it('rounds up with integer math', async () => {
    const rpc = stub({ eth_gasPrice: '0x3' }); // 3 wei
    expect(await legacyGasPrice(rpc, 'average')).toBe(4n); // 3.75
    expect(await legacyGasPrice(rpc, 'fast')).toBe(5n); // 4.5
  });
});

describe('eip1559Fees', () => {
  it('returns sane fees on an idle dev chain (tip floored at 1 wei)', async () => {
    for (const speed of SPEEDS) {
      const fees = await eip1559Fees(rpc, speed);
      expect(fees.maxPriorityFeePerGas).toBeGreaterThanOrEqual(1n);
      expect(fees.maxFeePerGas).toBeGreaterThanOrEqual(fees.maxPriorityFeePerGas);
      expect(fees.maxFeePerGas).toBeGreaterThanOrEqual(fees.baseFeePerGas);
      expect(fees.maxFeePerGas).toBe(2n * fees.baseFeePerGas + fees.maxPriorityFeePerGas);
    }
  });

  it('uses recent tips paid on chain', async () => {
    const tip = parseGwei('2');
    for (let i = 0; i < 10; i++) {
      const hash = await rpc.request<Hex>('eth_sendTransaction', [
        {
          from: ANVIL_DEV_ADDRESS,
          to: RECIPIENT,
          value: '0x1',
          maxPriorityFeePerGas: toHex(tip),
          maxFeePerGas: toHex(parseGwei('100')),
        },
      ]);
      // Anvil answers before its block is mined; on a busy machine the fee history would miss it.
      while (!(await rpc.request('eth_getTransactionReceipt', [hash]))) await new Promise((r) => setTimeout(r, 10));
    }
    const latest = await rpc.request<{ baseFeePerGas: Hex }>('eth_getBlockByNumber', ['latest', false]);
    for (const speed of SPEEDS) {
      const fees = await eip1559Fees(rpc, speed);
      expect(fees.maxPriorityFeePerGas).toBe(tip);
      // Next block's base fee is within 12.5% of the latest one.
      const latestBase = BigInt(latest.baseFeePerGas);
      expect(fees.baseFeePerGas * 8n).toBeGreaterThanOrEqual(latestBase * 7n);
      expect(fees.baseFeePerGas * 8n).toBeLessThanOrEqual(latestBase * 9n);
      expect(fees.maxFeePerGas).toBe(2n * fees.baseFeePerGas + tip);
    }
  });

  it('takes the median of the speed percentile across blocks', async () => {
    const rpc = stub({
      eth_feeHistory: {
        baseFeePerGas: ['0x64', '0x64', '0x64', '0xc8'], // next block: 200
        reward: [
          ['0x1', '0xa', '0x64', '0x3e8'],
          ['0x3', '0x14', '0xc8', '0x7d0'],
          ['0x2', '0x1e', '0x12c', '0xbb8'],
        ],
      },
    });
    expect(await eip1559Fees(rpc, 'safeLow')).toEqual({
      maxPriorityFeePerGas: 2n,
      maxFeePerGas: 402n,
      baseFeePerGas: 200n,
    });
    expect((await eip1559Fees(rpc, 'average')).maxPriorityFeePerGas).toBe(20n);
    expect((await eip1559Fees(rpc, 'fast')).maxPriorityFeePerGas).toBe(200n);
    expect((await eip1559Fees(rpc, 'fastest')).maxPriorityFeePerGas).toBe(2000n);
  });

  it('floors a zero tip at 1 wei and averages the middle pair for even counts', async () => {
    const zero = stub({ eth_feeHistory: { baseFeePerGas: ['0x0', '0x0'], reward: [['0x0', '0x0', '0x0', '0x0']] } });
    expect(await eip1559Fees(zero, 'fast')).toEqual({ maxPriorityFeePerGas: 1n, maxFeePerGas: 1n, baseFeePerGas: 0n });

    const even = stub({
      eth_feeHistory: {
        baseFeePerGas: ['0x1', '0x1', '0x1'],
        reward: [
          ['0xa', '0x0', '0x0', '0x0'],
          ['0x14', '0x0', '0x0', '0x0'],
        ],
      },
    });
    expect((await eip1559Fees(even, 'safeLow')).maxPriorityFeePerGas).toBe(15n);
  });

  it('rejects a fee history without base fees', async () => {
    await expect(eip1559Fees(stub({ eth_feeHistory: { reward: [] } }), 'average')).rejects.toThrow(/base fee/);
  });
});

describe('bumpFees', () => {
  it('raises gasPrice by at least 10%, rounding up', () => {
    expect(bumpFees({ gasPrice: 100n })).toEqual({ gasPrice: 110n, capped: false });
    expect(bumpFees({ gasPrice: 101n })).toEqual({ gasPrice: 112n, capped: false });
    expect(bumpFees({ gasPrice: 0n })).toEqual({ gasPrice: 1n, capped: false });
  });

  it('raises both EIP-1559 fields by at least 10%', () => {
    const prev = { maxFeePerGas: parseGwei('30'), maxPriorityFeePerGas: parseGwei('1.5') };
    const next = bumpFees(prev);
    expect(next.maxFeePerGas).toBe(parseGwei('33'));
    expect(next.maxPriorityFeePerGas).toBe(parseGwei('1.65'));
    expect(next.capped).toBe(false);
    expect(bumpFees({ maxFeePerGas: 7n, maxPriorityFeePerGas: 3n })).toEqual({
      maxFeePerGas: 8n,
      maxPriorityFeePerGas: 4n,
      capped: false,
    });
  });

  it('respects the cap and reports when it prevented a full bump', () => {
    expect(bumpFees({ gasPrice: 100n }, { capWei: 110n })).toEqual({ gasPrice: 110n, capped: false });
    expect(bumpFees({ gasPrice: 100n }, { capWei: 105n })).toEqual({ gasPrice: 105n, capped: true });
    // A cap below the previous price never lowers it.
    expect(bumpFees({ gasPrice: 100n }, { capWei: 50n })).toEqual({ gasPrice: 100n, capped: true });

    expect(bumpFees({ maxFeePerGas: 100n, maxPriorityFeePerGas: 10n }, { capWei: 105n })).toEqual({
      maxFeePerGas: 105n,
      maxPriorityFeePerGas: 11n,
      capped: true,
    });
    // Tip limited by the capped max fee.
    expect(bumpFees({ maxFeePerGas: 100n, maxPriorityFeePerGas: 100n }, { capWei: 105n })).toEqual({
      maxFeePerGas: 105n,
      maxPriorityFeePerGas: 105n,
      capped: true,
    });
    expect(bumpFees({ maxFeePerGas: 100n, maxPriorityFeePerGas: 10n }, { capWei: 1000n })).toEqual({
      maxFeePerGas: 110n,
      maxPriorityFeePerGas: 11n,
      capped: false,
    });
  });
});

describe('a bid raised for a backlog (capForBacklog, blocksOf)', () => {
  const market = { maxFeePerGas: 2n * 1_000_000_000n + 5n, maxPriorityFeePerGas: 5n }; // 2 × a base fee of 1 gwei, tip 5 wei
  /** The base fee after `n` full blocks from 1 gwei, as a node computes it (an eighth more each, rounded down). */
  const baseAfter = (n: number) => Array.from({ length: n }).reduce<bigint>((b) => b + b / 8n, 1_000_000_000n);

  it('keeps the tip and outlasts as many more full blocks as it is raised for', () => {
    expect(capForBacklog(market, 0)).toEqual(market);
    // The market bid is good for 5 full blocks (2 × base > base × 1.125^5), not 6; raised, for 5 more than `blocks`.
    expect(market.maxFeePerGas - 5n >= baseAfter(5) && market.maxFeePerGas - 5n < baseAfter(6)).toBe(true);
    for (const blocks of [1, 5, 20]) {
      const raised = capForBacklog(market, blocks);
      expect(raised.maxPriorityFeePerGas).toBe(5n);
      expect(raised.maxFeePerGas - 5n).toBeGreaterThanOrEqual(baseAfter(5 + blocks));
    }
  });

  it('counts the full blocks a line of transactions fills', () => {
    expect(blocksOf(0n, 21_000n, 210_000n)).toBe(0);
    expect(blocksOf(9n, 21_000n, 210_000n)).toBe(0);
    expect(blocksOf(10n, 21_000n, 210_000n)).toBe(1);
    expect(blocksOf(205n, 21_000n, 210_000n)).toBe(20);
    expect(blocksOf(5n, 21_000n, 0n)).toBe(0);
    expect(blocksOf(10_000n, 21_000n, 210_000n)).toBe(32); // counted to 32 at most
  });
});

describe('estimateGasWithMargin', () => {
  it('adds 10% to a plain transfer estimate', async () => {
    const gas = await estimateGasWithMargin(rpc, { from: ANVIL_DEV_ADDRESS, to: RECIPIENT, value: 1n });
    expect(gas).toBe(23_100n); // ceil(21000 × 1.1)
  });

  it('rounds up', async () => {
    expect(await estimateGasWithMargin(stub({ eth_estimateGas: '0x5209' }), { to: RECIPIENT })).toBe(23_102n); // 21001 × 1.1 = 23101.1
  });
});

describe('market fees and the block gas limit', () => {
  it('ask the chain once per client within their time to live, and ask again after a failure', async () => {
    const calls: string[] = [];
    const counted = (url: string) => createEvmRpc([{ url, weight: 100 }], { retries: 0, observe: (method) => calls.push(method) });
    const [a, b] = [counted(anvil.url), counted(anvil.url)];
    const limit = await blockGasLimit(a);
    const fees = await marketFees(a, true, 'fast');
    const asked = calls.length;
    expect(await blockGasLimit(a)).toBe(limit);
    expect(await marketFees(a, true, 'fast')).toEqual(fees);
    expect(calls).toHaveLength(asked);
    await blockGasLimit(b);
    await marketFees(a, false, 'fast');
    expect(calls.length).toBeGreaterThanOrEqual(asked + 2);

    calls.length = 0;
    const down = counted('http://127.0.0.1:1');
    await expect(blockGasLimit(down)).rejects.toThrow();
    await expect(blockGasLimit(down)).rejects.toThrow();
    expect(calls).toEqual(['eth_getBlockByNumber', 'eth_getBlockByNumber']);
  });
});

describe('bidInLine', () => {
  const need = { maxFeePerGas: 300n, maxPriorityFeePerGas: 2n };
  it('bids the level less a wei a place, keeping the tip', () => {
    expect(bidInLine(need, 1_000n, 0n)).toEqual({ maxFeePerGas: 1_000n, maxPriorityFeePerGas: 2n });
    expect(bidInLine(need, 1_000n, 7n)).toEqual({ maxFeePerGas: 993n, maxPriorityFeePerGas: 2n });
  });
  it('never bids below what the line needs', () => {
    expect(bidInLine(need, 1_000n, 900n)).toEqual(need);
  });
});
