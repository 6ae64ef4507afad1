import { toHex, type Address, type Hex } from 'viem';
import type { RpcRequester } from './rpc-client.js';
import { SPEEDS, type Speed } from './request.js';

export type { Speed };

export type LegacyFees = { gasPrice: bigint };
export type Eip1559Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
export type FeeParams = LegacyFees | Eip1559Fees;

// Percent multipliers on eth_gasPrice.
const SPEED_PERCENT: Record<Speed, bigint> = { safeLow: 100n, average: 125n, fast: 150n, fastest: 200n };
// eth_feeHistory reward percentile per speed.
const SPEED_PERCENTILE: Record<Speed, number> = { safeLow: 30, average: 50, fast: 85, fastest: 99 };
const FEE_HISTORY_BLOCKS = 10;
const MIN_BUMP_PERCENT = 110n;

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;
const maxBig = (a: bigint, b: bigint) => (a > b ? a : b);
const minBig = (a: bigint, b: bigint) => (a < b ? a : b);

/** eth_gasPrice scaled by the speed multiplier, rounded up. */
export async function legacyGasPrice(rpc: RpcRequester, speed: Speed): Promise<bigint> {
  const gasPrice = BigInt(await rpc.request<Hex>('eth_gasPrice'));
  return ceilDiv(gasPrice * SPEED_PERCENT[speed], 100n);
}

type FeeHistory = { baseFeePerGas?: Hex[]; reward?: Hex[][] };

/**
 * Priority fee: median over recent blocks of the speed's reward percentile
 * (at least 1 wei). maxFee = 2 × next block's base fee + priority, which stays
 * valid through several consecutive full blocks of base-fee growth.
 */
export async function eip1559Fees(rpc: RpcRequester, speed: Speed): Promise<Eip1559Fees & { baseFeePerGas: bigint }> {
  const percentiles = SPEEDS.map((s) => SPEED_PERCENTILE[s]);
  const history = await rpc.request<FeeHistory>('eth_feeHistory', [toHex(FEE_HISTORY_BLOCKS), 'latest', percentiles]);
  const baseFees = history.baseFeePerGas ?? [];
  if (baseFees.length === 0) throw new Error('eth_feeHistory returned no base fees; chain may not support EIP-1559');
  // The last entry is the base fee of the next (pending) block.
  const baseFeePerGas = BigInt(baseFees[baseFees.length - 1]);

  const column = SPEEDS.indexOf(speed);
  const rewards = (history.reward ?? [])
    .filter((r) => r.length > column)
    .map((r) => BigInt(r[column]))
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const median =
    rewards.length === 0
      ? 0n
      : rewards.length % 2 === 1
        ? rewards[(rewards.length - 1) / 2]
        : (rewards[rewards.length / 2 - 1] + rewards[rewards.length / 2]) / 2n;
  const maxPriorityFeePerGas = maxBig(median, 1n);

  return { maxFeePerGas: 2n * baseFeePerGas + maxPriorityFeePerGas, maxPriorityFeePerGas, baseFeePerGas };
}

/** Blocks of backlog counted at most: a bid's cap is raised about 43 times at most. */
const MAX_BACKLOG_BLOCKS = 32;

/**
 * A bid whose cap stays above the base fee through `blocks` (MAX_BACKLOG_BLOCKS at most) more full
 * blocks than `f`'s does (each raises the base fee by an eighth): a transaction that will wait
 * behind that many blocks of transactions keeps its place in the node's pool instead of being
 * priced out and signed again. The tip is kept, and a block charges its base fee and the tip,
 * never more: a higher cap costs only where the base fee rises that far.
 */
export function capForBacklog(f: Eip1559Fees, blocks: number): Eip1559Fees {
  let over = f.maxFeePerGas - f.maxPriorityFeePerGas;
  for (let i = 0; i < Math.min(blocks, MAX_BACKLOG_BLOCKS); i++) over = ceilDiv(over * 9n, 8n);
  return { maxFeePerGas: over + f.maxPriorityFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
}

/** Full blocks `ahead` transactions of `gas` each fill (one not full does not count), MAX_BACKLOG_BLOCKS at most. */
export const blocksOf = (ahead: bigint, gas: bigint, blockGas: bigint) =>
  blockGas > 0n && ahead > 0n ? Math.min(MAX_BACKLOG_BLOCKS, Number((ahead * gas) / blockGas)) : 0;

export type BumpOptions = { capWei?: bigint };

/** ceil(value × 1.1), and always at least value + 1 so a zero fee still moves. */
function bumped(value: bigint): bigint {
  return maxBig(ceilDiv(value * MIN_BUMP_PERCENT, 100n), value + 1n);
}

/**
 * Fees for a replacement transaction: every fee field raised by at least 10%
 * (what nodes require to accept a replacement), limited by `capWei`. `capped`
 * is true when the cap prevented a full 10% bump; the caller then knows the
 * replacement will likely be rejected. Fees never go below `prev`.
 */
export function bumpFees(prev: LegacyFees, opts?: BumpOptions): LegacyFees & { capped: boolean };
export function bumpFees(prev: Eip1559Fees, opts?: BumpOptions): Eip1559Fees & { capped: boolean };
export function bumpFees(prev: FeeParams, opts?: BumpOptions): FeeParams & { capped: boolean };
export function bumpFees(prev: FeeParams, opts: BumpOptions = {}): FeeParams & { capped: boolean } {
  const limit = (value: bigint) => {
    const want = bumped(value);
    if (opts.capWei === undefined) return { value: want, capped: false };
    const got = minBig(want, maxBig(opts.capWei, value));
    return { value: got, capped: got < want };
  };

  if ('gasPrice' in prev) {
    const gasPrice = limit(prev.gasPrice);
    return { gasPrice: gasPrice.value, capped: gasPrice.capped };
  }
  const maxFee = limit(prev.maxFeePerGas);
  let priority = limit(prev.maxPriorityFeePerGas);
  // The tip can never exceed the max fee.
  if (priority.value > maxFee.value) {
    priority = { value: maxBig(maxFee.value, prev.maxPriorityFeePerGas), capped: true };
  }
  return {
    maxFeePerGas: maxFee.value,
    maxPriorityFeePerGas: priority.value,
    capped: maxFee.capped || priority.capped,
  };
}

export type GasEstimateTx = {
  from?: Address;
  to?: Address;
  data?: Hex;
  value?: bigint;
  nonce?: number;
  gasPrice?: bigint;
  maxFeePerGas?: bigint;
  maxPriorityFeePerGas?: bigint;
};

/** eth_estimateGas plus a 10% margin, rounded up. */
export async function estimateGasWithMargin(rpc: RpcRequester, tx: GasEstimateTx): Promise<bigint> {
  const rpcTx: Record<string, string> = {};
  for (const [key, value] of Object.entries(tx)) {
    if (value === undefined) continue;
    rpcTx[key] = typeof value === 'string' ? value : toHex(value as bigint | number);
  }
  const estimate = BigInt(await rpc.request<Hex>('eth_estimateGas', [rpcTx]));
  return ceilDiv(estimate * 11n, 10n);
}
