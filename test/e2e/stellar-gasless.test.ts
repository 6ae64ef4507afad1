// Gasless Stellar through OpenZeppelin Relayer's own client: a user pays a transaction's fee in a
// classic asset (USDC over a trustline) instead of XLM. It gets a quote and a built transaction,
// signs it and submits it with fee_bump; the Stellar stand-in checks the signatures and moves the
// asset over trustlines. The relayer pays the XLM fee and is paid in USDC. A Soroban call is paid in
// a token contract through the FeeForwarder; the stand-in interprets the token and the FeeForwarder
// natively (no contract wasm runs) and checks the user's authorization signature.
import { Account, Address, Asset, authorizeEntry, Keypair, nativeToScVal, Operation, Transaction, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databaseKinds } from '../support/postgres.js';
import { startTestService } from '../support/service.js';
import { startStellarRpc, type StellarRpcStub } from '../support/stellar-rpc.js';
import { startHorizon, type PriceApi } from '../support/standins/price-apis.js';
import { sdkClient, sdkError, type Client } from '../support/sdk.js';
import { keystores, localSigner, waitForStatus } from '../chains/stellar/support.js';
import { startProxy } from '../support/rpc-proxy.js';

const PASSPHRASE = 'Relayer Gasless Test Network ; 2026';
const RELAYER = 'stellar-gasless';
const SOROBAN = 'stellar-soroban'; // a relayer of its own (its own account) for contract fee tokens
const DOWN = 'stellar-down'; // its network's RPC goes away after start-up
const TOKEN_RATE = 2; // whole tokens per XLM
const XLM = 10_000_000n;
const RATE = 0.5; // whole USDC per XLM (fixed: allowed_tokens[].conversion_rate)
const MARGIN = 10;

type Built = {
  transaction: string;
  fee_in_token: string;
  fee_in_token_ui: string;
  fee_in_stroops: string;
  fee_token: string;
  valid_until: string;
};

describe.each(await databaseKinds())('gasless Stellar through the SDK on %s', (db) => {
  let stub: StellarRpcStub;
  let horizon: PriceApi;
  let svc: Awaited<ReturnType<typeof startTestService>>;
  let client: Client;
  let keys: Awaited<ReturnType<typeof keystores>>;
  let relayer: string;
  let sorobanRelayer: string;
  let token: string;
  let forwarder: string;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  const issuer = Keypair.random();
  const user = Keypair.random();
  const dest = Keypair.random();
  const USDC = `USDC:${issuer.publicKey()}`;
  const MARKET = `MARKET:${issuer.publicKey()}`;
  const OTHER = `OTHER:${issuer.publicKey()}`;

  const allowed = (maxFee = 1_000_000) => [{ asset: USDC, max_allowed_fee: maxFee, conversion_rate: RATE }, { asset: MARKET }, { asset: 'native' }];
  const policies = (maxFee?: number) => ({ fee_payment_strategy: 'user', fee_margin_percentage: MARGIN, allowed_tokens: allowed(maxFee) });
  const sorobanPolicies = (maxFee = 1_000_000) => ({
    fee_payment_strategy: 'user',
    fee_margin_percentage: MARGIN,
    allowed_tokens: [{ asset: token, max_allowed_fee: maxFee, conversion_rate: TOKEN_RATE }],
  });

  beforeAll(async () => {
    keys = await keystores();
    const key = await keys.create('stellar');
    relayer = Keypair.fromRawEd25519Seed(Buffer.from(key.seed)).publicKey();
    const key2 = await keys.create('stellar-soroban');
    sorobanRelayer = Keypair.fromRawEd25519Seed(Buffer.from(key2.seed)).publicKey();
    stub = await startStellarRpc({
      networkPassphrase: PASSPHRASE,
      ledgerIntervalMs: 100,
      accounts: [
        { address: relayer, balance: 1_000n * XLM, sequence: 1n << 40n },
        { address: sorobanRelayer, balance: 1_000n * XLM, sequence: 1n << 41n },
        { address: issuer.publicKey(), balance: 100n * XLM, sequence: 1n << 36n },
        { address: user.publicKey(), balance: 5n * XLM, sequence: 7_000n },
        { address: dest.publicKey(), balance: 5n * XLM, sequence: 9_000n },
      ],
    });
    for (const asset of [USDC, MARKET, OTHER]) {
      stub.setTrustline(user.publicKey(), asset, 100n * XLM);
      stub.setTrustline(dest.publicKey(), asset, 0n);
      stub.setTrustline(relayer, asset, 0n);
    }
    token = stub.addToken({ [user.publicKey()]: 100n * XLM });
    forwarder = stub.addFeeForwarder();
    proxy = await startProxy(stub.url, (_, forward) => forward());
    horizon = await startHorizon(0.12);
    svc = await startTestService({
      db,
      env: { PRICE_TIMEOUT_MS: '1000', PRICE_CACHE_MS: '0', STELLAR_TESTNET_FEE_FORWARDER_ADDRESS: forwarder },
      config: () => ({
        relayers: [
          { id: RELAYER, name: 'Gasless Stellar', network: 'stellar-local', network_type: 'stellar', paused: false, signer_id: 'key', policies: policies() },
          {
            id: SOROBAN,
            name: 'Gasless Soroban',
            network: 'stellar-local',
            network_type: 'stellar',
            paused: false,
            signer_id: 'key2',
            policies: sorobanPolicies(),
          },
          {
            id: DOWN,
            name: 'Gasless Stellar, RPC gone',
            network: 'stellar-down',
            network_type: 'stellar',
            paused: false,
            signer_id: 'key',
            policies: policies(),
          },
        ],
        signers: [localSigner('key', key.file), localSigner('key2', key2.file)],
        notifications: [],
        networks: [
          {
            type: 'stellar',
            network: 'stellar-local',
            rpc_urls: [stub.url],
            passphrase: PASSPHRASE,
            horizon_url: horizon.url,
            average_blocktime_ms: 100,
            is_testnet: true,
          },
          { type: 'stellar', network: 'stellar-down', rpc_urls: [proxy.url], passphrase: PASSPHRASE, average_blocktime_ms: 100, is_testnet: true },
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
    await horizon?.stop();
    await keys?.remove();
  });

  /** The reference's operation form: a payment of `amount` stroops of USDC to dest. */
  const usdcPayment = (amount: number) => ({
    type: 'payment',
    destination: dest.publicKey(),
    amount,
    asset: { type: 'credit4', code: 'USDC', issuer: issuer.publicKey() },
  });
  const byOperations = (amount: number, feeToken = USDC) => ({ operations: [usdcPayment(amount)], source_account: user.publicKey(), fee_token: feeToken });
  /** The user's own transaction, as a wallet would build it: the user as source, unsigned. */
  const userXdr = (ops = [Operation.payment({ destination: dest.publicKey(), asset: new Asset('USDC', issuer.publicKey()), amount: '0.0001' })]) => {
    const b = new TransactionBuilder(new Account(user.publicKey(), stub.account(user.publicKey())!.sequence.toString()), {
      fee: '100',
      networkPassphrase: PASSPHRASE,
    });
    for (const op of ops) b.addOperation(op);
    return b.setTimeout(0).build().toXDR();
  };
  const signed = (xdrText: string) => {
    const tx = new Transaction(xdrText, PASSPHRASE);
    tx.sign(user);
    return tx.toXDR();
  };
  const submit = (transactionXdr: string) =>
    client.relayers.sendTransaction(RELAYER, { network: 'stellar-local', transaction_xdr: transactionXdr, fee_bump: true } as never);
  const build = async (body: object) => (await client.relayers.buildSponsoredTransaction(RELAYER, body as never)).data.data as unknown as Built;

  it('quotes and builds; the user signs and submits; it lands with the relayer paying XLM and being paid in USDC', async () => {
    const amount = 20_000_000; // 2 USDC
    const quote = await client.relayers.quoteSponsoredTransaction(RELAYER, byOperations(amount) as never);
    // One operation of the user's, the fee payment and the fee bump: 300 stroops, 330 with the margin, at 0.5 USDC per XLM.
    expect(quote.data).toEqual({
      success: true,
      data: { fee_in_token: '165', fee_in_token_ui: '0.0000165', conversion_rate: '0.5' },
      error: null,
      metadata: expect.anything(),
    });

    const before = Date.now();
    const built = await build(byOperations(amount));
    expect(built).toEqual({
      transaction: expect.any(String),
      fee_in_token: '165',
      fee_in_token_ui: '0.0000165',
      fee_in_stroops: '330',
      fee_token: USDC,
      valid_until: expect.any(String),
    });
    const tx = new Transaction(built.transaction, PASSPHRASE);
    expect(tx.source).toBe(user.publicKey());
    expect(tx.signatures).toHaveLength(0);
    expect(tx.operations.map((op) => op.type)).toEqual(['payment', 'payment']);
    expect(tx.operations[1]).toMatchObject({ destination: relayer, amount: '0.0000165' });
    expect((tx.operations[1] as Operation.Payment).asset.getCode()).toBe('USDC');
    // Valid for the reference's two minutes.
    const maxTime = Number(tx.timeBounds!.maxTime);
    expect(maxTime * 1000).toBe(Date.parse(built.valid_until));
    expect(maxTime - Math.floor(before / 1000)).toBeGreaterThanOrEqual(119);
    expect(maxTime - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(120);

    const was = {
      userXlm: stub.account(user.publicKey())!.balance,
      relayerXlm: stub.account(relayer)!.balance,
      userUsdc: stub.trustline(user.publicKey(), USDC)!,
      relayerUsdc: stub.trustline(relayer, USDC)!,
      destUsdc: stub.trustline(dest.publicKey(), USDC)!,
    };
    const sent = await submit(signed(built.transaction));
    const id = (sent.data.data as { id: string }).id;
    const done = await waitForStatus(svc, RELAYER, id, ['confirmed', 'failed', 'expired'], 30_000);
    expect(done.status, done.status_reason).toBe('confirmed');
    expect(done).toMatchObject({ fee_bump: true, fee_payer: relayer, source_account: user.publicKey() });

    expect(stub.trustline(user.publicKey(), USDC)).toBe(was.userUsdc - BigInt(amount) - 165n);
    expect(stub.trustline(relayer, USDC)).toBe(was.relayerUsdc + 165n);
    expect(stub.trustline(dest.publicKey(), USDC)).toBe(was.destUsdc + BigInt(amount));
    expect(stub.account(user.publicKey())!.balance).toBe(was.userXlm);
    // The relayer paid the fee bump: 100 stroops for each of the two operations and for the bump itself.
    expect(stub.account(relayer)!.balance).toBe(was.relayerXlm - 300n);
    expect(stub.applied().filter((a) => a.source === user.publicKey())).toHaveLength(1);
  });

  it('takes a transaction_xdr, prices a token without a fixed rate with Horizon, and answers the same through GraphQL', async () => {
    const txXdr = userXdr();
    const r = await svc.gql(
      `mutation($r: ID!, $q: JSON!, $m: JSON!) { q: sponsoredQuote(relayerId: $r, request: $q) b: buildSponsoredTransaction(relayerId: $r, request: $m) }`,
      { r: RELAYER, q: { transaction_xdr: txXdr, fee_token: USDC }, m: { transaction_xdr: txXdr, fee_token: MARKET } },
    );
    expect(r.errors).toBeUndefined();
    expect(r.data.q).toEqual({ fee_in_token: '165', fee_in_token_ui: '0.0000165', conversion_rate: '0.5' });
    // 0.12 MARKET per XLM at the Horizon stand-in, asked for the fee's own amount.
    expect(r.data.b).toMatchObject({ fee_token: MARKET, fee_in_stroops: '330', fee_in_token: String(Math.ceil(330 * 0.12)) });
    const q = horizon.queries.at(-1)!;
    expect(Object.fromEntries(q)).toEqual({ source_asset_type: 'native', source_amount: '0.0000330', destination_assets: MARKET });

    // XLM itself: the fee in stroops, at a rate of 1.
    const native = await client.relayers.quoteSponsoredTransaction(RELAYER, { transaction_xdr: txXdr, fee_token: 'native' } as never);
    expect(native.data.data).toEqual({ fee_in_token: '330', fee_in_token_ui: '0.000033', conversion_rate: '1' });
  });

  it('a Horizon that fails, answers nothing usable or does not answer is a 400 naming it, never an old or zero price', async () => {
    const body = { transaction_xdr: userXdr(), fee_token: MARKET };
    const keep = horizon.answer;
    try {
      for (const [answer, why] of [
        [() => [503, { title: 'Service Unavailable' }], /horizon gave no price \(answered HTTP 503/],
        [() => [200, { _embedded: { records: [] } }], /horizon gave no price \(no path from XLM to MARKET\)/],
        [() => [200, { _embedded: { records: [{ destination_amount: '0.0000000' }] } }], /horizon gave no price \(quoted a zero amount\)/],
        ['hang', /horizon gave no price \(no answer within 1000 ms\)/],
      ] as [PriceApi['answer'], RegExp][]) {
        horizon.answer = answer;
        const res = await sdkError(client.relayers.quoteSponsoredTransaction(RELAYER, body as never));
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(why);
      }
    } finally {
      horizon.answer = keep;
    }
    expect((await client.relayers.quoteSponsoredTransaction(RELAYER, body as never)).status).toBe(200);
  });

  it('refuses, naming the rule, and signs or sends nothing: a token not allowed, a fee over max_allowed_fee, odd requests', async () => {
    const applied = stub.applied().length;
    const notAllowed = await sdkError(client.relayers.quoteSponsoredTransaction(RELAYER, byOperations(1, OTHER) as never));
    expect(notAllowed.status).toBe(400);
    expect(notAllowed.body.error).toBe(`policy allowed_tokens: fee token ${OTHER} is not allowed`);

    await client.relayers.updateRelayer(RELAYER, { policies: policies(100) } as never);
    try {
      const over = await sdkError(client.relayers.buildSponsoredTransaction(RELAYER, byOperations(1) as never));
      expect(over.status).toBe(400);
      expect(over.body.error).toBe(`policy max_allowed_fee: fee 165 of ${USDC} exceeds the token's max_allowed_fee of 100`);
    } finally {
      await client.relayers.updateRelayer(RELAYER, { policies: policies() } as never);
    }
    const contract = 'CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA';
    const odd: [unknown, RegExp][] = [
      [{}, /^fee_token: required/],
      [{ fee_token: USDC }, /^transaction_xdr: required: give either transaction_xdr or operations/],
      [{ ...byOperations(1), transaction_xdr: userXdr() }, /^transaction_xdr: cannot be given with operations/],
      [{ operations: [usdcPayment(1)], fee_token: USDC }, /^source_account: required when providing operations/],
      [{ transaction_xdr: 'AAAA', fee_token: USDC }, /^transaction_xdr: is not a valid base64 transaction envelope/],
      [{ transaction_xdr: userXdr(), fee_token: 'USDC' }, /^fee_token: must be "native", CODE:ISSUER/],
      [{ transaction_xdr: userXdr(), fee_token: USDC, extra: 1 }, /^extra: unknown field/],
      [{ operations: [{ ...usdcPayment(1), amount: -5 }], source_account: user.publicKey(), fee_token: USDC }, /^operations\[0\]\.amount:/],
      [
        { transaction_xdr: userXdr([Operation.setOptions({ homeDomain: 'x.org' })]), fee_token: USDC },
        /^transaction: operation 0: SetOptions operations are not allowed/,
      ],
      [{ transaction_xdr: userXdr([Operation.accountMerge({ destination: relayer })]), fee_token: USDC }, /^transaction: operation 0: AccountMerge/],
      [[1, 2], /^body: must be a JSON object/],
    ];
    await client.relayers.updateRelayer(RELAYER, { policies: { ...policies(), allowed_tokens: [...allowed(), { asset: contract }] } } as never);
    try {
      odd.push([{ transaction_xdr: userXdr(), fee_token: contract }, /^fee_token: CA7Q\w+ is a contract token: it pays only for a Soroban call/]);
      for (const [body, why] of odd) {
        const res = await svc.request('POST', `/api/v1/relayers/${RELAYER}/transactions/sponsored/quote`, body);
        const json = (await res.json()) as { error: string };
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(json.error, JSON.stringify(body)).toMatch(why);
      }
    } finally {
      await client.relayers.updateRelayer(RELAYER, { policies: policies() } as never);
    }
    // A build needs the policy to say users pay.
    await client.relayers.updateRelayer(RELAYER, { policies: { ...policies(), fee_payment_strategy: 'relayer' } } as never);
    try {
      const res = await sdkError(client.relayers.buildSponsoredTransaction(RELAYER, byOperations(1) as never));
      expect(res.body.error).toMatch(/^policy fee_payment_strategy: sponsored builds need fee_payment_strategy "user"/);
    } finally {
      await client.relayers.updateRelayer(RELAYER, { policies: policies() } as never);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(stub.applied().length).toBe(applied);
  });

  it('signs without sending, as the reference does for a relayer whose users pay, only a transaction that pays it within two minutes', async () => {
    const built = await build(byOperations(1_000));
    const ok = await client.relayers.signTransaction(RELAYER, { unsigned_xdr: built.transaction } as never);
    const answer = ok.data.data as { signedXdr?: string; signed_xdr?: string; signature: string };
    const signedTx = new Transaction((answer.signed_xdr ?? answer.signedXdr)!, PASSPHRASE);
    expect(Keypair.fromPublicKey(relayer).verify(signedTx.hash(), Buffer.from(answer.signature, 'base64'))).toBe(true);

    const unpaid = await sdkError(client.relayers.signTransaction(RELAYER, { unsigned_xdr: userXdr() } as never));
    expect(unpaid.status).toBe(400);
    expect(unpaid.body.error).toMatch(/^unsigned_xdr: must have time bounds ending within 120 seconds/);
    const noFee = new Transaction(built.transaction, PASSPHRASE).toEnvelope();
    noFee.v1().tx().operations([noFee.v1().tx().operations()[0]]);
    const refused = await sdkError(client.relayers.signTransaction(RELAYER, { unsigned_xdr: noFee.toXDR('base64') } as never));
    expect(refused.body.error).toMatch(/^policy fee_payment_strategy: the relayer's users pay its fees, and the transaction pays the relayer no fee/);
  });

  it('refuses a tampered build (fee lowered, fee payment removed, altered after signing) and an expired one, sending nothing', async () => {
    const applied = stub.applied().length;
    const count = async () => ((await client.relayers.listTransactions(RELAYER, 1, 100)).data.data as unknown[]).length;
    const rows = await count();
    const built = await build(byOperations(1_000));
    const rebuilt = (edit: (ops: xdr.Operation[]) => xdr.Operation[]) => {
      const env = new Transaction(built.transaction, PASSPHRASE).toEnvelope();
      env.v1().tx().operations(edit(env.v1().tx().operations()));
      return new Transaction(env, PASSPHRASE).toXDR();
    };
    const feeOp = (stroops: string) => Operation.payment({ destination: relayer, asset: new Asset('USDC', issuer.publicKey()), amount: stroops });
    const cases: [string, RegExp][] = [
      [
        signed(rebuilt((ops) => [ops[0], feeOp('0.0000001')])),
        new RegExp(`policy fee_payment_strategy: the transaction pays the relayer 1 of ${USDC}, less than the fee of 165`),
      ],
      [signed(rebuilt((ops) => [ops[0]])), /policy fee_payment_strategy: the relayer's users pay its fees, and the transaction pays the relayer no fee/],
      [signed(rebuilt((ops) => [ops[0], feeOp('0.0000165'), feeOp('0.0000165')])), /exactly one payment, found 2/],
    ];
    // Signed, then its fee payment changed: the user's signature no longer covers it.
    const afterSigning = new Transaction(signed(built.transaction), PASSPHRASE).toEnvelope();
    afterSigning
      .v1()
      .tx()
      .operations([afterSigning.v1().tx().operations()[0], feeOp('0.0000001')]);
    cases.push([afterSigning.toXDR('base64'), /transaction_xdr: its source account \w+ has not signed it as it is/]);
    for (const [txXdr, why] of cases) {
      const res = await sdkError(submit(txXdr));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(why);
    }

    // The build unaltered, but past its two minutes.
    const late = signed(built.transaction);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.parse(built.valid_until) + 1_000 });
    try {
      const res = await sdkError(submit(late));
      expect(res.status).toBe(400);
      expect(res.body.error).toMatch(/has expired: its time bounds ended at/);
    } finally {
      vi.useRealTimers();
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(stub.applied().length).toBe(applied);
    expect(await count()).toBe(rows);
  });

  describe('a Soroban call paid in a token contract through the FeeForwarder', () => {
    type SorobanBuilt = Built & { user_auth_entry: string; max_fee_in_token: string; max_fee_in_token_ui: string };
    const i128 = (n: bigint) => nativeToScVal(n, { type: 'i128' });
    /** The user's own call, as a wallet builds it: the token's transfer to dest, the user as source, unsigned. */
    const transferXdr = (amount: bigint) =>
      new TransactionBuilder(new Account(user.publicKey(), stub.account(user.publicKey())!.sequence.toString()), { fee: '100', networkPassphrase: PASSPHRASE })
        .addOperation(
          Operation.invokeContractFunction({
            contract: token,
            function: 'transfer',
            args: [Address.fromString(user.publicKey()).toScVal(), Address.fromString(dest.publicKey()).toScVal(), i128(amount)],
          }),
        )
        .setTimeout(0)
        .build()
        .toXDR();
    const sorobanBuild = async (amount: bigint) =>
      (await client.relayers.buildSponsoredTransaction(SOROBAN, { transaction_xdr: transferXdr(amount), fee_token: token } as never)).data
        .data as unknown as SorobanBuilt;
    /** The user signs the entry it was given (the SDK's own authorizeEntry), valid to the entry's expiration. */
    const userSigns = async (entryXdr: string) => {
      const entry = xdr.SorobanAuthorizationEntry.fromXDR(entryXdr, 'base64');
      const signedEntry = await authorizeEntry(entry, user, entry.credentials().address().signatureExpirationLedger(), PASSPHRASE);
      return signedEntry.toXDR('base64');
    };
    const sorobanSubmit = (transactionXdr: string, signedAuthEntry: string) =>
      client.relayers.sendTransaction(SOROBAN, { network: 'stellar-local', transaction_xdr: transactionXdr, signed_auth_entry: signedAuthEntry } as never);
    const rowCount = async () => ((await client.relayers.listTransactions(SOROBAN, 1, 100)).data.data as unknown[]).length;

    it('quotes and builds with the max fee and the entry to sign; signed and submitted, it lands: the user pays the fee in the token', async () => {
      const amount = 3_000_000n;
      const quote = (await client.relayers.quoteSponsoredTransaction(SOROBAN, { transaction_xdr: transferXdr(amount), fee_token: token } as never)).data
        .data as unknown as Record<string, string>;
      expect(Object.keys(quote).sort()).toEqual(['conversion_rate', 'fee_in_token', 'fee_in_token_ui', 'max_fee_in_token', 'max_fee_in_token_ui']);
      expect(quote.conversion_rate).toBe('2');

      const before = Date.now();
      const built = await sorobanBuild(amount);
      expect(Object.keys(built).sort()).toEqual(
        [
          'fee_in_stroops',
          'fee_in_token',
          'fee_in_token_ui',
          'fee_token',
          'max_fee_in_token',
          'max_fee_in_token_ui',
          'transaction',
          'user_auth_entry',
          'valid_until',
        ].sort(),
      );
      expect(built).toMatchObject({ fee_token: token, fee_in_token: quote.fee_in_token, max_fee_in_token: quote.max_fee_in_token });
      // The fee: the inclusion fee and the simulated resource fee, the margin, then the rate; the max fee 5% above it.
      const tx = new Transaction(built.transaction, PASSPHRASE);
      const resourceFee = BigInt(tx.toEnvelope().v1().tx().ext().sorobanData().resourceFee().toString());
      const stroops = ((100n + resourceFee) * BigInt(100 + MARGIN)) / 100n;
      expect(built.fee_in_stroops).toBe(stroops.toString());
      const fee = stroops * BigInt(TOKEN_RATE);
      expect(built.fee_in_token).toBe(fee.toString());
      expect(built.max_fee_in_token).toBe(((fee * 10_500n) / 10_000n).toString());
      expect(built.fee_in_token_ui).toBe((Number(fee) / 1e7).toString());
      // An InvokeHostFunction with the relayer as source and fee payer: forward on the FeeForwarder.
      expect(tx.source).toBe(sorobanRelayer);
      expect(tx.signatures).toHaveLength(0);
      expect(tx.operations).toHaveLength(1);
      const op = tx.operations[0] as Operation.InvokeHostFunction;
      expect(op.type).toBe('invokeHostFunction');
      const call = op.func.invokeContract();
      expect(Address.fromScAddress(call.contractAddress()).toString()).toBe(forwarder);
      expect(call.functionName().toString()).toBe('forward');
      expect(op.auth).toHaveLength(2);
      // The entry to sign: the user's, expiring with the reference's window (two minutes of 5-second ledgers).
      const entry = xdr.SorobanAuthorizationEntry.fromXDR(built.user_auth_entry, 'base64');
      expect(Address.fromScAddress(entry.credentials().address().address()).toString()).toBe(user.publicKey());
      expect(entry.credentials().address().signatureExpirationLedger()).toBeGreaterThanOrEqual(stub.ledger().sequence + 23);
      expect(Date.parse(built.valid_until) - before).toBeGreaterThanOrEqual(115_000);
      expect(Date.parse(built.valid_until) - Date.now()).toBeLessThanOrEqual(120_000);

      const was = {
        user: stub.tokenBalance(token, user.publicKey()),
        relayer: stub.tokenBalance(token, sorobanRelayer),
        dest: stub.tokenBalance(token, dest.publicKey()),
        relayerXlm: stub.account(sorobanRelayer)!.balance,
        userXlm: stub.account(user.publicKey())!.balance,
      };
      // The same signed authorization submitted twice at once (a client's retry): one transaction.
      const signedEntry = await userSigns(built.user_auth_entry);
      const [sent, again] = await Promise.all([sorobanSubmit(built.transaction, signedEntry), sorobanSubmit(built.transaction, signedEntry)]);
      const id = (sent.data.data as { id: string }).id;
      expect((again.data.data as { id: string }).id).toBe(id);
      const done = await waitForStatus(svc, SOROBAN, id, ['confirmed', 'failed', 'expired'], 30_000);
      expect(done.status, done.status_reason).toBe('confirmed');
      expect(stub.tokenBalance(token, user.publicKey())).toBe(was.user - amount - fee);
      expect(stub.tokenBalance(token, sorobanRelayer)).toBe(was.relayer + fee);
      expect(stub.tokenBalance(token, dest.publicKey())).toBe(was.dest + amount);
      // The relayer paid the XLM (its source transaction's fee), the user none.
      expect(stub.account(sorobanRelayer)!.balance).toBeLessThan(was.relayerXlm);
      expect(stub.account(user.publicKey())!.balance).toBe(was.userXlm);
      // Sent once: one transaction of the relayer's applied, with the user's signed entry in it.
      const landed = stub.applied().filter((a) => a.source === sorobanRelayer);
      expect(landed).toHaveLength(1);
      const landedTx = new Transaction(landed[0].envelopeXdr, PASSPHRASE);
      // Time-bounded to the authorization's end: never sent after it.
      expect(Number(landedTx.timeBounds!.maxTime) * 1000).toBeLessThanOrEqual(Date.parse(built.valid_until) + 1_000);
      const sentOp = landedTx.operations[0] as Operation.InvokeHostFunction;
      expect(sentOp.auth![0].credentials().address().signature().vec()).toHaveLength(1);
      expect(sentOp.auth![1].credentials().switch().name).toBe('sorobanCredentialsSourceAccount');
    });

    it('refuses, sending nothing: a fee over max_allowed_fee, an expired build, a tampered entry or transaction', async () => {
      const applied = stub.applied().length;
      const rows = await rowCount();
      const refused = async (call: Promise<unknown>, why: RegExp) => {
        const res = await sdkError(call);
        expect(res.status).toBe(400);
        expect(res.body.error).toMatch(why);
      };

      // The token's max_allowed_fee below the max fee: no quote or build; a build made before is refused at submission.
      const kept = await sorobanBuild(1_000n);
      const keptSigned = await userSigns(kept.user_auth_entry);
      await client.relayers.updateRelayer(SOROBAN, { policies: sorobanPolicies(10) } as never);
      try {
        await refused(
          client.relayers.buildSponsoredTransaction(SOROBAN, { transaction_xdr: transferXdr(1_000n), fee_token: token } as never),
          new RegExp(`^policy max_allowed_fee: max fee \\d+ of ${token} \\(the fee \\d+ and 5% slippage\\) exceeds the token's max_allowed_fee of 10$`),
        );
        await refused(
          sorobanSubmit(kept.transaction, keptSigned),
          new RegExp(`^policy max_allowed_fee: max fee ${kept.max_fee_in_token} of ${token} exceeds the token's max_allowed_fee of 10$`),
        );
      } finally {
        await client.relayers.updateRelayer(SOROBAN, { policies: sorobanPolicies() } as never);
      }

      const built = await sorobanBuild(1_000n);
      const signedEntry = await userSigns(built.user_auth_entry);
      // The entry altered after signing (a larger max fee): its signature no longer covers it.
      const entry = xdr.SorobanAuthorizationEntry.fromXDR(signedEntry, 'base64');
      const args = entry.rootInvocation().function().contractFn().args();
      args[1] = i128(10n ** 9n);
      await refused(sorobanSubmit(built.transaction, entry.toXDR('base64')), /^signed_auth_entry: does not authorize this transaction's FeeForwarder call/);
      // The signature's bytes changed.
      const forged = xdr.SorobanAuthorizationEntry.fromXDR(signedEntry, 'base64');
      const sig = forged.credentials().address().signature().vec()![0].map()!;
      const bytes = Buffer.from(sig[1].val().bytes());
      bytes[0] ^= 1;
      sig[1].val(xdr.ScVal.scvBytes(bytes));
      await refused(sorobanSubmit(built.transaction, forged.toXDR('base64')), /^signed_auth_entry: its signature does not verify as the user \w+'s/);
      // Signed by someone else.
      const other = await authorizeEntry(xdr.SorobanAuthorizationEntry.fromXDR(built.user_auth_entry, 'base64'), dest, 10_000, PASSPHRASE);
      await refused(sorobanSubmit(built.transaction, other.toXDR('base64')), /^signed_auth_entry: its signature does not verify/);
      // The transaction's fee lowered (fee_amount of forward): the relayer's own signature on the call no longer verifies.
      const cheaper = new Transaction(built.transaction, PASSPHRASE).toEnvelope();
      cheaper.v1().tx().operations()[0].body().invokeHostFunctionOp().hostFunction().invokeContract().args()[1] = i128(1n);
      await refused(sorobanSubmit(cheaper.toXDR('base64'), signedEntry), /^transaction_xdr: is not a sponsored build of this relayer as built/);
      // No entry at all, or not base64 XDR.
      await refused(sorobanSubmit(built.transaction, 'AAAA'), /^signed_auth_entry: is not a base64 SorobanAuthorizationEntry/);

      // Past its expiration ledger.
      for (let i = 0; i < 30; i++) stub.closeLedger();
      await refused(sorobanSubmit(built.transaction, signedEntry), /^transaction_xdr: has expired: its authorization ended at ledger \d+/);

      await new Promise((r) => setTimeout(r, 300));
      expect(stub.applied().length).toBe(applied);
      expect(await rowCount()).toBe(rows);
    });

    it("the stand-in itself checks the authorization: the user's signature over the real preimage, not just ours", async () => {
      const built = await sorobanBuild(1_000n);
      const simulateWith = async (userEntry: xdr.SorobanAuthorizationEntry) => {
        const env = new Transaction(built.transaction, PASSPHRASE).toEnvelope();
        const invoke = env.v1().tx().operations()[0].body().invokeHostFunctionOp();
        const relayerEntry = new xdr.SorobanAuthorizationEntry({
          credentials: xdr.SorobanCredentials.sorobanCredentialsSourceAccount(),
          rootInvocation: invoke.auth()[1].rootInvocation(),
        });
        invoke.auth([userEntry, relayerEntry]);
        const res = await fetch(stub.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'simulateTransaction', params: { transaction: env.toXDR('base64') } }),
        });
        return ((await res.json()) as { result: { error?: string } }).result;
      };
      const entry = () => xdr.SorobanAuthorizationEntry.fromXDR(built.user_auth_entry, 'base64');
      expect((await simulateWith(await authorizeEntry(entry(), user, 100_000, PASSPHRASE))).error).toBeUndefined();
      expect((await simulateWith(entry())).error).toMatch(/auth: no valid signature of G\w+ over its authorization entry/);
      expect((await simulateWith(await authorizeEntry(entry(), dest, 100_000, PASSPHRASE))).error).toMatch(/auth: no valid signature/);
      // Signed for another network: the preimage's network id differs.
      expect((await simulateWith(await authorizeEntry(entry(), user, 100_000, 'Another Network'))).error).toMatch(/auth: no valid signature/);
    });

    it('refuses a contract fee token for a classic transaction and a Soroban call with more than one operation', async () => {
      const classic = await sdkError(client.relayers.quoteSponsoredTransaction(SOROBAN, { transaction_xdr: userXdr(), fee_token: token } as never));
      expect(classic.status).toBe(400);
      expect(classic.body.error).toMatch(/^fee_token: C\w+ is a contract token: it pays only for a Soroban call/);
      const two = userXdr([
        Operation.invokeContractFunction({ contract: token, function: 'balance', args: [Address.fromString(user.publicKey()).toScVal()] }),
        Operation.payment({ destination: dest.publicKey(), asset: Asset.native(), amount: '1' }),
      ]);
      const res = await sdkError(client.relayers.quoteSponsoredTransaction(SOROBAN, { transaction_xdr: two, fee_token: token } as never));
      expect(res.body.error).toBe('transaction_xdr: Soroban transactions must contain exactly one operation');

      // A host function calling an account, not a contract.
      const atAccount = new TransactionBuilder(new Account(user.publicKey(), '1'), { fee: '100', networkPassphrase: PASSPHRASE })
        .addOperation(
          Operation.invokeHostFunction({
            func: xdr.HostFunction.hostFunctionTypeInvokeContract(
              new xdr.InvokeContractArgs({ contractAddress: Address.fromString(dest.publicKey()).toScAddress(), functionName: 'transfer', args: [] }),
            ),
            auth: [],
          }),
        )
        .setTimeout(0)
        .build()
        .toXDR();
      const odd = await sdkError(client.relayers.buildSponsoredTransaction(SOROBAN, { transaction_xdr: atAccount, fee_token: token } as never));
      expect(odd.body.error).toBe('transaction_xdr: InvokeHostFunction must call a contract address');
      // A classic token for a Soroban call.
      const classicToken = await sdkError(client.relayers.quoteSponsoredTransaction(SOROBAN, { transaction_xdr: transferXdr(1n), fee_token: USDC } as never));
      expect(classicToken.body.error).toMatch(/^fee_token: must be a valid Soroban contract address \(C…\) for a Soroban call/);

      // Submissions that are no sponsored build: each a 400 naming the field, nothing stored.
      const rows = await rowCount();
      const entry = (await sorobanBuild(1n)).user_auth_entry;
      for (const [body, why] of [
        [{ transaction_xdr: 'AAAA', signed_auth_entry: entry }, /^transaction_xdr: is not a valid base64 transaction envelope/],
        [{ transaction_xdr: userXdr(), signed_auth_entry: entry }, /^transaction_xdr: its source must be the relayer/],
        [{ transaction_xdr: transferXdr(1n), signed_auth_entry: entry, fee_bump: true }, /^fee_bump: cannot be given with signed_auth_entry/],
        [
          { operations: [{ type: 'payment', destination: dest.publicKey(), amount: 1, asset: { type: 'native' } }], signed_auth_entry: entry },
          /^signed_auth_entry: only applies to the transaction_xdr/,
        ],
      ] as [object, RegExp][]) {
        const r = await sdkError(client.relayers.sendTransaction(SOROBAN, { network: 'stellar-local', ...body } as never));
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.error, JSON.stringify(body)).toMatch(why);
      }
      expect(await rowCount()).toBe(rows);
    });
  });

  it('answers a clear error, not a 500, when the Stellar RPC cannot be reached: quote, build, sign and send', async () => {
    expect((await client.relayers.getRelayer(DOWN)).data.data).toMatchObject({ system_disabled: false });
    const built = await build(byOperations(1_000));
    await proxy.close();
    const unreachable = /^the network's Stellar RPC does not answer: no RPC endpoint available for \w+: 127\.0\.0\.1:\d+: /;
    for (const call of [
      () => client.relayers.quoteSponsoredTransaction(DOWN, { transaction_xdr: userXdr(), fee_token: USDC } as never),
      () => client.relayers.buildSponsoredTransaction(DOWN, byOperations(1_000) as never),
      () => client.relayers.signTransaction(DOWN, { unsigned_xdr: built.transaction } as never),
      () => client.relayers.sendTransaction(DOWN, { network: 'stellar-down', transaction_xdr: signed(built.transaction), fee_bump: true } as never),
    ]) {
      const res = await sdkError(call());
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ success: false, error: expect.stringMatching(unreachable) });
    }
    expect(((await client.relayers.listTransactions(DOWN, 1, 100)).data.data as unknown[]).length).toBe(0);
  });
});
