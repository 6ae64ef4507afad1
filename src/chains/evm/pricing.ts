import { bumpFees, capForBacklog, eip1559Fees, type Eip1559Fees, legacyGasPrice, type FeeParams, type Speed } from './fees.js';
import type { EvmContext } from './context.js';
import type { EvmRpc } from './rpc-client.js';

/** Fees as stored in JSON (decimal strings). */
export type FeesJson = { gasPrice: string } | { maxFeePerGas: string; maxPriorityFeePerGas: string };

export const feesToJson = (f: FeeParams): FeesJson =>
  'gasPrice' in f ? { gasPrice: f.gasPrice.toString() } : { maxFeePerGas: f.maxFeePerGas.toString(), maxPriorityFeePerGas: f.maxPriorityFeePerGas.toString() };

export const feesFromJson = (f: FeesJson): FeeParams =>
  'gasPrice' in f ? { gasPrice: BigInt(f.gasPrice) } : { maxFeePerGas: BigInt(f.maxFeePerGas), maxPriorityFeePerGas: BigInt(f.maxPriorityFeePerGas) };

/** The most a transaction may pay per gas under these fees. */
export const maxPricePerGas = (f: FeeParams) => ('gasPrice' in f ? f.gasPrice : f.maxFeePerGas);

// Market prices change once per block: one look per speed per second is plenty, and saves an RPC
// round trip per transaction. A cache only; a stale price is at worst resubmitted with a bump.
export function marketFees(rpc: EvmRpc, eip1559: boolean, speed: Speed): Promise<FeeParams> {
  return rpc.memo(`fees ${eip1559} ${speed}`, 1_000, () =>
    eip1559
      ? eip1559Fees(rpc, speed).then(({ maxFeePerGas, maxPriorityFeePerGas }): FeeParams => ({ maxFeePerGas, maxPriorityFeePerGas }))
      : legacyGasPrice(rpc, speed).then((gasPrice): FeeParams => ({ gasPrice })),
  );
}

/** The gas limit of the chain's latest block (it moves slowly, if at all: one look a minute). */
export function blockGasLimit(rpc: EvmRpc): Promise<bigint> {
  return rpc.memo('block gas limit', 60_000, () =>
    rpc.request<{ gasLimit?: string } | null>('eth_getBlockByNumber', ['latest', false]).then((b) => {
      if (!b?.gasLimit) throw new Error('the latest block has no gasLimit');
      return BigInt(b.gasLimit);
    }),
  );
}

/** Speed-derived fees held to the relayer's gas_price_cap (explicit prices above it are refused at accept). */
export function capFees(f: FeeParams, cap: bigint | undefined): FeeParams {
  if (cap === undefined) return f;
  if ('gasPrice' in f) return { gasPrice: f.gasPrice > cap ? cap : f.gasPrice };
  const maxFeePerGas = f.maxFeePerGas > cap ? cap : f.maxFeePerGas;
  return { maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : f.maxPriorityFeePerGas };
}

export type PriceRequest = { gasPrice?: string | null; maxFeePerGas?: string | null; maxPriorityFeePerGas?: string | null; speed?: Speed | null };

/** Whether the request leaves its fees to the market price for its speed. */
export const pricedBySpeed = (req: PriceRequest) => req.gasPrice == null && (req.maxFeePerGas == null || req.maxPriorityFeePerGas == null);

/**
 * Fees of a broadcast: the client's explicit prices, else the market price for its speed, its cap
 * raised for the `backlog` full blocks expected to be mined before it (capForBacklog).
 */
export async function requestFees(ctx: EvmContext, req: PriceRequest, backlog = 0): Promise<FeeParams> {
  if (req.gasPrice != null) return { gasPrice: BigInt(req.gasPrice) };
  if (!pricedBySpeed(req)) return { maxFeePerGas: BigInt(req.maxFeePerGas!), maxPriorityFeePerGas: BigInt(req.maxPriorityFeePerGas!) };
  const market = await marketFees(ctx.rpc, ctx.eip1559, req.speed ?? 'fast');
  return capFees('gasPrice' in market ? market : capForBacklog(market, backlog), ctx.policy.gas_price_cap);
}

const maxBig = (a: bigint, b: bigint) => (a > b ? a : b);

/**
 * The first bid of a transaction `place` nonces past its account's mined one while a line waits
 * on the chain: `level`, the cap the whole line needs, less a wei a place. Some nodes (anvil) mine
 * the highest cap first and, among equal caps, the first to arrive. A cap that grows with the
 * place, or an account's signings arriving together at one cap, would have the chain mine one
 * account's whole batch before the next account's first; a wei less a place takes each account's
 * next transaction in turn. The tip is kept (within the cap).
 */
export function bidInLine(f: Eip1559Fees, level: bigint, place: bigint): Eip1559Fees {
  // Never below what the line needs (`f`), should places outnumber the level's headroom in wei.
  const maxFeePerGas = maxBig(level - place, f.maxFeePerGas);
  return { maxFeePerGas, maxPriorityFeePerGas: f.maxPriorityFeePerGas > maxFeePerGas ? maxFeePerGas : f.maxPriorityFeePerGas };
}

/**
 * Fees for another broadcast at a nonce that already has one: each fee at least 10% above the
 * previous broadcast (what nodes require of a replacement) and at least today's price, within the
 * gas_price_cap and `limit` (what the relayer's balance covers). The type of the first broadcast
 * is kept. `capped`: a cap stopped a full bump.
 */
export function replacementFees(ctx: EvmContext, prev: FeeParams, fresh: FeeParams, limit?: bigint): FeeParams & { capped: boolean } {
  const policy = ctx.policy.gas_price_cap;
  const cap = policy === undefined || (limit !== undefined && limit < policy) ? limit : policy;
  const bumped = bumpFees(prev, { capWei: cap });
  if ('gasPrice' in bumped) {
    const freshPrice = maxPricePerGas(fresh);
    return { gasPrice: maxBig(bumped.gasPrice, cap === undefined || freshPrice <= cap ? freshPrice : cap), capped: bumped.capped };
  }
  const fresh1559 = 'gasPrice' in fresh ? { maxFeePerGas: fresh.gasPrice, maxPriorityFeePerGas: fresh.gasPrice } : fresh;
  const limited = capFees(fresh1559, cap) as { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint };
  const maxFeePerGas = maxBig(bumped.maxFeePerGas, limited.maxFeePerGas);
  let maxPriorityFeePerGas = maxBig(bumped.maxPriorityFeePerGas, limited.maxPriorityFeePerGas);
  if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas;
  return { maxFeePerGas, maxPriorityFeePerGas, capped: bumped.capped };
}
