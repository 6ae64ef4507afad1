// Stellar relayers end to end: config file -> REST/GraphQL -> pipeline -> local Stellar RPC
// stand-in (which checks signatures, sequence numbers, fees and time bounds with the SDK).
import { Account, Asset, Keypair, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/postgres.js';
import { startTestService, type TestService } from '../support/service.js';
import { startStellarRpc, type StellarRpcStub } from '../support/stellar-rpc.js';
import {
  expectBadRequest,
  getRecord,
  keystores,
  localSigner,
  send,
  SIGNING_KEY,
  startReceiver,
  waitFor,
  waitForStatus,
  xSignatureValid,
} from '../chains/stellar/support.js';

const PASSPHRASE = 'Relayer Test Network ; 2025';
const XLM = 10_000_000n;
// Real sequence numbers start at ledger << 32, beyond 2^53.
const START_SEQ = 50_000_000n << 32n;
const CONTRACT = 'CA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUWDA';
const RELAYER = 'stellar-relayer';
const MANUAL = 'stellar-manual';
const UNFUNDED = 'stellar-unfunded';

const userKp = Keypair.random();
const destKp = Keypair.random();
const strangerKp = Keypair.random();

/** Sends `count` payments from `kp`'s account at its next sequence numbers, outside the service. */
async function useOutside(stub: StellarRpcStub, kp: Keypair, count: number) {
  const seq = stub.account(kp.publicKey())!.sequence;
  for (let i = 0n; i < BigInt(count); i++) {
    const tx = new TransactionBuilder(new Account(kp.publicKey(), (seq + i).toString()), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '0.0000001' }))
      .setTimeout(0)
      .build();
    tx.sign(kp);
    const res = await fetch(stub.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: { transaction: tx.toXDR() } }),
    });
    expect(((await res.json()) as any).result.status).toBe('PENDING');
  }
}

const payment = (amount: number | string = 10_000_000, destination = destKp.publicKey()) => ({
  type: 'payment',
  destination,
  amount,
  asset: { type: 'native' },
});

describe.each(await databaseKinds())('stellar relayer on %s', (db) => {
  let keys: Awaited<ReturnType<typeof keystores>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let stub: StellarRpcStub;
  let manual: StellarRpcStub;
  let svc: TestService;
  let relayer: Keypair;

  beforeAll(async () => {
    keys = await keystores();
    const key = await keys.create('stellar');
    const unfundedKey = await keys.create('unfunded');
    relayer = Keypair.fromRawEd25519Seed(Buffer.from(key.seed));
    const accounts = [
      { address: relayer.publicKey(), balance: 1_000n * XLM, sequence: START_SEQ },
      { address: userKp.publicKey(), balance: 50n * XLM, sequence: 7_000n },
      { address: destKp.publicKey(), balance: 10n * XLM, sequence: 9_000n },
    ];
    stub = await startStellarRpc({ networkPassphrase: PASSPHRASE, ledgerIntervalMs: 100, accounts });
    // Ledgers close only when the test says so.
    manual = await startStellarRpc({ networkPassphrase: PASSPHRASE, ledgerIntervalMs: 0, accounts });
    receiver = await startReceiver();
    const network = (name: string, url: string) => ({
      type: 'stellar',
      network: name,
      rpc_urls: [url],
      passphrase: PASSPHRASE,
      average_blocktime_ms: 100,
      is_testnet: true,
    });
    svc = await startTestService({
      db,
      config: () => ({
        relayers: [
          {
            id: RELAYER,
            name: 'Stellar relayer',
            network: 'stellar-local',
            network_type: 'stellar',
            paused: false,
            signer_id: 'stellar-key',
            notification_id: 'hooks',
            policies: {},
          },
          { id: MANUAL, name: 'Stellar relayer, manual ledgers', network: 'stellar-manual', network_type: 'stellar', paused: false, signer_id: 'stellar-key' },
          // Its account was never created on the network.
          {
            id: UNFUNDED,
            name: 'Stellar relayer without an account',
            network: 'stellar-local',
            network_type: 'stellar',
            paused: false,
            signer_id: 'unfunded-key',
          },
        ],
        signers: [localSigner('stellar-key', key.file), localSigner('unfunded-key', unfundedKey.file)],
        notifications: [{ id: 'hooks', type: 'webhook', url: receiver.url, signing_key: { type: 'plain', value: SIGNING_KEY } }],
        networks: [network('stellar-local', stub.url), network('stellar-manual', manual.url)],
      }),
    });
  });

  afterAll(async () => {
    await svc?.stop();
    await Promise.all([stub?.stop(), manual?.stop(), receiver?.close(), keys?.remove()]);
  });

  const gqlSend = (input: Record<string, unknown>, relayerId = RELAYER) =>
    svc.gql(`mutation($id: ID!, $input: SendTransactionInput!) { sendTransaction(relayerId: $id, input: $input) { id status nonce from to value } }`, {
      id: relayerId,
      input,
    });

  it('loads the relayer from the config file with its ed25519 key', async () => {
    const res = await svc.request('GET', `/api/v1/relayers/${RELAYER}`);
    const body = (await res.json()) as any;
    expect(body.data).toMatchObject({ id: RELAYER, network: 'stellar-local', network_type: 'stellar', address: relayer.publicKey(), policies: {} });
  });

  it('disables a relayer whose account does not exist on the network, saying why', async () => {
    const record = await waitFor('the start-up check', async () => {
      const body = (await (await svc.request('GET', `/api/v1/relayers/${UNFUNDED}`)).json()) as any;
      return body.data.system_disabled ? body.data : undefined;
    });
    expect(record.disabled_reason).toMatchObject({ type: 'AccountNotFound', details: expect.stringContaining('does not exist on network "stellar-local"') });
    expectBadRequest(await send(svc, UNFUNDED, { network: 'stellar-local', operations: [payment()] }), /is disabled: .*does not exist/);
    const healthy = (await (await svc.request('GET', `/api/v1/relayers/${RELAYER}`)).json()) as any;
    expect(healthy.data.system_disabled).toBe(false);
  });

  it('builds a payment from operations, signs, submits and confirms it (REST), with every webhook', async () => {
    const destBefore = stub.account(destKp.publicKey())!.balance;
    const seqBefore = stub.account(relayer.publicKey())!.sequence;
    const r = await send(svc, RELAYER, {
      network: 'stellar-local',
      operations: [payment(25_000_000)],
      memo: { type: 'text', value: 'invoice 42' },
    });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.data).toMatchObject({ status: 'pending', network_type: 'stellar', relayer_id: RELAYER, from: relayer.publicKey() });
    const id = r.json.data.id;

    const done = await waitForStatus(svc, RELAYER, id, ['confirmed', 'failed', 'expired']);
    expect(done.status, done.status_reason).toBe('confirmed');
    // The stand-in applied it: the destination got the amount, the relayer's sequence moved by one.
    expect(stub.account(destKp.publicKey())!.balance).toBe(destBefore + 25_000_000n);
    expect(stub.account(relayer.publicKey())!.sequence).toBe(seqBefore + 1n);
    expect(done).toMatchObject({
      source_account: relayer.publicKey(),
      sequence_number: (seqBefore + 1n).toString(),
      fee: 100,
      fee_bump: false,
      memo: { type: 'text', value: 'invoice 42' },
      ledger: expect.any(Number),
    });
    expect(done.sent_at).not.toBeNull();
    expect(done.confirmed_at).not.toBeNull();
    const envelope = TransactionBuilder.fromXDR(done.signed_envelope_xdr, PASSPHRASE);
    expect(envelope.hash().toString('hex')).toBe(done.hash);

    await waitFor('four webhook events', () => receiver.statusesOf(id).length >= 4);
    expect(receiver.statusesOf(id)).toEqual(['pending', 'sent', 'submitted', 'confirmed']);
    const events = receiver.received.filter((e) => e.body.payload?.id === id);
    expect(events.every(xSignatureValid)).toBe(true);
    expect(events.at(-1)!.body).toMatchObject({
      event: 'transaction_update',
      payload: { payload_type: 'transaction', id, status: 'confirmed', network_type: 'stellar', hash: done.hash, sequence_number: done.sequence_number },
    });
  });

  it('signs an unsigned XDR as its source with the sequence number it allocates (GraphQL)', async () => {
    const seqBefore = stub.account(relayer.publicKey())!.sequence;
    // Whatever sequence the client put in, the relayer assigns its own.
    const unsigned = new TransactionBuilder(new Account(relayer.publicKey(), '1'), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '0.5' }))
      .setTimeout(0)
      .build();
    const { data, errors } = await gqlSend({ network: 'stellar-local', transactionXdr: unsigned.toXDR() });
    expect(errors).toBeUndefined();
    expect(data.sendTransaction).toMatchObject({ status: 'pending', from: relayer.publicKey(), to: destKp.publicKey(), value: '5000000' });
    expect(String(data.sendTransaction.nonce)).toBe((seqBefore + 1n).toString());

    const done = await waitForStatus(svc, RELAYER, data.sendTransaction.id, ['confirmed', 'failed', 'expired']);
    expect(done.status, done.status_reason).toBe('confirmed');
    expect(stub.account(relayer.publicKey())!.sequence).toBe(seqBefore + 1n);
    const q = await svc.gql(`query($id: ID!) { transaction(id: $id) { status hash networkData } }`, { id: data.sendTransaction.id });
    expect(q.data.transaction).toMatchObject({
      status: 'confirmed',
      hash: done.hash,
      networkData: { sequence_number: (seqBefore + 1n).toString(), fee_bump: false },
    });
    // valid_until became the upper time bound the unsigned XDR lacked.
    const signed = TransactionBuilder.fromXDR(done.signed_envelope_xdr, PASSPHRASE) as { timeBounds?: { maxTime: string } };
    expect(Number(signed.timeBounds!.maxTime) * 1000).toBe(Date.parse(done.valid_until));
  });

  it('wraps a user-signed XDR in a fee bump paid by the relayer, without using its sequence', async () => {
    const user = stub.account(userKp.publicKey())!;
    const relayerBefore = stub.account(relayer.publicKey())!;
    const inner = new TransactionBuilder(new Account(userKp.publicKey(), user.sequence.toString()), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '2' }))
      .setTimeout(60)
      .build();
    inner.sign(userKp);
    const r = await send(svc, RELAYER, { network: 'stellar-local', transaction_xdr: inner.toXDR(), fee_bump: true, max_fee: 1_000 });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const done = await waitForStatus(svc, RELAYER, r.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(done.status, done.status_reason).toBe('confirmed');
    expect(done).toMatchObject({ fee_bump: true, fee: 200, source_account: userKp.publicKey(), fee_payer: relayer.publicKey() });
    // The inner transaction's time bound is the record's valid_until.
    expect(Date.parse(done.valid_until)).toBe(Number(inner.timeBounds!.maxTime) * 1000);
    expect(stub.account(userKp.publicKey())).toEqual({ sequence: user.sequence + 1n, balance: user.balance - 2n * XLM });
    expect(stub.account(relayer.publicKey())).toEqual({ sequence: relayerBefore.sequence, balance: relayerBefore.balance - 200n });
  });

  it('simulates and relays contract operations: invoke_contract, upload_wasm, create_contract', async () => {
    const bodies = [
      {
        operations: [
          { type: 'invoke_contract', contract_address: CONTRACT, function_name: 'transfer', args: [{ address: userKp.publicKey() }, { i128: '1000' }] },
        ],
      },
      { operations: [{ type: 'upload_wasm', wasm: { type: 'hex', hex: '0061736d0100000001' } }] },
      {
        operations: [{ type: 'create_contract', source: { from: 'address', address: relayer.publicKey() }, wasm_hash: 'cd'.repeat(32), salt: '01'.repeat(32) }],
      },
    ];
    const ids: string[] = [];
    for (const body of bodies) {
      const r = await send(svc, RELAYER, { network: 'stellar-local', ...body });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      ids.push(r.json.data.id);
    }
    for (const id of ids) {
      const done = await waitForStatus(svc, RELAYER, id, ['confirmed', 'failed', 'expired']);
      expect(done.status, done.status_reason).toBe('confirmed');
      // The simulated resource fee is part of the fee.
      expect(done.fee).toBeGreaterThan(100);
    }
    const q = await svc.gql(`query($id: ID!) { transaction(id: $id) { to } }`, { id: ids[0] });
    expect(q.data.transaction.to).toBe(CONTRACT);
  });

  it('supports every memo variant', async () => {
    const memos = [
      { type: 'none' },
      { type: 'id', value: 18446744073709551615n },
      { type: 'hash', value: Array.from({ length: 32 }, (_, i) => i) },
      { type: 'return', value: Array.from({ length: 32 }, () => 255) },
    ];
    for (const memo of memos) {
      // Sent as lossless JSON, as a client with big integers would.
      const body = JSON.stringify({ network: 'stellar-local', operations: [payment()], memo }, (_k, v) => (typeof v === 'bigint' ? `__${v}__` : v)).replace(
        /"__(\d+)__"/,
        '$1',
      );
      const res = await svc.request('POST', `/api/v1/relayers/${RELAYER}/transactions`, body);
      const json = (await res.json()) as any;
      expect(res.status, JSON.stringify(json)).toBe(200);
      const done = await waitForStatus(svc, RELAYER, json.data.id, ['confirmed', 'failed', 'expired']);
      expect(done.status, done.status_reason).toBe('confirmed');
      expect(done.memo).toEqual(memo.type === 'id' ? { type: 'id', value: '18446744073709551615' } : memo);
      const tx = TransactionBuilder.fromXDR(done.signed_envelope_xdr, PASSPHRASE) as { memo: { type: string } };
      expect(tx.memo.type).toBe(memo.type);
    }
  });

  it('refuses invalid requests with a 400 naming the field or rule, and records nothing', async () => {
    const before = (await (await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?per_page=100`)).json()) as any;
    const signedByUser = new TransactionBuilder(new Account(userKp.publicKey(), '1'), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(0)
      .build();
    signedByUser.sign(userKp);
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ network: 'mainnet', operations: [payment()] }, /network: must be the relayer's network "stellar-local"/],
      [{ network: 'stellar-local' }, /operations: exactly one of operations or transaction_xdr/],
      [{ network: 'stellar-local', operations: [payment()], transaction_xdr: signedByUser.toXDR() }, /exactly one of operations or transaction_xdr/],
      [{ network: 'stellar-local', operations: [payment()], fee_bump: true }, /fee_bump: only applies to a signed transaction_xdr/],
      [{ network: 'stellar-local', operations: [payment()], memo: { type: 'text', value: 'x'.repeat(29) } }, /memo.value: must be at most 28 bytes/],
      [{ network: 'stellar-local', operations: [payment()], memo: { type: 'hash', value: [1, 2, 3] } }, /memo.value/],
      [{ network: 'stellar-local', operations: [payment()], memo: { type: 'id', value: -1 } }, /memo.value: must be a non-negative integer/],
      [{ network: 'stellar-local', operations: [payment('1.5')] }, /operations\[0\].amount: must be an integer number of stroops/],
      [{ network: 'stellar-local', operations: [{ ...payment(), destination: 'GNOPE' }] }, /operations\[0\].destination/],
      [{ network: 'stellar-local', operations: [payment()], valid_until: new Date(Date.now() - 60_000).toISOString() }, /valid_until: must be in the future/],
      [{ network: 'stellar-local', operations: [payment()], source_account: userKp.publicKey() }, /source_account: must be the relayer's address/],
      [{ network: 'stellar-local', transaction_xdr: 'AAAA' }, /transaction_xdr: is not a valid base64 transaction envelope/],
      [{ network: 'stellar-local', transaction_xdr: signedByUser.toXDR() }, /fee_bump: must be true for an already-signed transaction_xdr/],
      // The fee bump needs 200 stroops: max_fee caps what the relayer pays.
      [
        { network: 'stellar-local', transaction_xdr: signedByUser.toXDR(), fee_bump: true, max_fee: 150 },
        /max_fee: transaction needs a fee of 200 stroops, above max_fee 150/,
      ],
      [{ network: 'stellar-local', operations: [payment()], to: destKp.publicKey() }, /to: not a field of stellar transactions/],
      [{ transaction: 'AAAA' }, /network/],
    ];
    for (const [body, pattern] of cases) expectBadRequest(await send(svc, RELAYER, body), pattern);

    const gql = await gqlSend({ network: 'stellar-local', operations: [payment()], maxFee: 50 });
    expect(gql.errors?.[0]).toMatchObject({
      message: 'Bad Request',
      extensions: { code: 'BAD_REQUEST', detail: expect.stringMatching(/max_fee: transaction needs a fee of 100 stroops, above max_fee 50/) },
    });

    const after = (await (await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?per_page=100`)).json()) as any;
    expect(after.pagination.total_items).toBe(before.pagination.total_items);
  });

  it('enforces the relayer policy (max_fee, min_balance), set through the API in the reference format', async () => {
    const patch = (policies: unknown) => svc.request('PATCH', `/api/v1/relayers/${RELAYER}`, { policies });
    expect((await patch({ max_fee: 150 })).status).toBe(200);
    try {
      expectBadRequest(
        await send(svc, RELAYER, { network: 'stellar-local', operations: [payment(), payment()] }),
        /policy max_fee: transaction fee 200 stroops exceeds the relayer's max_fee of 150/,
      );
      const ok = await send(svc, RELAYER, { network: 'stellar-local', operations: [payment()] });
      expect(ok.status).toBe(200);
      expect((await waitForStatus(svc, RELAYER, ok.json.data.id, ['confirmed', 'failed', 'expired'])).status).toBe('confirmed');
      const balance = stub.account(relayer.publicKey())!.balance;
      expect((await patch({ min_balance: Number(balance) })).status).toBe(200);
      expectBadRequest(await send(svc, RELAYER, { network: 'stellar-local', operations: [payment()] }), /policy min_balance/);
      const bad = await patch({ max_fee: -1, gas_price_cap: 1 });
      expect(bad.status).toBe(400);
    } finally {
      expect((await patch(null)).status).toBe(200);
    }
  });

  it('fails a fee-bumped transaction whose inner signature is not its source’s (bad signature)', async () => {
    const user = stub.account(userKp.publicKey())!;
    const inner = new TransactionBuilder(new Account(userKp.publicKey(), user.sequence.toString()), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(60)
      .build();
    inner.sign(strangerKp);
    const r = await send(svc, RELAYER, { network: 'stellar-local', transaction_xdr: inner.toXDR(), fee_bump: true });
    expect(r.status).toBe(200);
    const done = await waitForStatus(svc, RELAYER, r.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(done.status).toBe('failed');
    expect(done.status_reason).toMatch(/^rejected by the network: a signature is missing or invalid \(tx_fee_bump_inner_failed \(inner tx_bad_auth\)\)/);
    expect(stub.account(userKp.publicKey())).toEqual(user);
  });

  it('fails a transaction whose fee is below the network minimum, and the next one closes the sequence gap', async () => {
    const seqBefore = stub.account(relayer.publicKey())!.sequence;
    const cheap = new TransactionBuilder(new Account(relayer.publicKey(), '1'), { fee: '50', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: destKp.publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(0)
      .build();
    const r = await send(svc, RELAYER, { network: 'stellar-local', transaction_xdr: cheap.toXDR() });
    expect(r.status).toBe(200);
    const failed = await waitForStatus(svc, RELAYER, r.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(failed.status).toBe('failed');
    expect(failed.status_reason).toMatch(/its fee is below what the network requires \(tx_insufficient_fee/);
    expect(failed.sequence_number).toBe((seqBefore + 1n).toString());

    // seqBefore+1 was never used: the next transaction, given seqBefore+2, is refused with
    // tx_bad_seq and takes seqBefore+1 instead; the one after it needs no correction.
    const next = await send(svc, RELAYER, { network: 'stellar-local', operations: [payment()] });
    const nextDone = await waitForStatus(svc, RELAYER, next.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(nextDone.status, nextDone.status_reason).toBe('confirmed');
    expect(nextDone.sequence_number).toBe((seqBefore + 1n).toString());
    const third = await send(svc, RELAYER, { network: 'stellar-local', operations: [payment()] });
    const thirdDone = await waitForStatus(svc, RELAYER, third.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(thirdDone.status, thirdDone.status_reason).toBe('confirmed');
    expect(thirdDone.sequence_number).toBe((seqBefore + 2n).toString());
    expect(stub.account(relayer.publicKey())!.sequence).toBe(seqBefore + 2n);
    // Two hashes were broadcast for the corrected one.
    const q = await svc.gql(`query($id: ID!) { transaction(id: $id) { hashes nonce } }`, { id: next.json.data.id });
    expect(q.data.transaction.hashes).toHaveLength(2);
    expect(String(q.data.transaction.nonce)).toBe((seqBefore + 1n).toString());
  });

  it('reports a transaction included in a ledger whose operation failed as failed, its sequence number used', async () => {
    const seqBefore = stub.account(relayer.publicKey())!.sequence;
    const balanceBefore = stub.account(relayer.publicKey())!.balance;
    // More than the relayer holds: the payment fails when applied, the fee is still charged.
    const r = await send(svc, RELAYER, { network: 'stellar-local', operations: [payment((10_000n * XLM).toString())] });
    expect(r.status).toBe(200);
    const done = await waitForStatus(svc, RELAYER, r.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(done.status).toBe('failed');
    expect(done.status_reason).toMatch(/^included in ledger \d+ but failed: an operation failed \(tx_failed \(operations\[0\]: payment_underfunded\)\)$/);
    expect(done).toMatchObject({ result_code: 'tx_failed', ledger: expect.any(Number) });
    expect(stub.account(relayer.publicKey())).toEqual({ sequence: seqBefore + 1n, balance: balanceBefore - 100n });
    // No gap: the next one needs no correction.
    const next = await send(svc, RELAYER, { network: 'stellar-local', operations: [payment()] });
    const nextDone = await waitForStatus(svc, RELAYER, next.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(nextDone.status, nextDone.status_reason).toBe('confirmed');
    expect(nextDone.sequence_number).toBe((seqBefore + 2n).toString());
  });

  it('takes a new sequence number when the account was used outside the service', async () => {
    // Five payments signed with the relayer's key by someone else, straight to the network.
    const outside = stub.account(relayer.publicKey())!.sequence + 5n;
    await useOutside(stub, relayer, 5);
    await waitFor('the outside payments to be applied', () => stub.account(relayer.publicKey())!.sequence === outside);
    const r = await send(svc, RELAYER, { network: 'stellar-local', operations: [payment()] });
    const done = await waitForStatus(svc, RELAYER, r.json.data.id, ['confirmed', 'failed', 'expired']);
    expect(done.status, done.status_reason).toBe('confirmed');
    expect(done.sequence_number).toBe((outside + 1n).toString());
    const relayerRow = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
    expect(relayerRow.nextNonce).toBe(outside + 2n);
  });

  it('expires a transaction the network did not include before valid_until, then carries on', async () => {
    const seqBefore = manual.account(relayer.publicKey())!.sequence;
    const validUntil = new Date(Date.now() + 2_000);
    const r = await send(svc, MANUAL, { network: 'stellar-manual', operations: [payment()], valid_until: validUntil.toISOString() });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const id = r.json.data.id;
    await waitForStatus(svc, MANUAL, id, ['submitted']);
    // No ledger closes until after the time bound: the queued transaction can no longer be applied.
    await new Promise((res) => setTimeout(res, validUntil.getTime() - Date.now() + 1_100));
    manual.closeLedger();
    const expired = await waitForStatus(svc, MANUAL, id, ['confirmed', 'failed', 'expired']);
    expect(expired.status).toBe('expired');
    expect(expired.status_reason).toMatch(/not included before its time bound/);
    expect(manual.account(relayer.publicKey())!.sequence).toBe(seqBefore);

    const closing = setInterval(() => manual.closeLedger(), 100);
    try {
      const next = await send(svc, MANUAL, { network: 'stellar-manual', operations: [payment()] });
      const done = await waitForStatus(svc, MANUAL, next.json.data.id, ['confirmed', 'failed', 'expired']);
      expect(done.status, done.status_reason).toBe('confirmed');
      expect(done.sequence_number).toBe((seqBefore + 1n).toString());
      expect(manual.account(relayer.publicKey())!.sequence).toBe(seqBefore + 1n);
    } finally {
      clearInterval(closing);
    }
    // The expired record still says which number it had.
    expect((await getRecord(svc, MANUAL, id)).sequence_number).toBe((seqBefore + 1n).toString());
  });
});

describe('stellar config', () => {
  it('refuses a stellar network without a passphrase and unknown policy fields, naming them', async () => {
    const keys = await keystores();
    try {
      const key = await keys.create('k');
      const err = await startTestService({
        config: () => ({
          relayers: [{ id: 'r', name: 'r', network: 'n', network_type: 'stellar', signer_id: 's', policies: { gas_price_cap: 1 } }],
          signers: [localSigner('s', key.file)],
          networks: [{ type: 'stellar', network: 'n', rpc_urls: ['http://127.0.0.1:1'] }],
        }),
      }).then(
        (s) => s.stop().then(() => undefined),
        (e: Error) => e,
      );
      expect(err?.message).toMatch(/passphrase: required for stellar networks/);
      expect(err?.message).toMatch(/relayers\[0\] \("r"\)\.policies/);
    } finally {
      await keys.remove();
    }
  });
});
