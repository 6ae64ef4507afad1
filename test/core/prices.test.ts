// Price sources for gasless fees, against loopback stand-ins of Jupiter's and Horizon's APIs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convert, fixedRate, priceOf, uiAmount, wholeRate, withMargin } from '../../src/core/prices.js';
import { createState } from '../../src/core/state.js';
import { jupiterSource, WRAPPED_SOL_MINT } from '../../src/chains/solana/jupiter.js';
import { horizonSource } from '../../src/chains/stellar/horizon-price.js';
import { startHorizon, startJupiter, type PriceApi } from '../support/standins/price-apis.js';

const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const USDC_XLM = 'USDC:GA5ZSEJYB37JRC5AVCIA5MOP4RZTM7IDH43FJDXQCN3IEKRF2UNTLXUD';

describe('fixed rates', () => {
  it('fee_in_spl = ceil(fee_in_lamports x rate x 10^decimals / 10^9)', () => {
    // 150 USDC (6 decimals) per SOL: 5000 lamports cost 0.00075 USDC = 750 units.
    expect(convert(fixedRate(150, 6, 9), 5000n)).toBe(750n);
    // Rounds up, never down: 1 lamport at 150/SOL is 0.15 units -> 1.
    expect(convert(fixedRate(150, 6, 9), 1n)).toBe(1n);
    // Exact for rates a float cannot hold: 0.1 per SOL, 9 decimals, 3 lamports -> 0.3 -> 1.
    expect(convert(fixedRate(0.1, 9, 9), 3n)).toBe(1n);
    expect(convert(fixedRate(0.1, 9, 9), 30n)).toBe(3n);
    // 1e-7 tokens per SOL; 10^4 SOL is 0.001 token = 1000 units.
    expect(convert(fixedRate(1e-7, 6, 9), 10n ** 13n)).toBe(1000n);
    expect(wholeRate(fixedRate(150, 6, 9), 6, 9)).toBe('150');
    expect(wholeRate(fixedRate(0.25, 7, 7), 7, 7)).toBe('0.25');
  });

  it('the margin raises the lamports before conversion, rounded down', () => {
    expect(withMargin(5000n, 10)).toBe(5500n);
    expect(withMargin(5001n, 10)).toBe(5501n);
    expect(withMargin(5000n, undefined)).toBe(5000n);
    expect(withMargin(1000n, 2.5)).toBe(1025n);
  });

  it('ui amounts keep the token decimals exactly', () => {
    expect(uiAmount(750n, 6)).toBe('0.00075');
    expect(uiAmount(1_500_000n, 6)).toBe('1.5');
    expect(uiAmount(0n, 6)).toBe('0');
  });
});

describe('Jupiter', () => {
  let api: PriceApi;
  beforeAll(async () => {
    api = await startJupiter(150, 6);
  });
  afterAll(() => api.stop());
  const source = (timeoutMs = 3000) => jupiterSource({ baseUrl: api.url, timeoutMs, slippage: () => 1 });

  it('quotes wrapped SOL to the mint for the fee amount, and reuses the quote for the token', async () => {
    const rt = { state: createState() };
    api.queries.length = 0;
    const rate = await priceOf(rt, source(), USDC, 5000n, 10_000);
    expect(convert(rate, 5000n)).toBe(750n);
    expect(wholeRate(rate, 6, 9)).toBe('150');
    const q = api.queries[0];
    expect(Object.fromEntries(q)).toEqual({ inputMint: WRAPPED_SOL_MINT, outputMint: USDC, amount: '5000', slippageBps: '100' });
    await priceOf(rt, source(), USDC, 7000n, 10_000);
    expect(api.queries).toHaveLength(1);
    // Another runtime has its own cache.
    await priceOf({ state: createState() }, source(), USDC, 5000n, 10_000);
    expect(api.queries).toHaveLength(2);
  });

  it('an error status, a body without amounts, a zero quote and a timeout are errors, never cached', async () => {
    const rt = { state: createState() };
    const cases: [PriceApi['answer'], RegExp][] = [
      [() => [500, { error: 'upstream down' }], /jupiter gave no price \(answered HTTP 500/],
      [() => [200, 'not json'], /not JSON/],
      [() => [200, { inAmount: '5000' }], /no outAmount/],
      [() => [200, { inAmount: '5000', outAmount: '0' }], /zero amount/],
      ['hang', /no answer within 300 ms/],
    ];
    for (const [answer, message] of cases) {
      api.answer = answer;
      const err = await priceOf(rt, source(300), USDC, 5000n, 10_000).catch((e) => e);
      expect(err).toMatchObject({ kind: 'unavailable' });
      expect(err.message).toMatch(message);
    }
    const before = api.queries.length;
    api.answer = (await startJupiter(150, 6).then(async (j) => (await j.stop(), j))).answer;
    expect(convert(await priceOf(rt, source(), USDC, 5000n, 10_000), 5000n)).toBe(750n);
    expect(api.queries.length).toBe(before + 1);
  });
});

describe('Horizon', () => {
  let api: PriceApi;
  beforeAll(async () => {
    api = await startHorizon(0.12);
  });
  afterAll(() => api.stop());
  const source = (timeoutMs = 3000) => horizonSource({ horizonUrl: api.url, timeoutMs });

  it('asks a strict-send path from XLM for the fee amount', async () => {
    const rate = await priceOf({ state: createState() }, source(), USDC_XLM, 1_000_000n, 10_000);
    // 0.1 XLM at 0.12 USDC per XLM = 0.012 USDC = 120000 units (7 decimals).
    expect(convert(rate, 1_000_000n)).toBe(120_000n);
    expect(wholeRate(rate, 7, 7)).toBe('0.12');
    expect(Object.fromEntries(api.queries.at(-1)!)).toEqual({
      source_asset_type: 'native',
      source_amount: '0.1000000',
      destination_assets: USDC_XLM,
    });
  });

  it('no path, an error status and a timeout are errors; contract tokens have no order book', async () => {
    const rt = { state: createState() };
    const keep = api.answer;
    const cases: [PriceApi['answer'], RegExp][] = [
      [() => [200, { _embedded: { records: [] } }], /no path from XLM to USDC/],
      [() => [400, { title: 'Bad Request' }], /answered HTTP 400/],
      ['hang', /no answer within 300 ms/],
    ];
    for (const [answer, message] of cases) {
      api.answer = answer;
      await expect(priceOf(rt, source(300), USDC_XLM, 100n, 10_000)).rejects.toThrow(message);
    }
    api.answer = keep;
    await expect(priceOf(rt, source(), 'CDLZFC3SYJYDZT7K67VZ75HPJVIEUVNIXF47ZG2FB2RMQQVU2HHGCYSC', 100n, 10_000)).rejects.toThrow(/not a classic asset/);
    expect(convert(await priceOf(rt, source(), USDC_XLM, 100n, 10_000), 100n)).toBe(12n);
  });
});
