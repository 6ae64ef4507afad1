// Token prices for fees paid in a token (gasless Solana and Stellar). A family names a source for
// each token (a market's API, or the fixed rate its policy gives); core keeps the contract, the
// arithmetic and the short-lived cache, so every source is converted and cached the same way.
import { ExpiringMap } from '../lib/expiring.js';
import { unavailable } from './domain-error.js';
import { slot, type StateOf } from './state.js';

/** Token base units one base unit of the native coin (lamport, stroop) buys: num / den. */
export interface Rate {
  num: bigint;
  den: bigint;
}

/** A source of rates for one family's tokens. It throws PriceError when it has no price. */
export interface PriceSource {
  /** Named in errors and the cache key (e.g. `jupiter`, `horizon`, `fixed`). */
  readonly name: string;
  /** The rate of `token`, asked by converting `probe` native base units (markets price an amount). */
  rate(token: string, probe: bigint): Promise<Rate>;
}

/** A source that gave no usable price (failed, timed out, answered nothing or zero). */
export class PriceError extends Error {
  override name = 'PriceError';
}

/** Parses a positive decimal (a JSON number or its text, exponent allowed) exactly, as num/den. */
export function decimalRate(value: number | string): Rate {
  const text = typeof value === 'number' ? value.toString() : value.trim();
  const m = /^(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i.exec(text);
  if (!m || (m[1] === '' && !m[2])) throw new PriceError(`not a decimal number: ${text}`);
  const frac = m[2] ?? '';
  let num = BigInt(`${m[1] || '0'}${frac}`);
  let den = 10n ** BigInt(frac.length);
  const exp = Number(m[3] ?? 0);
  if (exp > 0) num *= 10n ** BigInt(exp);
  else if (exp < 0) den *= 10n ** BigInt(-exp);
  if (num === 0n) throw new PriceError(`a rate of ${text} is no price`);
  return { num, den };
}

/**
 * The rate of a fixed price given as whole tokens per one whole native coin (`rate`), for a token
 * of `decimals` on a chain whose coin has `nativeDecimals` (SOL 9, XLM 7).
 */
export function fixedRate(rate: number, decimals: number, nativeDecimals: number): Rate {
  const r = decimalRate(rate);
  return { num: r.num * 10n ** BigInt(decimals), den: r.den * 10n ** BigInt(nativeDecimals) };
}

/** Token base units for `amount` native base units, rounded up (the relayer is never paid short). */
export function convert(rate: Rate, amount: bigint): bigint {
  const n = amount * rate.num;
  return (n + rate.den - 1n) / rate.den;
}

/** `amount` raised by `percent` (the policy's fee margin), rounded down as the reference does. */
export function withMargin(amount: bigint, percent: number | undefined): bigint {
  if (!percent) return amount;
  const r = decimalRate(percent);
  return amount + (amount * r.num) / (r.den * 100n);
}

/** Whole tokens per one whole native coin, as a decimal string (the answers' `conversion_rate`). */
export function wholeRate(rate: Rate, decimals: number, nativeDecimals: number): string {
  return ratio(rate.num * 10n ** BigInt(nativeDecimals), rate.den * 10n ** BigInt(decimals));
}

/** `amount` base units of a token of `decimals` as a decimal string without trailing zeros. */
export function uiAmount(amount: bigint, decimals: number): string {
  return ratio(amount, 10n ** BigInt(decimals));
}

function ratio(num: bigint, den: bigint, digits = 12): string {
  const whole = num / den;
  let rest = num % den;
  if (rest === 0n) return whole.toString();
  let frac = '';
  for (let i = 0; i < digits && rest !== 0n; i++) {
    rest *= 10n;
    frac += (rest / den).toString();
    rest %= den;
  }
  frac = frac.replace(/0+$/, '');
  return frac ? `${whole}.${frac}` : whole.toString();
}

const QUOTES = slot('price quotes', () => new Map<number, ExpiringMap<string, Promise<Rate>>>());

/**
 * The rate of `token` from `source`, reused for `cacheMs` (per runtime, per source and token).
 * A failure is never cached and never answered with an older price: it is an `unavailable` error
 * naming the source.
 */
export async function priceOf(rt: { state: StateOf }, source: PriceSource, token: string, probe: bigint, cacheMs: number): Promise<Rate> {
  const load = async () => {
    let rate: Rate;
    try {
      rate = await source.rate(token, probe);
    } catch (e) {
      throw unavailable(`price of ${token}: ${source.name} gave no price (${(e as Error).message})`);
    }
    if (rate.num <= 0n || rate.den <= 0n) throw unavailable(`price of ${token}: ${source.name} gave no price (a zero rate)`);
    return rate;
  };
  if (cacheMs <= 0) return load();
  const byTtl = rt.state(QUOTES);
  let cache = byTtl.get(cacheMs);
  if (!cache) byTtl.set(cacheMs, (cache = new ExpiringMap(cacheMs)));
  return cache.load(`${source.name}\u0000${token}`, load);
}

/** Fetches JSON with a deadline; any failure (network, status, timeout, body) is a PriceError. */
export async function fetchJson(url: string, timeoutMs: number): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  } catch (e) {
    const err = e as Error;
    throw new PriceError(err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `request failed: ${err.message}`);
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    const err = e as Error;
    throw new PriceError(err.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : `answer cut short: ${err.message}`);
  }
  if (!res.ok) throw new PriceError(`answered HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new PriceError('answered something that is not JSON');
  }
}
