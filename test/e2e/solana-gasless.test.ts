// Gasless Solana through OpenZeppelin Relayer's own client: a user holding tokens and no SOL gets a
// quote and a built transaction, signs it and submits it; LiteSVM executes it with the SPL token
// program. The relayer pays the network fee and is paid in the token.
import {
  AccountRole,
  address,
  appendTransactionMessageInstructions,
  compileTransaction,
  createTransactionMessage,
  decompileTransactionMessage,
  getAddressEncoder,
  getBase64EncodedWireTransaction,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  partiallySignTransaction,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
  type Address,
  type Blockhash,
  type Instruction,
} from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSigner } from '../../src/signers/index.js';
import { ataOf, TOKEN_PROGRAM, transferChecked } from '../../src/chains/solana/token.js';
import { databaseKinds } from '../support/postgres.js';
import { startTestService } from '../support/service.js';
import { startSolanaRpc, type SolanaRpcStub } from '../support/solana-rpc.js';
import { startJupiter, type PriceApi } from '../support/standins/price-apis.js';
import { sdkClient, sdkError, type Client } from '../support/sdk.js';
import { keystores, localSigner, waitForStatus } from '../chains/stellar/support.js';
import { buildTx, party, SOL, transferSol, type Party } from '../chains/solana/support.js';
import { startProxy } from '../support/rpc-proxy.js';

const RELAYER = 'gasless';
const DOWN = 'gasless-down'; // its network's RPC goes away after start-up
const DECIMALS = 6;
const RATE = 150; // whole tokens per SOL (fixed: allowed_tokens[].conversion_rate)
const LIFETIME = 3_000;

/** Writes an initialized SPL mint and token accounts straight into LiteSVM's accounts. */
function tokens(stub: SolanaRpcStub) {
  const enc = getAddressEncoder();
  const rent = (size: number) => stub.svm.minimumBalanceForRentExemption(BigInt(size));
  const put = (at: string, data: Uint8Array) =>
    stub.svm.setAccount({
      address: address(at),
      lamports: rent(data.length),
      data,
      programAddress: address(TOKEN_PROGRAM),
      executable: false,
      space: BigInt(data.length),
    } as never);
  return {
    mint(at: Address, decimals: number) {
      const d = new Uint8Array(82);
      const v = new DataView(d.buffer);
      v.setBigUint64(36, 10n ** 15n, true);
      d[44] = decimals;
      d[45] = 1;
      put(at, d);
    },
    async account(owner: Address, mint: Address, amount: bigint) {
      const at = await ataOf(owner, mint, TOKEN_PROGRAM);
      const d = new Uint8Array(165);
      d.set(enc.encode(mint), 0);
      d.set(enc.encode(owner), 32);
      new DataView(d.buffer).setBigUint64(64, amount, true);
      d[108] = 1;
      put(at, d);
      return at;
    },
    async balance(owner: Address, mint: Address): Promise<bigint | null> {
      const acc = stub.svm.getAccount(await ataOf(owner, mint, TOKEN_PROGRAM));
      if (!acc?.exists || acc.data.length < 72) return null;
      return new DataView(acc.data.buffer, acc.data.byteOffset).getBigUint64(64, true);
    },
  };
}

describe.each(await databaseKinds())('gasless Solana through the SDK on %s', (db) => {
  let stub: SolanaRpcStub;
  let svc: Awaited<ReturnType<typeof startTestService>>;
  let client: Client;
  let keys: Awaited<ReturnType<typeof keystores>>;
  let jupiter: PriceApi;
  let relayer: Address;
  let user: Party;
  let dest: Party;
  let usdc: Address;
  let other: Address;
  let market: Address;
  let tk: ReturnType<typeof tokens>;
  let proxy: Awaited<ReturnType<typeof startProxy>>;

  const allowed = (maxFee = 1_000_000) => [
    { mint: usdc, decimals: DECIMALS, symbol: 'USDC', max_allowed_fee: maxFee, conversion_rate: RATE },
    { mint: market, symbol: 'MKT' },
  ];

  beforeAll(async () => {
    keys = await keystores();
    const key = await keys.create('solana');
    relayer = createLocalSigner(key.seed, 'solana').address as Address;
    [user, dest] = await Promise.all([party(), party()]);
    [usdc, other, market] = (await Promise.all([party(), party(), party()])).map((p) => p.address);
    stub = await startSolanaRpc({ airdrops: [{ address: relayer, lamports: 10n * SOL }], slotMs: 100, blockhashLifetime: LIFETIME, finalizedAfter: 6 });
    tk = tokens(stub);
    for (const m of [usdc, other, market]) tk.mint(m, DECIMALS);
    for (const m of [usdc, other, market]) await tk.account(user.address, m, 50_000_000n);
    jupiter = await startJupiter(200, DECIMALS);
    proxy = await startProxy(stub.url, (_, forward) => forward());
    svc = await startTestService({
      db,
      env: { JUPITER_API_URL: jupiter.url, PRICE_TIMEOUT_MS: '1000', PRICE_CACHE_MS: '0' },
      config: () => ({
        relayers: [
          {
            id: RELAYER,
            name: 'Gasless relayer',
            network: 'solana-local',
            network_type: 'solana',
            paused: false,
            signer_id: 'solana-key',
            policies: { fee_payment_strategy: 'user', fee_margin_percentage: 10, allowed_programs: [TOKEN_PROGRAM], allowed_tokens: allowed() },
          },
          {
            id: DOWN,
            name: 'Gasless relayer whose RPC goes away',
            network: 'solana-down',
            network_type: 'solana',
            paused: false,
            signer_id: 'solana-key',
            policies: { fee_payment_strategy: 'user', allowed_tokens: allowed() },
          },
        ],
        signers: [localSigner('solana-key', key.file)],
        notifications: [],
        networks: [
          { type: 'solana', network: 'solana-local', rpc_urls: [stub.url], average_blocktime_ms: 50, is_testnet: true },
          { type: 'solana', network: 'solana-down', rpc_urls: [proxy.url], average_blocktime_ms: 50, is_testnet: true },
        ],
      }),
    });
    client = await sdkClient(svc);
  });
  afterAll(async () => {
    await client?.close();
    await svc?.stop();
    await stub?.stop();
    await proxy?.close();
    await jupiter?.stop();
    await keys?.remove();
  });

  /** The user's own transaction: a token transfer to `dest`, the user as its fee payer, unsigned. */
  const userTx = async (amount: bigint, mint = usdc, extra: Instruction[] = []) => {
    const source = await ataOf(user.address, mint, TOKEN_PROGRAM);
    const to = await tk.account(dest.address, mint, 0n);
    const ix = transferChecked({ tokenProgram: TOKEN_PROGRAM, source, mint, destination: to, owner: user.address, amount, decimals: DECIMALS });
    return buildTx(user.address, [ix, ...extra], stub.svm.latestBlockhash() as Blockhash);
  };

  const userSigns = async (wire: string) => {
    const tx = getTransactionDecoder().decode(Buffer.from(wire, 'base64'));
    return getBase64EncodedWireTransaction(await partiallySignTransaction([user.keyPair], tx));
  };

  it('quotes, builds; the user signs and submits; it lands with the relayer paying SOL and being paid in the token', async () => {
    const transfer = 2_000_000n;
    const wire = await userTx(transfer);
    const quote = await client.relayers.quoteSponsoredTransaction(RELAYER, { transaction: wire, fee_token: usdc });
    expect(quote.data).toMatchObject({ success: true, data: { conversion_rate: '150', estimated_fee: expect.any(String) } });

    const built = (await client.relayers.buildSponsoredTransaction(RELAYER, { transaction: wire, fee_token: usdc })).data.data as {
      transaction: string;
      fee_in_spl: string;
      fee_in_lamports: string;
      fee_token: string;
      valid_until_blockheight: number;
    };
    expect(built).toMatchObject({ fee_token: usdc, valid_until_blockheight: expect.any(Number) });
    // The relayer has no token account yet: its rent is part of the fee, with the 10% margin.
    const rent = stub.svm.minimumBalanceForRentExemption(165n);
    const lamports = ((2n * 5000n + rent) * 110n) / 100n;
    expect(BigInt(built.fee_in_lamports)).toBe(lamports);
    const feeInSpl = (lamports * BigInt(RATE) * 10n ** BigInt(DECIMALS) + 10n ** 9n - 1n) / 10n ** 9n;
    expect(BigInt(built.fee_in_spl)).toBe(feeInSpl);
    expect((quote.data.data as { estimated_fee: string }).estimated_fee).toBe((Number(feeInSpl) / 10 ** DECIMALS).toString());

    const message = getCompiledTransactionMessageDecoder().decode(getTransactionDecoder().decode(Buffer.from(built.transaction, 'base64')).messageBytes);
    expect(message.staticAccounts[0]).toBe(relayer);

    const before = { user: await tk.balance(user.address, usdc), relayerSol: stub.svm.getBalance(relayer) ?? 0n };
    expect(await tk.balance(relayer, usdc)).toBeNull();
    const sent = await client.relayers.sendTransaction(RELAYER, { transaction: await userSigns(built.transaction) } as never);
    const id = (sent.data.data as { id: string }).id;
    const done = await waitForStatus(svc, RELAYER, id, ['confirmed', 'failed', 'expired'], 30_000);
    expect(done.status, done.status_reason).toBe('confirmed');

    expect(await tk.balance(user.address, usdc)).toBe(before.user! - transfer - feeInSpl);
    expect(await tk.balance(relayer, usdc)).toBe(feeInSpl);
    expect(await tk.balance(dest.address, usdc)).toBe(transfer);
    expect(stub.svm.getBalance(user.address) ?? 0n).toBe(0n);
    // The relayer paid both signatures and its token account's rent, and was paid more in tokens than that cost.
    expect(stub.svm.getBalance(relayer)).toBe(before.relayerSol - 10_000n - rent);
    const landed = getCompiledTransactionMessageDecoder().decode(
      getTransactionDecoder().decode(Buffer.from(stub.executed.at(-1)!.wire, 'base64')).messageBytes,
    );
    expect(landed.staticAccounts[0]).toBe(relayer);
  });

  it('answers the same through GraphQL (sponsoredQuote, buildSponsoredTransaction)', async () => {
    const wire = await userTx(1_000n);
    const r = await svc.gql(
      `mutation($r: ID!, $q: JSON!) { q: sponsoredQuote(relayerId: $r, request: $q) b: buildSponsoredTransaction(relayerId: $r, request: $q) }`,
      { r: RELAYER, q: { transaction: wire, fee_token: usdc } },
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.q).toEqual({ estimated_fee: expect.any(String), conversion_rate: '150' });
    expect(r.data.b).toMatchObject({ fee_token: usdc, transaction: expect.any(String), valid_until_blockheight: expect.any(Number) });
    const refused = await svc.gql(`mutation($r: ID!, $q: JSON!) { sponsoredQuote(relayerId: $r, request: $q) }`, {
      r: RELAYER,
      q: { transaction: wire, fee_token: other },
    });
    expect(refused.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_REQUEST', detail: expect.stringMatching(/^policy allowed_tokens/) } });
  });

  it('a price source that fails or does not answer is a 400 naming it (as every unreachable dependency here), never an old or zero price', async () => {
    const wire = await userTx(1n, market);
    const keep = jupiter.answer;
    try {
      for (const [answer, why] of [
        [() => [500, { error: 'down' }], /jupiter gave no price \(answered HTTP 500/],
        [() => [200, { inAmount: '5000', outAmount: '0' }], /jupiter gave no price \(quoted a zero amount\)/],
        ['hang', /jupiter gave no price \(no answer within 1000 ms\)/],
      ] as [PriceApi['answer'], RegExp][]) {
        jupiter.answer = answer;
        const res = await sdkError(client.relayers.quoteSponsoredTransaction(RELAYER, { transaction: wire, fee_token: market }));
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(why);
      }
    } finally {
      jupiter.answer = keep;
    }
    expect((await client.relayers.quoteSponsoredTransaction(RELAYER, { transaction: wire, fee_token: market })).status).toBe(200);
  });

  it('prices a token without a fixed rate with Jupiter', async () => {
    const built = (await client.relayers.buildSponsoredTransaction(RELAYER, { transaction: await userTx(1n, market), fee_token: market })).data.data as {
      fee_in_spl: string;
      fee_in_lamports: string;
    };
    // 200 tokens per SOL at the Jupiter stand-in.
    expect(BigInt(built.fee_in_spl)).toBe((BigInt(built.fee_in_lamports) * 200n * 10n ** 6n) / 10n ** 9n);
    expect(jupiter.queries.at(-1)!.get('outputMint')).toBe(market);
  });

  it('refuses, naming the rule, and signs or sends nothing: a token not allowed, a program not allowed, a fee over max_allowed_fee', async () => {
    const executed = stub.executed.length;
    const wire = await userTx(1_000n);
    const notAllowed = await sdkError(client.relayers.quoteSponsoredTransaction(RELAYER, { transaction: wire, fee_token: other }));
    expect(notAllowed.status).toBe(400);
    expect(notAllowed.body.error).toMatch(/policy allowed_tokens: fee token \w+ is not allowed/);

    const withSystem = await userTx(1_000n, usdc, [transferSol(user.address, dest.address, 1n)]);
    const program = await sdkError(client.relayers.buildSponsoredTransaction(RELAYER, { transaction: withSystem, fee_token: usdc }));
    expect(program.status).toBe(400);
    expect(program.body.error).toMatch(/policy allowed_programs: instruction \d calls program 11111111111111111111111111111111/);

    await client.relayers.updateRelayer(RELAYER, { policies: { allowed_tokens: allowed(1) } } as never);
    try {
      const over = await sdkError(client.relayers.buildSponsoredTransaction(RELAYER, { transaction: wire, fee_token: usdc }));
      expect(over.status).toBe(400);
      expect(over.body.error).toMatch(/policy max_allowed_fee: fee \d+ of \w+ exceeds the token's max_allowed_fee of 1/);
    } finally {
      await client.relayers.updateRelayer(RELAYER, { policies: { allowed_tokens: allowed() } } as never);
    }
    const malformed = await sdkError(client.relayers.quoteSponsoredTransaction(RELAYER, { transaction: 'AA==', fee_token: usdc }));
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toMatch(/^transaction: is not a valid Solana wire transaction/);
    const relayerPays = await buildTx(relayer, [transferSol(dest.address, user.address, 1n)], stub.svm.latestBlockhash() as Blockhash);
    const odd: [unknown, RegExp][] = [
      [{}, /transaction: required; fee_token: required/],
      [{ transaction: 5, fee_token: usdc }, /transaction: must be a base64 string/],
      [{ transaction: wire, fee_token: 'not-a-mint' }, /fee_token: must be a base58 mint address/],
      [{ transaction: wire, fee_token: '11111111111111111111111111111111' }, /policy allowed_tokens/],
      [{ transaction: relayerPays, fee_token: usdc }, /^transaction: its fee payer must be the user/],
      [[1, 2], /^body: must be a JSON object with transaction and fee_token/],
    ];
    for (const [body, why] of odd) {
      const res = await svc.request('POST', `/api/v1/relayers/${RELAYER}/transactions/sponsored/quote`, body);
      const json = (await res.json()) as { error: string };
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(json.error).toMatch(why);
    }
    expect(stub.executed.length).toBe(executed);
  });

  it('refuses a tampered build (fee transfer removed) and an expired one', async () => {
    const executed = stub.executed.length;
    const built = (await client.relayers.buildSponsoredTransaction(RELAYER, { transaction: await userTx(1_000n), fee_token: usdc })).data.data as {
      transaction: string;
    };
    const compiled = getCompiledTransactionMessageDecoder().decode(getTransactionDecoder().decode(Buffer.from(built.transaction, 'base64')).messageBytes);
    const decompiled = decompileTransactionMessage(compiled);
    const relayerAta = await ataOf(relayer, usdc, TOKEN_PROGRAM);
    const kept = decompiled.instructions.filter((ix) => !ix.accounts?.some((a) => a.address === relayerAta && a.role === AccountRole.WRITABLE));
    expect(kept.length).toBe(decompiled.instructions.length - 1);
    const tampered = compileTransaction(
      appendTransactionMessageInstructions(
        kept,
        setTransactionMessageLifetimeUsingBlockhash(
          decompiled.lifetimeConstraint as { blockhash: Blockhash; lastValidBlockHeight: bigint },
          setTransactionMessageFeePayer(relayer, createTransactionMessage({ version: 0 })),
        ),
      ),
    );
    const res = await svc.request('POST', `/api/v1/relayers/${RELAYER}/transactions`, {
      transaction: getBase64EncodedWireTransaction(await partiallySignTransaction([user.keyPair], tampered)),
    });
    const body = (await res.json()) as { error: string };
    expect(res.status).toBe(400);
    expect(body.error).toMatch(/policy fee_payment_strategy: .*pays the relayer no fee/);

    const late = await userSigns(built.transaction);
    stub.advance(LIFETIME + 1);
    const expired = await svc.request('POST', `/api/v1/relayers/${RELAYER}/transactions`, { transaction: late });
    expect(expired.status).toBe(400);
    expect(((await expired.json()) as { error: string }).error).toMatch(/blockhash is missing or expired/);
    expect(stub.executed.length).toBe(executed);
  });

  it("answers the reference's Solana JSON-RPC methods through /rpc: gasless preparation, signing and sending", async () => {
    type Answer = { result?: any; error?: { code: number; message: string; description: string } };
    const rpc = async (method: string, params: unknown) =>
      (await client.relayers.rpc(RELAYER, { jsonrpc: '2.0', id: 1, method, params } as never)).data as unknown as Answer;

    expect((await rpc('getFeaturesEnabled', {})).result).toEqual({ features: ['gasless'] });
    expect((await rpc('getSupportedTokens', {})).result.tokens).toEqual([
      { mint: usdc, symbol: 'USDC', decimals: DECIMALS, max_allowed_fee: 1_000_000, conversion_slippage_percentage: 1 },
      { mint: market, symbol: 'MKT', decimals: 0, conversion_slippage_percentage: 1 },
    ]);
    const wire = await userTx(1_500_000n);
    const estimate = (await rpc('feeEstimate', { transaction: wire, fee_token: usdc })).result;
    expect(estimate).toEqual({ estimated_fee: expect.any(String), conversion_rate: '150' });
    const refused = await rpc('feeEstimate', { transaction: wire, fee_token: other });
    expect(refused.error).toMatchObject({ code: -32013, message: 'PREPARATION_ERROR', description: expect.stringMatching(/^policy allowed_tokens/) });

    const before = await tk.balance(dest.address, usdc);
    const prepared = (await rpc('prepareTransaction', { transaction: wire, fee_token: usdc })).result;
    expect(prepared).toMatchObject({ fee_token: usdc, fee_in_spl: expect.any(String), valid_until_blockheight: expect.any(Number) });
    const signed = await userSigns(prepared.transaction);
    const sent = (await rpc('signAndSendTransaction', { transaction: signed })).result;
    expect(sent).toEqual({ transaction: expect.any(String), signature: expect.any(String), id: expect.any(String) });
    const done = await waitForStatus(svc, RELAYER, sent.id, ['confirmed', 'failed', 'expired'], 30_000);
    expect(done.status, done.status_reason).toBe('confirmed');
    expect(done.hash).toBe(sent.signature);
    expect(await tk.balance(dest.address, usdc)).toBe(before! + 1_500_000n);

    // transferTransaction builds the user's token transfer itself.
    const transfer = (await rpc('transferTransaction', { amount: 700_000, token: usdc, source: user.address, destination: dest.address })).result;
    const again = (await rpc('signAndSendTransaction', { transaction: await userSigns(transfer.transaction) })).result;
    expect((await waitForStatus(svc, RELAYER, again.id, ['confirmed', 'failed', 'expired'], 30_000)).status).toBe('confirmed');
    expect(await tk.balance(dest.address, usdc)).toBe(before! + 2_200_000n);

    // signTransaction of a transaction that pays the relayer nothing is refused: its users pay its fees.
    const unpaid = await buildTx(
      relayer,
      [
        transferChecked({
          tokenProgram: TOKEN_PROGRAM,
          source: await ataOf(user.address, usdc, TOKEN_PROGRAM),
          mint: usdc,
          destination: await ataOf(dest.address, usdc, TOKEN_PROGRAM),
          owner: user.address,
          amount: 1n,
          decimals: DECIMALS,
        }),
      ],
      stub.svm.latestBlockhash() as Blockhash,
      [user.keyPair],
    );
    const noFee = await rpc('signTransaction', { transaction: unpaid });
    expect(noFee.error).toMatchObject({ code: -32013, description: expect.stringMatching(/^policy fee_payment_strategy/) });
  });

  it('answers a clear error, not a 500, when the Solana RPC cannot be reached: quote, build, send and the /rpc methods', async () => {
    const wire = await userTx(1_000n);
    const source = await ataOf(user.address, usdc, TOKEN_PROGRAM);
    const to = await ataOf(dest.address, usdc, TOKEN_PROGRAM);
    const ix = transferChecked({ tokenProgram: TOKEN_PROGRAM, source, mint: usdc, destination: to, owner: user.address, amount: 1n, decimals: DECIMALS });
    const relayerPays = await buildTx(relayer, [ix], stub.svm.latestBlockhash() as Blockhash, [user.keyPair]);
    // Started while its RPC answered (so it is enabled); now nothing listens on that port.
    expect((await client.relayers.getRelayer(DOWN)).data.data).toMatchObject({ system_disabled: false });
    await proxy.close();
    const unreachable = /^the network's Solana RPC does not answer: no RPC endpoint available for \w+: 127\.0\.0\.1:\d+: /;
    for (const call of [
      () => client.relayers.quoteSponsoredTransaction(DOWN, { transaction: wire, fee_token: usdc }),
      () => client.relayers.buildSponsoredTransaction(DOWN, { transaction: wire, fee_token: usdc }),
      () => client.relayers.sendTransaction(DOWN, { transaction: relayerPays } as never),
    ]) {
      const res = await sdkError(call());
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: expect.stringMatching(unreachable) });
    }
    const gql = await svc.gql(`mutation($r: ID!, $q: JSON!) { sponsoredQuote(relayerId: $r, request: $q) }`, {
      r: DOWN,
      q: { transaction: wire, fee_token: usdc },
    });
    expect(gql.errors?.[0]).toMatchObject({ extensions: { code: 'BAD_REQUEST', detail: expect.stringMatching(unreachable) } });

    type Answer = { result?: unknown; error?: { code: number; message: string; description: string } };
    const rpc = async (method: string, params: unknown) =>
      (await client.relayers.rpc(DOWN, { jsonrpc: '2.0', id: 1, method, params } as never)).data as unknown as Answer;
    const transfer = { amount: 1, token: usdc, source: user.address, destination: dest.address };
    for (const [method, params] of [
      ['feeEstimate', { transaction: wire, fee_token: usdc }],
      ['prepareTransaction', { transaction: wire, fee_token: usdc }],
      ['transferTransaction', transfer],
    ] as const) {
      const answer = await rpc(method, params);
      expect(answer.result, method).toBeUndefined();
      expect(answer.error, method).toMatchObject({ code: -32006, message: 'PREPARATION_ERROR', description: expect.stringMatching(unreachable) });
    }
    expect(((await client.relayers.listTransactions(DOWN, 1, 100)).data.data as unknown[]).length).toBe(0);
  });
});
