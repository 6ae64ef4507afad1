import { Account, Asset, Keypair, type Memo, Networks, Operation, TransactionBuilder, xdr } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildFromOperations,
  checkStellarTx,
  createStellarRpc,
  JsonRpcError,
  parseStellarRequest,
  prepareFromXdr,
  stellarPolicySchema,
  StellarRequestError,
  submitStellarTx,
  type StellarRpc,
  type StellarSignerLike,
} from '../../src/chains/stellar/index.js';
import { startStellarRpc, type StellarRpcStub } from '../support/stellar-rpc.js';

const passphrase = Networks.TESTNET;
const XLM = 10_000_000n;
const CONTRACT = 'CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA';

const relayerKp = Keypair.random();
const userKp = Keypair.random();
const destKp = Keypair.random();
const relayer: StellarSignerLike = { kind: 'stellar', address: relayerKp.publicKey(), sign: async (data) => relayerKp.sign(Buffer.from(data)) };

let stub: StellarRpcStub;
let rpc: StellarRpc;

beforeAll(async () => {
  stub = await startStellarRpc({
    networkPassphrase: passphrase,
    ledgerIntervalMs: 100,
    accounts: [
      { address: relayer.address, balance: 1_000n * XLM, sequence: 100n },
      { address: userKp.publicKey(), balance: 50n * XLM, sequence: 7_000n },
      { address: destKp.publicKey(), balance: 10n * XLM, sequence: 9_000n },
    ],
  });
  rpc = createStellarRpc([{ url: stub.url, weight: 100 }], { timeoutMs: 2_000 });
});
afterAll(() => stub?.stop());

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 3_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function nextSequence(address = relayer.address): Promise<bigint> {
  const account = await rpc.getAccount(address);
  return account!.sequence + 1n;
}

async function settle(hash: string, validUntil?: string | null) {
  return waitFor(async () => {
    const s = await checkStellarTx(rpc, hash, { validUntil });
    return s.status === 'pending' ? undefined : s;
  });
}

function request(body: Record<string, unknown>) {
  return parseStellarRequest({ network: 'testnet', ...body });
}

const payment = (amount: string | number = '10000000') => ({
  type: 'payment',
  destination: destKp.publicKey(),
  amount,
  asset: { type: 'native' },
});

function expectRequestError(fn: () => unknown, field: string, pattern: RegExp) {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(StellarRequestError);
    expect((err as StellarRequestError).field).toBe(field);
    expect((err as Error).message).toMatch(pattern);
    return;
  }
  throw new Error('expected a StellarRequestError');
}

async function expectRejects(p: Promise<unknown>, field: string, pattern: RegExp) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StellarRequestError);
  expect((err as StellarRequestError).field).toBe(field);
  expect((err as Error).message).toMatch(pattern);
}

/** A payment from the user's own account, signed by `signer` (the user unless stated). */
async function userPaymentXdr(opts: { signer?: Keypair; fee?: string; maxTime?: number } = {}) {
  const user = await rpc.getAccount(userKp.publicKey());
  const tx = new TransactionBuilder(new Account(userKp.publicKey(), user!.sequence.toString()), {
    fee: opts.fee ?? '100',
    networkPassphrase: passphrase,
  })
    .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '2' }))
    .setTimebounds(0, opts.maxTime ?? 0)
    .build();
  tx.sign(opts.signer ?? userKp);
  return tx;
}

describe('stellar rpc client', () => {
  it('reads network, ledger and account state', async () => {
    expect((await rpc.getNetwork()).passphrase).toBe(passphrase);
    const first = await rpc.getLatestLedger();
    await new Promise((r) => setTimeout(r, 250));
    expect((await rpc.getLatestLedger()).sequence).toBeGreaterThan(first.sequence);
    expect(await rpc.getAccount(userKp.publicKey())).toEqual({ sequence: 7_000n, balance: 50n * XLM });
    expect(await rpc.getAccount(Keypair.random().publicKey())).toBeNull();
  });

  it('fails over from a dead endpoint', async () => {
    const client = createStellarRpc(
      [
        { url: 'http://127.0.0.1:1', weight: 100 },
        { url: stub.url, weight: 1 },
      ],
      { timeoutMs: 1_000 },
    );
    for (let i = 0; i < 3; i++) expect((await client.getNetwork()).passphrase).toBe(passphrase);
  });

  it('throws deterministic errors without trying the next endpoint', async () => {
    const client = createStellarRpc([
      { url: stub.url, weight: 100 },
      { url: stub.url, weight: 100 },
    ]);
    const before = stub.calls.length;
    await expect(client.getTransaction('not-a-hash')).rejects.toBeInstanceOf(JsonRpcError);
    expect(stub.calls.length - before).toBe(1);
  });
});

describe('stellar: build from operations, sign, submit, confirm', () => {
  it('relays a native payment with a memo and time bound', async () => {
    const validUntil = new Date(Date.now() + 60_000).toISOString();
    const req = request({ operations: [payment()], memo: { type: 'text', value: 'invoice 42' }, valid_until: validUntil });
    const sequence = await nextSequence();
    const destBefore = stub.account(destKp.publicKey())!.balance;

    const built = await buildFromOperations(req, { source: relayer, sequence, networkPassphrase: passphrase, rpc });
    expect(built.sequence).toBe(sequence);
    expect(built.fee).toBe(100n);
    expect(built.validUntil).toBe(new Date(Math.floor(Date.parse(validUntil) / 1000) * 1000).toISOString());
    const tx = TransactionBuilder.fromXDR(built.envelopeXdr, passphrase);
    expect(tx.signatures).toHaveLength(1);
    expect((tx as { memo: Memo }).memo.value?.toString()).toBe('invoice 42');

    expect(await submitStellarTx(rpc, built.envelopeXdr)).toEqual({ outcome: 'submitted', hash: built.hash, duplicate: false });
    expect(await settle(built.hash)).toMatchObject({ status: 'confirmed' });
    expect(stub.account(destKp.publicKey())!.balance).toBe(destBefore + XLM);
    expect(stub.account(relayer.address)!.sequence).toBe(sequence);
    // Resending a known transaction is reported as a duplicate, not an error.
    expect(await submitStellarTx(rpc, built.envelopeXdr)).toMatchObject({ outcome: 'submitted', duplicate: true });
  });

  it('supports id, hash and return memos', async () => {
    for (const memo of [
      { type: 'id', value: '18446744073709551615' },
      { type: 'hash', value: 'ab'.repeat(32) },
      { type: 'return', value: Array.from({ length: 32 }, (_, i) => i) },
    ]) {
      const built = await buildFromOperations(request({ operations: [payment()], memo }), {
        source: relayer,
        sequence: 1n,
        networkPassphrase: passphrase,
      });
      const tx = TransactionBuilder.fromXDR(built.envelopeXdr, passphrase) as { memo: Memo };
      expect(tx.memo.type).toBe(memo.type);
    }
  });

  it('simulates and assembles a contract call before signing', async () => {
    const req = request({
      operations: [
        {
          type: 'invoke_contract',
          contract_address: CONTRACT,
          function_name: 'transfer',
          args: [{ address: userKp.publicKey() }, { address: destKp.publicKey() }, { i128: '1000' }, 'memo', true],
        },
      ],
    });
    const built = await buildFromOperations(req, { source: relayer, sequence: await nextSequence(), networkPassphrase: passphrase, rpc });
    const env = xdr.TransactionEnvelope.fromXDR(built.envelopeXdr, 'base64');
    const resourceFee = BigInt(env.v1().tx().ext().sorobanData().resourceFee().toString());
    expect(resourceFee).toBeGreaterThan(0n);
    expect(built.fee).toBe(100n + resourceFee);
    const args = env.v1().tx().operations()[0].body().invokeHostFunctionOp().hostFunction().invokeContract().args();
    expect(args.map((a) => a.switch().name)).toEqual(['scvAddress', 'scvAddress', 'scvI128', 'scvString', 'scvBool']);

    expect((await submitStellarTx(rpc, built.envelopeXdr)).outcome).toBe('submitted');
    expect(await settle(built.hash)).toMatchObject({ status: 'confirmed' });
  });

  it('builds upload_wasm and create_contract with simulated resources', async () => {
    const wasm = Buffer.from('0061736d0100000001', 'hex');
    const upload = await buildFromOperations(request({ operations: [{ type: 'upload_wasm', wasm: { type: 'base64', base64: wasm.toString('base64') } }] }), {
      source: relayer,
      sequence: await nextSequence(),
      networkPassphrase: passphrase,
      rpc,
    });
    expect(upload.fee).toBeGreaterThan(100n);
    expect((await submitStellarTx(rpc, upload.envelopeXdr)).outcome).toBe('submitted');
    expect(await settle(upload.hash)).toMatchObject({ status: 'confirmed' });

    const create = await buildFromOperations(
      request({
        operations: [{ type: 'create_contract', source: { from: 'address', address: relayer.address }, wasm_hash: 'cd'.repeat(32), salt: '01'.repeat(32) }],
      }),
      { source: relayer, sequence: await nextSequence(), networkPassphrase: passphrase, rpc },
    );
    const op = xdr.TransactionEnvelope.fromXDR(create.envelopeXdr, 'base64').v1().tx().operations()[0].body().invokeHostFunctionOp();
    // The source-account auth entry from simulation is attached.
    expect(op.auth()).toHaveLength(1);
  });

  it('rejects invalid requests with the field and reason', async () => {
    expectRequestError(() => request({ operations: [] }), 'operations', /at least 1|too small|>=1/i);
    expectRequestError(() => request({}), 'operations', /exactly one of operations or transaction_xdr/);
    expectRequestError(() => request({ operations: [payment('1.5')] }), 'operations[0].amount', /integer number of stroops/);
    expectRequestError(() => request({ operations: [payment(0)] }), 'operations[0].amount', /between 1/);
    expectRequestError(() => request({ operations: [{ ...payment(), destination: 'GABC' }] }), 'operations[0].destination', /account address/);
    expectRequestError(() => request({ operations: [payment()], memo: { type: 'text', value: 'x'.repeat(29) } }), 'memo.value', /28 bytes/);
    expectRequestError(() => request({ operations: [payment()], memo: { type: 'id', value: '18446744073709551616' } }), 'memo.value', /uint64/);
    expectRequestError(() => request({ operations: [payment()], memo: { type: 'hash', value: 'abcd' } }), 'memo.value', /32 bytes/);
    expectRequestError(() => request({ operations: [payment()], valid_until: 'tomorrow' }), 'valid_until', /RFC 3339/);
    expectRequestError(
      () => request({ operations: [{ ...payment(), asset: { type: 'credit_alphanum4', code: 'TOOLONG', issuer: userKp.publicKey() } }] }),
      'operations[0].asset.code',
      /1-4/,
    );

    const ctx = { source: relayer, sequence: 1n, networkPassphrase: passphrase, rpc };
    await expectRejects(
      buildFromOperations(request({ operations: [payment()], source_account: userKp.publicKey() }), ctx),
      'source_account',
      /must be the relayer/,
    );
    await expectRejects(
      buildFromOperations(request({ operations: [payment()], valid_until: new Date(Date.now() - 1_000).toISOString() }), ctx),
      'valid_until',
      /in the future/,
    );
    await expectRejects(
      buildFromOperations(request({ operations: [payment(), { type: 'invoke_contract', contract_address: CONTRACT, function_name: 'f', args: [] }] }), ctx),
      'operations[1]',
      /must be the only operation/,
    );
    await expectRejects(
      buildFromOperations(request({ operations: [{ type: 'invoke_contract', contract_address: CONTRACT, function_name: 'f', args: [{ u32: -1 }] }] }), ctx),
      'operations[0].args[0].u32',
      /out of range/,
    );
    await expectRejects(
      buildFromOperations(request({ operations: [{ type: 'invoke_contract', contract_address: CONTRACT, function_name: 'f', args: [] }], max_fee: 500 }), ctx),
      'max_fee',
      /above max_fee 500/,
    );
  });

  it('enforces policy max_fee and min_balance', async () => {
    const ctx = { source: relayer, sequence: 1n, networkPassphrase: passphrase, rpc };
    const two = request({ operations: [payment(), payment()] });
    await expectRejects(buildFromOperations(two, { ...ctx, policy: { max_fee: 150 } }), 'policy.max_fee', /200 stroops exceeds/);
    const balance = stub.account(relayer.address)!.balance;
    await expectRejects(buildFromOperations(two, { ...ctx, policy: { min_balance: Number(balance) } }), 'policy.min_balance', /below its min_balance/);
    await expect(buildFromOperations(two, { ...ctx, policy: { max_fee: 200, min_balance: 1 } })).resolves.toMatchObject({ fee: 200n });
  });

  it('uses policy timeout_seconds as the default validity window', async () => {
    const now = new Date();
    const built = await buildFromOperations(request({ operations: [payment()] }), {
      source: relayer,
      sequence: 1n,
      networkPassphrase: passphrase,
      policy: { timeout_seconds: 30 },
      now,
    });
    expect(Date.parse(built.validUntil!)).toBe((Math.floor(now.getTime() / 1000) + 30) * 1000);
    const unbounded = await buildFromOperations(request({ operations: [payment()] }), { source: relayer, sequence: 1n, networkPassphrase: passphrase });
    expect(unbounded.validUntil).toBeNull();
  });
});

describe('stellar: transaction_xdr', () => {
  it('signs an unsigned XDR whose source is the relayer', async () => {
    const sequence = await nextSequence();
    const unsigned = new TransactionBuilder(new Account(relayer.address, (sequence - 1n).toString()), { fee: '100', networkPassphrase: passphrase })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(60)
      .build();
    const req = request({ transaction_xdr: unsigned.toXDR() });
    await expectRejects(
      prepareFromXdr(req, { source: relayer, networkPassphrase: passphrase, expectedSequence: sequence + 1n }),
      'transaction_xdr',
      /not the relayer's next sequence/,
    );

    const built = await prepareFromXdr(req, { source: relayer, networkPassphrase: passphrase, expectedSequence: sequence });
    expect(built).toMatchObject({ sequence, feeBump: false, usesRelayerSequence: true, hash: unsigned.hash().toString('hex') });
    expect(built.validUntil).not.toBeNull();
    expect((await submitStellarTx(rpc, built.envelopeXdr)).outcome).toBe('submitted');
    expect(await settle(built.hash)).toMatchObject({ status: 'confirmed' });
  });

  it('wraps a user-signed XDR in a fee bump paid by the relayer', async () => {
    const inner = await userPaymentXdr();
    const userBefore = stub.account(userKp.publicKey())!;
    const relayerBefore = stub.account(relayer.address)!;

    const built = await prepareFromXdr(request({ transaction_xdr: inner.toXDR(), fee_bump: true }), { source: relayer, networkPassphrase: passphrase });
    expect(built).toMatchObject({ feeBump: true, fee: 200n, usesRelayerSequence: false, sequence: BigInt(inner.sequence) });
    const bump = TransactionBuilder.fromXDR(built.envelopeXdr, passphrase);
    expect('feeSource' in bump && bump.feeSource).toBe(relayer.address);

    expect((await submitStellarTx(rpc, built.envelopeXdr)).outcome).toBe('submitted');
    expect(await settle(built.hash)).toMatchObject({ status: 'confirmed' });
    expect(stub.account(userKp.publicKey())).toEqual({ sequence: userBefore.sequence + 1n, balance: userBefore.balance - 2n * XLM });
    expect(stub.account(relayer.address)).toEqual({ sequence: relayerBefore.sequence, balance: relayerBefore.balance - 200n });
  });

  it('caps the fee bump at max_fee', async () => {
    const inner = await userPaymentXdr({ fee: '5000' });
    await expectRejects(
      prepareFromXdr(request({ transaction_xdr: inner.toXDR(), fee_bump: true, max_fee: 9_999 }), { source: relayer, networkPassphrase: passphrase }),
      'max_fee',
      /10000 stroops, above max_fee 9999/,
    );
  });

  it('rejects inconsistent XDR requests', async () => {
    const ctx = { source: relayer, networkPassphrase: passphrase };
    const signed = await userPaymentXdr();
    const unsignedForeign = TransactionBuilder.fromXDR(signed.toXDR(), passphrase);
    unsignedForeign.signatures.splice(0);
    const relayerUnsigned = new TransactionBuilder(new Account(relayer.address, '1'), { fee: '100', networkPassphrase: passphrase })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(0)
      .build();

    await expectRejects(prepareFromXdr(request({ transaction_xdr: signed.toXDR() }), ctx), 'fee_bump', /must be true/);
    await expectRejects(prepareFromXdr(request({ transaction_xdr: relayerUnsigned.toXDR(), fee_bump: true }), ctx), 'fee_bump', /already signed/);
    await expectRejects(prepareFromXdr(request({ transaction_xdr: unsignedForeign.toXDR() }), ctx), 'transaction_xdr', /is not the relayer/);
    await expectRejects(prepareFromXdr(request({ transaction_xdr: 'AAAA' }), ctx), 'transaction_xdr', /not a valid/);
    const expired = await userPaymentXdr({ maxTime: Math.floor(Date.now() / 1000) - 10 });
    await expectRejects(prepareFromXdr(request({ transaction_xdr: expired.toXDR(), fee_bump: true }), ctx), 'transaction_xdr', /time bounds expired/);
    expectRequestError(() => request({ transaction_xdr: signed.toXDR(), memo: { type: 'none' } }), 'memo', /not allowed/);
  });
});

describe('stellar: network rejections', () => {
  it('rejects a tampered envelope (bad signature)', async () => {
    const built = await buildFromOperations(request({ operations: [payment()] }), {
      source: relayer,
      sequence: await nextSequence(),
      networkPassphrase: passphrase,
    });
    const env = xdr.TransactionEnvelope.fromXDR(built.envelopeXdr, 'base64');
    env.v1().tx().operations()[0].body().paymentOp().amount(xdr.Int64.fromString('990000000'));
    const outcome = await submitStellarTx(rpc, env.toXDR('base64'));
    expect(outcome).toMatchObject({ outcome: 'rejected', code: 'tx_bad_auth', resyncSequence: false });
  });

  it('rejects a user transaction signed by the wrong key inside a fee bump', async () => {
    const inner = await userPaymentXdr({ signer: Keypair.random() });
    const built = await prepareFromXdr(request({ transaction_xdr: inner.toXDR(), fee_bump: true }), { source: relayer, networkPassphrase: passphrase });
    const outcome = await submitStellarTx(rpc, built.envelopeXdr);
    expect(outcome).toMatchObject({ outcome: 'rejected', code: 'tx_fee_bump_inner_failed' });
    expect(outcome.outcome === 'rejected' && outcome.reason).toMatch(/inner tx_bad_auth/);
  });

  it('rejects an insufficient fee', async () => {
    const built = await buildFromOperations(request({ operations: [payment()] }), {
      source: relayer,
      sequence: await nextSequence(),
      networkPassphrase: passphrase,
      baseFee: 50,
    });
    expect(await submitStellarTx(rpc, built.envelopeXdr)).toMatchObject({ outcome: 'rejected', code: 'tx_insufficient_fee' });
  });

  it('rejects a bad sequence number and asks for a resync', async () => {
    const built = await buildFromOperations(request({ operations: [payment()] }), {
      source: relayer,
      sequence: (await nextSequence()) + 5n,
      networkPassphrase: passphrase,
    });
    expect(await submitStellarTx(rpc, built.envelopeXdr)).toMatchObject({ outcome: 'rejected', code: 'tx_bad_seq', resyncSequence: true });
  });

  it('reports a failed payment with the operation result', async () => {
    const built = await buildFromOperations(request({ operations: [payment((10_000n * XLM).toString())] }), {
      source: relayer,
      sequence: await nextSequence(),
      networkPassphrase: passphrase,
    });
    expect((await submitStellarTx(rpc, built.envelopeXdr)).outcome).toBe('submitted');
    expect(await settle(built.hash)).toMatchObject({ status: 'failed', code: 'tx_failed', reason: 'tx_failed (operations[0]: payment_underfunded)' });
  });

  it('rejects a transaction past its valid_until and reports it expired', async () => {
    const validUntil = new Date(Date.now() + 1_000).toISOString();
    const built = await buildFromOperations(request({ operations: [payment()], valid_until: validUntil }), {
      source: relayer,
      sequence: await nextSequence(),
      networkPassphrase: passphrase,
    });
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await submitStellarTx(rpc, built.envelopeXdr)).toMatchObject({ outcome: 'rejected', code: 'tx_too_late' });
    expect(await checkStellarTx(rpc, built.hash, { validUntil: built.validUntil })).toMatchObject({ status: 'expired' });
  });

  it('maps TRY_AGAIN_LATER to a retry', async () => {
    const built = await buildFromOperations(request({ operations: [payment()] }), {
      source: relayer,
      sequence: await nextSequence(),
      networkPassphrase: passphrase,
    });
    stub.nextSendStatus('TRY_AGAIN_LATER');
    expect(await submitStellarTx(rpc, built.envelopeXdr)).toMatchObject({ outcome: 'retry' });
    expect((await submitStellarTx(rpc, built.envelopeXdr)).outcome).toBe('submitted');
    expect(await settle(built.hash)).toMatchObject({ status: 'confirmed' });
  });
});

describe('stellar policy schema', () => {
  it('accepts OpenZeppelin-style policies and rejects unknown fields', () => {
    const policy = stellarPolicySchema.parse({
      min_balance: 10_000_000,
      max_fee: 10_000,
      timeout_seconds: 30,
      concurrent_transactions: true,
      fee_payment_strategy: 'relayer',
      allowed_tokens: [{ asset: 'native', max_allowed_fee: 100 }],
    });
    expect(policy.max_fee).toBe(10_000);
    expect(stellarPolicySchema.safeParse({ max_fee: -1 }).success).toBe(false);
    expect(stellarPolicySchema.safeParse({ gas_price_cap: 1 }).success).toBe(false);
  });
});
