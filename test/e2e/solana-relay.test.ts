// Solana relayers end to end: config file -> REST/GraphQL -> pipeline -> a local Solana RPC
// stand-in on LiteSVM, which executes the transactions for real.
import { getBase64EncodedWireTransaction, getTransactionDecoder, type Address, type Blockhash, type SignatureBytes } from '@solana/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimRow, LEASE_MS } from '../../src/db/lease.js';
import { stepTransactions } from '../../src/core/step-runner.js';
import { createLocalSigner } from '../../src/signers/index.js';
import { startWorkers } from '../../src/core/worker.js';
import { startProxy } from '../support/rpc-proxy.js';
import { databaseKinds } from '../support/postgres.js';
import { startTestService, type TestService } from '../support/service.js';
import { startSolanaRpc } from '../support/solana-rpc.js';
import {
  expectBadRequest,
  keystores,
  localSigner,
  send,
  SIGNING_KEY,
  startReceiver,
  subscribe,
  waitFor,
  waitForStatus,
  xSignatureValid,
} from '../chains/stellar/support.js';
import { buildTx, COMPUTE_BUDGET, NO_BLOCKHASH, party, setComputeUnitLimit, SOL, transferSol, type Party } from '../chains/solana/support.js';

const RELAYER = 'solana-relayer';
const FINAL = ['confirmed', 'failed', 'expired'];
// Blockhashes expire only when a test moves the chain past their lifetime (stub.advance), never
// by chance between building a transaction and the relayer signing it.
const LIFETIME = 3_000;

async function solanaSetup(opts: { db?: 'pglite' | 'postgres'; workers?: boolean; hooks?: string; rpcUrl?: (stubUrl: string) => Promise<string> } = {}) {
  const keys = await keystores();
  const key = await keys.create('solana');
  const relayer = createLocalSigner(key.seed, 'solana').address as Address;
  const [user, dest] = await Promise.all([party(), party()]);
  const stub = await startSolanaRpc({
    airdrops: [
      { address: relayer, lamports: 10n * SOL },
      { address: user.address, lamports: 5n * SOL },
    ],
    slotMs: 100,
    blockhashLifetime: LIFETIME,
    finalizedAfter: 6,
  });
  const rpcUrl = opts.rpcUrl ? await opts.rpcUrl(stub.url) : stub.url;
  const svc = await startTestService({
    db: opts.db,
    workers: opts.workers,
    config: () => ({
      relayers: [
        {
          id: RELAYER,
          name: 'Solana relayer',
          network: 'solana-local',
          network_type: 'solana',
          paused: false,
          signer_id: 'solana-key',
          notification_id: opts.hooks ? 'hooks' : null,
          policies: {},
        },
      ],
      signers: [localSigner('solana-key', key.file)],
      notifications: opts.hooks ? [{ id: 'hooks', type: 'webhook', url: opts.hooks, signing_key: { type: 'plain', value: SIGNING_KEY } }] : [],
      networks: [{ type: 'solana', network: 'solana-local', rpc_urls: [rpcUrl], average_blocktime_ms: 50, is_testnet: true }],
    }),
  });
  const balance = (a: Address) => stub.svm.getBalance(a) ?? 0n;
  const latestBlockhash = () => stub.svm.latestBlockhash() as Blockhash;
  return {
    relayer,
    user,
    dest,
    stub,
    svc,
    balance,
    latestBlockhash,
    /** A transfer from the user, signed by the user, with the relayer as fee payer. */
    userTransfer: (amount = SOL / 10n, blockhash = latestBlockhash(), signer: Party = user) =>
      buildTx(relayer, [transferSol(user.address, dest.address, amount)], blockhash, [signer.keyPair]),
    async stop() {
      await svc.stop();
      await stub.stop();
      await keys.remove();
    },
  };
}

describe.each(await databaseKinds())('solana relayer on %s', (db) => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let s: Awaited<ReturnType<typeof solanaSetup>>;
  let svc: TestService;

  beforeAll(async () => {
    receiver = await startReceiver();
    s = await solanaSetup({ db, hooks: receiver.url });
    svc = s.svc;
  });
  afterAll(async () => {
    await s?.stop();
    await receiver?.close();
  });

  it('signs a user transfer as fee payer, submits it and tracks it to finalized (REST), with every webhook and live update', async () => {
    const destBefore = s.balance(s.dest.address);
    const relayerBefore = s.balance(s.relayer);
    const live = subscribe(svc, `subscription($r: ID!) { transactionUpdated(relayerId: $r) { id status hash networkData } }`, { r: RELAYER });
    expect((await live.opened).status).toBe(200);
    const wire = await s.userTransfer(SOL / 4n);
    const r = await send(svc, RELAYER, { transaction: wire });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    expect(r.json.data).toMatchObject({ status: 'pending', network_type: 'solana', relayer_id: RELAYER, from: s.relayer });
    const id = r.json.data.id;

    const done = await waitForStatus(svc, RELAYER, id, FINAL);
    expect(done.status, done.status_reason).toBe('confirmed');
    // LiteSVM executed it: the destination got the lamports, the relayer paid both signatures.
    expect(s.balance(s.dest.address)).toBe(destBefore + SOL / 4n);
    expect(s.balance(s.relayer)).toBe(relayerBefore - 10_000n);
    expect(done).toMatchObject({ signature: done.hash, fee: 10_000, slot: expect.any(Number), recent_blockhash: expect.any(String) });
    const signed = getTransactionDecoder().decode(Buffer.from(done.transaction, 'base64'));
    expect(Object.values(signed.signatures).every((sig) => sig !== null)).toBe(true);

    await waitFor('five webhook events', () => receiver.statusesOf(id).length >= 5);
    expect(receiver.statusesOf(id)).toEqual(['pending', 'sent', 'submitted', 'mined', 'confirmed']);
    const events = receiver.received.filter((e) => e.body.payload?.id === id);
    expect(events.every(xSignatureValid)).toBe(true);
    expect(events.at(-1)!.body.payload).toMatchObject({ payload_type: 'transaction', status: 'confirmed', network_type: 'solana', signature: done.hash });

    // GraphQL subscribers see the same changes, in the same order.
    const mine = () => live.events.map((e) => e.data.transactionUpdated).filter((t) => t.id === id);
    await waitFor('five live updates', () => mine().length >= 5);
    await live.close();
    expect(mine().map((t) => t.status)).toEqual(['pending', 'sent', 'submitted', 'mined', 'confirmed']);
    expect(mine().at(-1)).toMatchObject({ hash: done.hash, networkData: { signature: done.hash, slot: done.slot } });
  });

  it('fills in a missing blockhash and replaces an expired one when the relayer is the only signer (GraphQL)', async () => {
    const send = (transaction: string) =>
      svc.gql(`mutation($input: SendTransactionInput!) { sendTransaction(relayerId: "${RELAYER}", input: $input) { id status } }`, { input: { transaction } });
    const none = await send(await buildTx(s.relayer, [setComputeUnitLimit(50_000)], NO_BLOCKHASH));
    expect(none.errors).toBeUndefined();
    const old = s.latestBlockhash();
    s.stub.advance(LIFETIME + 5); // past the blockhash lifetime
    const stale = await send(await buildTx(s.relayer, [setComputeUnitLimit(60_000)], old));
    expect(stale.errors).toBeUndefined();

    for (const id of [none.data.sendTransaction.id, stale.data.sendTransaction.id]) {
      const done = await waitForStatus(svc, RELAYER, id, FINAL);
      expect(done.status, done.status_reason).toBe('confirmed');
      expect(done.recent_blockhash).not.toBe(old);
      expect(done.recent_blockhash).not.toBe(NO_BLOCKHASH);
      const q = await svc.gql(`query($id: ID!) { transaction(id: $id) { status hash hashes networkData } }`, { id });
      expect(q.data.transaction).toMatchObject({
        status: 'confirmed',
        hashes: [done.hash],
        networkData: { signature: done.hash, recent_blockhash: done.recent_blockhash },
      });
    }
  });

  it('refuses transactions it must not sign with a 400 naming the rule, and records nothing', async () => {
    const countOf = async () =>
      ((await (await svc.request('GET', `/api/v1/relayers/${RELAYER}/transactions?per_page=1`)).json()) as any).pagination.total_items;
    const before = await countOf();
    const stranger = await party();
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { transaction: await buildTx(s.user.address, [transferSol(s.user.address, s.dest.address, 1n)], s.latestBlockhash(), [s.user.keyPair]) },
        new RegExp(`transaction: fee payer must be the relayer ${s.relayer}`),
      ],
      [
        { transaction: await buildTx(s.relayer, [transferSol(s.user.address, s.dest.address, 1n)], s.latestBlockhash()) },
        /transaction: missing signature of required signer/,
      ],
      [
        { transaction: await buildTx(s.relayer, [transferSol(s.relayer, stranger.address, SOL)], s.latestBlockhash()) },
        /policy relayer_account: instruction 0 .* uses the relayer's account/,
      ],
      [{ transaction: 'not base64!' }, /transaction: must be a base64 string/],
      [{ transaction: 'AAAA' }, /transaction: is not a valid Solana wire transaction/],
      [{}, /transaction: required/],
      [{ transaction: await s.userTransfer(), value: 1 }, /value: not a field of solana transactions/],
    ];
    // Co-signed with a blockhash that has expired: only the other signer could renew it.
    const old = s.latestBlockhash();
    s.stub.advance(LIFETIME + 5);
    cases.push([{ transaction: await s.userTransfer(SOL / 100n, old) }, /blockhash is missing or expired and other signers have signed/]);
    for (const [body, pattern] of cases) expectBadRequest(await send(svc, RELAYER, body), pattern);
    expect(await countOf()).toBe(before);
  });

  it('enforces the reference system’s Solana policy fields, set through the API', async () => {
    const patch = (policies: unknown) => svc.request('PATCH', `/api/v1/relayers/${RELAYER}`, { policies });
    const rules: [Record<string, unknown>, RegExp][] = [
      [{ allowed_programs: [COMPUTE_BUDGET] }, /policy allowed_programs: instruction 0 calls program 1{32}, which is not allowed/],
      [{ allowed_accounts: [s.user.address] }, new RegExp(`policy allowed_accounts: account ${s.dest.address} is not in allowed_accounts`)],
      [{ disallowed_accounts: [s.dest.address] }, new RegExp(`policy disallowed_accounts: account ${s.dest.address} is disallowed`)],
      [{ max_signatures: 1 }, /policy max_signatures: transaction needs 2 signatures, more than 1/],
      [{ max_tx_data_size: 100 }, /policy max_tx_data_size: transaction is \d+ bytes, more than 100/],
      [{ max_allowed_fee_lamports: 9_999 }, /policy max_allowed_fee_lamports: fee 10000 lamports exceeds 9999/],
      [{ min_balance: Number(10n * SOL) }, /policy min_balance: paying 10000 lamports would leave the relayer below its min_balance/],
    ];
    try {
      for (const [policies, pattern] of rules) {
        const p = await patch(policies);
        expect(p.status, await p.clone().text()).toBe(200);
        expectBadRequest(await send(svc, RELAYER, { transaction: await s.userTransfer() }), pattern);
        expect((await patch(null)).status).toBe(200);
      }
      expect((await patch({ allowed_programs: ['not-an-address'] })).status).toBe(400);
      expect((await patch({ gas_price_cap: 1 })).status).toBe(400);
      // Within every limit it goes through.
      const within = await patch({
        allowed_programs: ['11111111111111111111111111111111'],
        max_signatures: 2,
        max_allowed_fee_lamports: 10_000,
        min_balance: 1_000_000,
      });
      expect(within.status).toBe(200);
      const r = await send(svc, RELAYER, { transaction: await s.userTransfer(SOL / 100n) });
      expect(r.status, JSON.stringify(r.json)).toBe(200);
      expect((await waitForStatus(svc, RELAYER, r.json.data.id, FINAL)).status).toBe('confirmed');
    } finally {
      await patch(null);
    }
  });

  it('fails a transaction whose co-signature is forged (bad signature), and one the program refuses', async () => {
    const userBefore = s.balance(s.user.address);
    const tx = getTransactionDecoder().decode(Buffer.from(await s.userTransfer(), 'base64'));
    const sig = new Uint8Array(tx.signatures[s.user.address]!);
    sig[10] ^= 0xff;
    const forged = getBase64EncodedWireTransaction({ ...tx, signatures: { ...tx.signatures, [s.user.address]: sig as SignatureBytes } });
    const bad = await send(svc, RELAYER, { transaction: forged });
    expect(bad.status).toBe(200);
    const badDone = await waitForStatus(svc, RELAYER, bad.json.data.id, FINAL);
    expect(badDone.status).toBe('failed');
    expect(badDone.status_reason).toBe('rejected by the network: signature verification failed');

    // More than the user has: the node's preflight refuses it, nothing is paid.
    const relayerBefore = s.balance(s.relayer);
    const broke = await send(svc, RELAYER, { transaction: await s.userTransfer(100n * SOL) });
    expect(broke.status).toBe(200);
    const brokeDone = await waitForStatus(svc, RELAYER, broke.json.data.id, FINAL);
    expect(brokeDone.status).toBe('failed');
    expect(brokeDone.status_reason).toMatch(/^rejected by the network: preflight failed: .*InstructionError/);
    expect(s.balance(s.user.address)).toBe(userBefore);
    expect(s.balance(s.relayer)).toBe(relayerBefore);
  });
});

describe('solana relayer: blockhash expiry, step by step', () => {
  let s: Awaited<ReturnType<typeof solanaSetup>>;
  beforeAll(async () => {
    // No workers: the test runs the pipeline's steps itself, between chain events.
    s = await solanaSetup({ workers: false });
  });
  afterAll(() => s?.stop());

  const row = (id: string) => s.svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id } });
  // As the worker does: take the row's lease, then advance it one step.
  const step = async (id: string) => {
    if ((await row(id)).leaseOwner !== s.svc.rt.instanceId)
      expect(await claimRow(s.svc.rt.db.prisma, 'transactions', id, s.svc.rt.instanceId, LEASE_MS)).toBe(true);
    await stepTransactions(s.svc.rt, [await row(id)]);
  };

  it('signs again with a fresh blockhash when its blockhash expires before a node accepts it', async () => {
    const r = await send(s.svc, RELAYER, { transaction: await buildTx(s.relayer, [setComputeUnitLimit(70_000)], s.latestBlockhash()) });
    expect(r.status).toBe(200);
    const id = r.json.data.id;
    await step(id);
    const signed = await row(id);
    expect(signed).toMatchObject({ status: 'sent', hashes: [signed.hash] });

    s.stub.advance(LIFETIME + 5); // its blockhash is gone before it is sent
    await step(id);
    const renewed = await row(id);
    expect(renewed.status).toBe('sent');
    expect(renewed.hashes).toEqual([signed.hash, renewed.hash]);
    expect(renewed.hash).not.toBe(signed.hash);

    await step(id);
    expect((await row(id)).status).toBe('submitted');
    s.stub.advance(10);
    await step(id);
    const final = await row(id);
    expect(final.status).toBe('confirmed');
    expect(s.stub.svm.getTransaction(renewed.hash as never)).not.toBeNull();
    expect(s.stub.svm.getTransaction(signed.hash as never)).toBeNull();
  });

  it('after a crash between sending and recording it, sends the same signed bytes again: applied once', async () => {
    const destBefore = s.balance(s.dest.address);
    const r = await send(s.svc, RELAYER, { transaction: await s.userTransfer(SOL / 20n) });
    const id = r.json.data.id;
    await step(id);
    const signed = await row(id);
    const state = signed.chainState as { wire: string; signature: string };
    expect(state.signature).toBe(signed.hash);
    // The previous run got this far: the node has it, the row does not know.
    const rpc = await fetch(s.stub.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'sendTransaction', params: [state.wire, { encoding: 'base64' }] }),
    });
    expect(((await rpc.json()) as any).result).toBe(signed.hash);
    await step(id);
    expect(await row(id)).toMatchObject({ status: 'submitted', hash: signed.hash, hashes: [signed.hash] });
    s.stub.advance(10);
    await step(id);
    expect((await row(id)).status).toBe('confirmed');
    expect(s.balance(s.dest.address)).toBe(destBefore + SOL / 20n);
  });

  it('writes nothing once its lease has moved to another instance, and marks sent with sent_at', async () => {
    const r = await send(s.svc, RELAYER, { transaction: await buildTx(s.relayer, [setComputeUnitLimit(80_000)], s.latestBlockhash()) });
    const id = r.json.data.id;
    await step(id);
    const signed = await row(id);
    expect(signed.status).toBe('sent');
    expect(signed.sentAt).toBeInstanceOf(Date);
    // This instance read the row under its lease; the lease then ran out and another instance took it.
    expect(await claimRow(s.svc.rt.db.prisma, 'transactions', id, s.svc.rt.instanceId, LEASE_MS)).toBe(true);
    const stale = await row(id);
    await s.svc.rt.db.prisma.$executeRaw`UPDATE transactions SET lease_owner = 'other-instance', lease_until = now() + interval '30 seconds' WHERE id = ${id}`;
    const calls = s.stub.calls.length;
    await stepTransactions(s.svc.rt, [stale]);
    // The broadcast happened (the same signed bytes, which can land once), but its outcome is not written over the new owner's row.
    expect(s.stub.calls.length).toBeGreaterThan(calls);
    const after = await row(id);
    expect(after).toMatchObject({ status: 'sent', leaseOwner: 'other-instance', updatedAt: stale.updatedAt });
  });

  it('expires a co-signed transaction whose blockhash expired before it was sent (the relayer cannot renew it)', async () => {
    const userBefore = s.balance(s.user.address);
    const r = await send(s.svc, RELAYER, { transaction: await s.userTransfer() });
    expect(r.status).toBe(200);
    s.stub.advance(LIFETIME + 5);
    // Through the service's own worker this time.
    const workers = await startWorkers(s.svc.rt);
    try {
      const done = await waitForStatus(s.svc, RELAYER, r.json.data.id, FINAL);
      expect(done.status).toBe('expired');
      expect(done.status_reason).toMatch(/blockhash expired before it was sent; other signers signed it/);
    } finally {
      await workers.stop();
    }
    expect(s.balance(s.user.address)).toBe(userBefore);
  });
});

/** A JSON-RPC proxy to `target` that, while `lose` is set, forwards broadcasts but loses their answers (502). */
async function lossyProxy(target: string) {
  const state = { lose: false, lost: 0 };
  const proxy = await startProxy(target, async (body, forward) => {
    const answer = await forward();
    if (!state.lose || !body.includes('"sendTransaction"')) return answer;
    state.lost++;
    return { status: 502, text: 'bad gateway' };
  });
  return { ...proxy, state };
}

describe('solana relayer: a broadcast whose answer is lost', () => {
  let s: Awaited<ReturnType<typeof solanaSetup>>;
  let proxy: Awaited<ReturnType<typeof lossyProxy>>;
  beforeAll(async () => {
    s = await solanaSetup({ rpcUrl: async (url) => (proxy = await lossyProxy(url)).url });
  });
  afterAll(async () => {
    await s?.stop();
    await proxy?.close();
  });

  it('counts as possibly sent: after its blockhash expires it is found on chain, never signed again', async () => {
    proxy.state.lose = true;
    const r = await send(s.svc, RELAYER, { transaction: await buildTx(s.relayer, [setComputeUnitLimit(90_001)], NO_BLOCKHASH) });
    expect(r.status).toBe(200);
    const id = r.json.data.id;
    // It landed; the relayer never heard so. Then its blockhash goes before the relayer looks again.
    await waitFor('the broadcast to land', () => s.stub.executed.length > 0 && proxy.state.lost > 0);
    s.stub.advance(LIFETIME + 10);
    proxy.state.lose = false;
    const done = await waitForStatus(s.svc, RELAYER, id, FINAL, 40_000);
    expect(done).toMatchObject({ status: 'confirmed', hash: s.stub.executed[0].signature, sent_at: expect.any(String) });
    expect(s.stub.executed).toHaveLength(1);
    const q = await s.svc.gql(`query($id: ID!) { transaction(id: $id) { hashes } }`, { id });
    expect(q.data.transaction.hashes).toEqual([done.hash]);
  }, 60_000);
});
