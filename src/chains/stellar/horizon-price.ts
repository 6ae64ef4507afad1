// Horizon's order books as a price source for classic Stellar assets: what a strict-send path
// from XLM would deliver of the asset for the fee's own amount (GET {horizon}/paths/strict-send,
// the endpoint the reference relayer quotes with; its first record is the best path).
import { fetchJson, PriceError, type PriceSource } from '../../core/prices.js';

/** Stellar amounts are decimal strings with 7 places, in any asset. */
const STELLAR_DECIMALS = 7;

export function stroopsOf(amount: string): bigint {
  const m = /^(\d+)(?:\.(\d{1,7}))?$/.exec(amount);
  if (!m) throw new PriceError(`not a Stellar amount: ${amount}`);
  return BigInt(m[1]) * 10n ** BigInt(STELLAR_DECIMALS) + BigInt((m[2] ?? '').padEnd(STELLAR_DECIMALS, '0'));
}

export function amountOfStroops(stroops: bigint): string {
  const s = stroops.toString().padStart(STELLAR_DECIMALS + 1, '0');
  return `${s.slice(0, -STELLAR_DECIMALS)}.${s.slice(-STELLAR_DECIMALS)}`;
}

/** `CODE:ISSUER` of a classic asset; throws for native and contract tokens (no order book to ask). */
export function classicAsset(token: string): { code: string; issuer: string } {
  const m = /^([A-Za-z0-9]{1,12}):(G[A-Z2-7]{55})$/.exec(token);
  if (!m) throw new PriceError(`${token} is not a classic asset (CODE:ISSUER)`);
  return { code: m[1], issuer: m[2] };
}

export function horizonSource(opts: { horizonUrl: string; timeoutMs: number }): PriceSource {
  return {
    name: 'horizon',
    async rate(token, probe) {
      const { code, issuer } = classicAsset(token);
      const sent = probe > 0n ? probe : 10_000_000n;
      const q = new URLSearchParams({ source_asset_type: 'native', source_amount: amountOfStroops(sent), destination_assets: `${code}:${issuer}` });
      const body = (await fetchJson(`${opts.horizonUrl.replace(/\/+$/, '')}/paths/strict-send?${q}`, opts.timeoutMs)) as {
        _embedded?: { records?: { destination_amount?: unknown }[] };
      } | null;
      const best = body?._embedded?.records?.[0];
      if (!best) throw new PriceError(`no path from XLM to ${code}`);
      if (typeof best.destination_amount !== 'string') throw new PriceError('answer has no destination_amount');
      const received = stroopsOf(best.destination_amount);
      if (received === 0n) throw new PriceError('quoted a zero amount');
      return { num: received, den: sent };
    },
  };
}
