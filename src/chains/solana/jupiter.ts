// Jupiter's quote API as a price source for SPL tokens: the rate at which it would swap SOL
// (wrapped) for the token, for the fee's own amount. The endpoint and fields are those the
// reference relayer uses (GET {base}/swap/v1/quote, inAmount/outAmount as decimal strings).
import { fetchJson, PriceError, type PriceSource } from '../../core/prices.js';

export const WRAPPED_SOL_MINT = 'So11111111111111111111111111111111111111112';

export function jupiterSource(opts: { baseUrl: string; timeoutMs: number; slippage: (mint: string) => number }): PriceSource {
  return {
    name: 'jupiter',
    async rate(mint, probe) {
      const q = new URLSearchParams({
        inputMint: WRAPPED_SOL_MINT,
        outputMint: mint,
        amount: (probe > 0n ? probe : 1_000_000n).toString(),
        slippageBps: String(Math.round(opts.slippage(mint) * 100)),
      });
      const body = (await fetchJson(`${opts.baseUrl}/swap/v1/quote?${q}`, opts.timeoutMs)) as { inAmount?: unknown; outAmount?: unknown } | null;
      const inAmount = amountOf(body?.inAmount, 'inAmount');
      const outAmount = amountOf(body?.outAmount, 'outAmount');
      if (inAmount === 0n || outAmount === 0n) throw new PriceError('quoted a zero amount');
      return { num: outAmount, den: inAmount };
    },
  };
}

function amountOf(v: unknown, name: string): bigint {
  if ((typeof v === 'string' && /^\d+$/.test(v)) || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0)) return BigInt(v);
  throw new PriceError(`answer has no ${name}`);
}
