// kill -9 at every crash point of the Stellar pipeline, then a restart: every accepted transaction
// ends confirmed, sequence numbers stay contiguous, and each payment is applied on the chain (the
// stand-in, which checks signatures and sequence numbers with the SDK) exactly once.
import { Account, Asset, Keypair, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { faultEnv, startArmed } from '../support/crash.js';
import { startInstance, type Instance } from '../support/instance.js';
import { startStellarRpc, type StellarRpcStub } from '../support/stellar-rpc.js';
import { keystores, localSigner } from '../chains/stellar/support.js';

const PASSPHRASE = 'Relayer Fault Network ; 2025';
const XLM = 10_000_000n;
const START_SEQ = 70_000_000n << 32n;
const RELAYER = 'stellar-relayer';
const SEND_PATH = `/api/v1/relayers/${RELAYER}/transactions`;
const FINAL = ['confirmed', 'failed', 'expired', 'canceled'];

async function rpcCall(stub: StellarRpcStub, method: string, params: object) {
  const res = await fetch(stub.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return ((await res.json()) as any).result;
}

/** `count` payments of 1 stroop from `kp`'s account to `to`, signed and sent by someone other than the service. */
async function useOutside(stub: StellarRpcStub, kp: Keypair, to: string, count: number) {
  const seq = stub.account(kp.publicKey())!.sequence;
  for (let i = 0n; i < BigInt(count); i++) {
    const tx = new TransactionBuilder(new Account(kp.publicKey(), (seq + i).toString()), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: to, asset: Asset.native(), amount: '0.0000001' }))
      .setTimeout(0)
      .build();
    tx.sign(kp);
    expect((await rpcCall(stub, 'sendTransaction', { transaction: tx.toXDR() })).status).toBe('PENDING');
  }
  const until = Date.now() + 10_000;
  while (stub.account(kp.publicKey())!.sequence < seq + BigInt(count)) {
    if (Date.now() > until) throw new Error('outside payments not applied');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function allRows(instance: Instance): Promise<any[]> {
  const res = await instance.request('GET', `${SEND_PATH}?per_page=100`);
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data;
}

async function waitRows(instance: Instance, done: (rows: any[]) => boolean, ms = 60_000): Promise<any[]> {
  const until = Date.now() + ms;
  for (;;) {
    const rows = await allRows(instance);
    if (done(rows)) return rows;
    if (Date.now() > until)
      throw new Error(`timed out; rows: ${JSON.stringify(rows.map((r) => [r.status, r.status_reason]))}\n${instance.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A service on a Stellar stand-in, its relayer funded, its files and database cleaned up by `cleanup`. */
async function setup(db: 'pglite' | 'postgres', cleanup: (() => Promise<unknown>)[]) {
  const keys = await keystores();
  cleanup.push(() => keys.remove());
  const key = await keys.create('stellar');
  const relayer = Keypair.fromRawEd25519Seed(Buffer.from(key.seed));
  const dest = Keypair.random();
  const user = Keypair.random();
  const stub = await startStellarRpc({
    networkPassphrase: PASSPHRASE,
    ledgerIntervalMs: 100,
    accounts: [
      { address: relayer.publicKey(), balance: 1_000n * XLM, sequence: START_SEQ },
      { address: dest.publicKey(), balance: 10n * XLM, sequence: 1n },
      { address: user.publicKey(), balance: 10n * XLM, sequence: 4_000n },
    ],
  });
  cleanup.push(() => stub.stop());
  const env = await faultEnv(
    db,
    {
      relayers: [
        { id: RELAYER, name: 'Stellar relayer', network: 'stellar-local', network_type: 'stellar', paused: false, signer_id: 'stellar-key', policies: {} },
      ],
      signers: [localSigner('stellar-key', key.file)],
      notifications: [],
      networks: [{ type: 'stellar', network: 'stellar-local', rpc_urls: [stub.url], passphrase: PASSPHRASE, average_blocktime_ms: 100, is_testnet: true }],
    },
    'faults-stellar',
    cleanup,
  );
  return { relayer, dest, user, stub, env };
}

/** Sends `count` payments of distinct amounts (stroops); the ids answered 200, with their amounts. */
function sendPayments(instance: Instance, to: string, count: number, first = 1_000) {
  const accepted = new Map<string, bigint>();
  const all = Array.from({ length: count }, async (_, i) => {
    const stroops = BigInt(first + i);
    try {
      const res = await instance.request('POST', SEND_PATH, {
        network: 'stellar-local',
        operations: [{ type: 'payment', destination: to, amount: Number(stroops), asset: { type: 'native' } }],
      });
      if (res.status === 200) accepted.set(((await res.json()) as any).data.id, stroops);
    } catch {
      // The process died before answering: not known to the client, so not counted as accepted.
    }
  });
  return { accepted, done: Promise.all(all) };
}

const stroopsOf = (amount: string) => {
  const [whole, frac = ''] = amount.split('.');
  return BigInt(whole) * XLM + BigInt(frac.padEnd(7, '0'));
};

const POINTS: { point: string; outside: number; takeover?: boolean }[] = [
  { point: 'stellar.send.signed', outside: 0 },
  { point: 'stellar.send.saved', outside: 0 },
  { point: 'stellar.send.broadcast', outside: 0 },
  // Re-signing at a new sequence number: the account was used outside the service after it
  // started, so its first numbers are taken on chain by transactions that are not its own.
  { point: 'stellar.resubmit.signed', outside: 3 },
  { point: 'stellar.resubmit.saved', outside: 3 },
  { point: 'stellar.resubmit.broadcast', outside: 3 },
  // Taken over by another instance once the dead one's leases run out (PostgreSQL: several instances share it).
  { point: 'stellar.resubmit.broadcast', outside: 3, takeover: true },
];

/**
 * The suite on one database. It runs from two files, one per database (stellar-pglite.test.ts and
 * stellar-postgres.test.ts), so that the two halves, each minutes long, run in parallel workers.
 */
export function stellarCrashPoints(db: 'pglite' | 'postgres', run = true): void {
  describe.runIf(run)(`stellar: kill -9 at each crash point, then restart (${db})`, () => {
    const cleanup: (() => Promise<unknown>)[] = [];
    afterEach(async () => {
      while (cleanup.length) await cleanup.pop()!().catch(() => {});
    });

    it.each(POINTS.filter((p) => !p.takeover || db === 'postgres').map((p) => ({ ...p, name: p.takeover ? `${p.point}+takeover` : p.point })))(
      '$name: every accepted transaction confirmed once, sequence numbers contiguous',
      async ({ point, takeover, outside }) => {
        const { relayer, dest, stub, env } = await setup(db, cleanup);
        const destBefore = stub.account(dest.publicKey())!.balance;

        const armed = await startArmed(env, point);
        cleanup.push(() => armed.kill());
        const accepted = new Map<string, bigint>();
        if (outside) {
          // A first payment sets the relayer's counter from the chain; then the account is used
          // elsewhere, and the next numbers the counter hands out are already taken on chain.
          const first = sendPayments(armed, dest.publicKey(), 1, 900);
          await first.done;
          for (const [id, v] of first.accepted) accepted.set(id, v);
          await waitRows(armed, (rs) => rs.length === 1 && rs[0].status === 'confirmed', 30_000);
          await useOutside(stub, relayer, dest.publicKey(), outside);
        }
        const sent = sendPayments(armed, dest.publicKey(), 6);
        const done = sent.done.then(() => {
          for (const [id, v] of sent.accepted) accepted.set(id, v);
        });
        await armed.crashed;
        await done;
        expect(accepted.size).toBeGreaterThan(0);

        const instance = await startInstance(takeover ? { ...env, INSTANCE_ID: 'faults-other' } : env);
        cleanup.push(() => instance.stop());
        const rows = await waitRows(instance, (rs) => rs.length > 0 && rs.every((r) => FINAL.includes(r.status)), 90_000);

        for (const [id] of accepted)
          expect(
            rows.find((r) => r.id === id),
            `${id}`,
          ).toMatchObject({ status: 'confirmed', sent_at: expect.any(String) });
        expect(rows.map((r) => [r.status, r.status_reason])).toEqual(rows.map(() => ['confirmed', null]));
        // Sequence numbers: the chain's are contiguous, the rows' are the chain's but for the outside ones.
        expect(stub.account(relayer.publicKey())!.sequence).toBe(START_SEQ + BigInt(outside + rows.length));
        const applied = stub.applied().filter((a) => a.source === relayer.publicKey());
        expect(applied.map((a) => a.sequence)).toEqual(applied.map((_, i) => START_SEQ + 1n + BigInt(i)));
        const amounts = applied.map((a) => stroopsOf((TransactionBuilder.fromXDR(a.envelopeXdr, PASSPHRASE) as any).operations[0].amount));
        const sequences = rows.map((r) => BigInt(r.sequence_number)).sort((a, b) => (a < b ? -1 : 1));
        expect(sequences).toEqual(applied.filter((_, i) => amounts[i] !== 1n).map((a) => a.sequence));
        // On chain: each row's hash applied at its sequence number, each payment amount applied once.
        expect(amounts.filter((v) => v === 1n)).toHaveLength(outside);
        expect(new Set(amounts.filter((v) => v !== 1n)).size).toBe(rows.length);
        for (const r of rows) expect(applied.find((a) => a.hash === r.hash)?.sequence).toBe(BigInt(r.sequence_number));
        // Each accepted payment is the one applied under its row's hash.
        const amountOf = (hash: string) => amounts[applied.findIndex((a) => a.hash === hash)];
        for (const [id, stroops] of accepted) expect(amountOf(rows.find((r) => r.id === id).hash)).toBe(stroops);
        // The recipient got exactly the outside payments and one of each row's.
        const paid = rows.reduce((sum, r) => sum + amountOf(r.hash), 0n);
        expect(stub.account(dest.publicKey())!.balance).toBe(destBefore + BigInt(outside) + paid);
      },
      150_000,
    );

    it.each([
      { kind: 'its own payment', feeBump: false },
      { kind: 'a fee-bumped user payment', feeBump: true },
    ])(
      '$kind, landed but past the RPC history at restart, is held and reported, never sent again',
      async ({ feeBump }) => {
        const { relayer, dest, user, stub, env } = await setup(db, cleanup);
        const destBefore = stub.account(dest.publicKey())!.balance;
        // The account whose sequence number the transaction uses.
        const source = feeBump ? user : relayer;
        const startSeq = stub.account(source.publicKey())!.sequence;
        const armed = await startArmed(env, 'stellar.send.broadcast');
        cleanup.push(() => armed.kill());
        let id: string;
        if (feeBump) {
          const inner = new TransactionBuilder(new Account(user.publicKey(), startSeq.toString()), { fee: '100', networkPassphrase: PASSPHRASE })
            .addOperation(Operation.payment({ destination: dest.publicKey(), asset: Asset.native(), amount: '0.0005' }))
            .setTimeout(600)
            .build();
          inner.sign(user);
          const res = await armed.request('POST', SEND_PATH, { network: 'stellar-local', transaction_xdr: inner.toXDR(), fee_bump: true, max_fee: 1_000 });
          expect(res.status).toBe(200);
          id = ((await res.json()) as any).data.id;
        } else {
          const { accepted, done } = sendPayments(armed, dest.publicKey(), 1, 5_000);
          await done;
          expect(accepted.size).toBe(1);
          [id] = accepted.keys();
        }
        await armed.crashed;
        // It was broadcast and applied; then the RPC's history moves past it while the service is down.
        const until = Date.now() + 10_000;
        while (stub.account(source.publicKey())!.sequence !== startSeq + 1n && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
        expect(stub.account(dest.publicKey())!.balance).toBe(destBefore + 5_000n);
        stub.setRetention(5);
        const past = stub.ledger().sequence + 10;
        while (stub.ledger().sequence < past) await new Promise((r) => setTimeout(r, 50));

        const instance = await startInstance(env);
        cleanup.push(() => instance.stop());
        // Its number is used on chain and nothing says by what: it keeps its number, is reported, and waits for a person.
        const [row] = await waitRows(instance, (rs) => /left for a person to decide/.test(rs[0]?.status_reason ?? ''), 30_000);
        expect(row).toMatchObject({
          id,
          status: 'sent',
          sequence_number: feeBump ? Number(startSeq + 1n) : String(startSeq + 1n),
          sent_at: expect.any(String),
        });
        expect(row.status_reason).toMatch(/sequence number \d+ is used on chain .* but the transaction that used it was not found/);
        // Logged once the step's save has committed: the row can be read before the line is through the pipe.
        await expect.poll(() => instance.output(), { timeout: 10_000 }).toMatch(/"level":40.*stellar sequence number used by an unknown transaction/);
        const broadcasts = stub.calls.filter((m) => m === 'sendTransaction').length;
        await new Promise((r) => setTimeout(r, 2_000));
        expect(stub.calls.filter((m) => m === 'sendTransaction')).toHaveLength(broadcasts);
        // Sent once: one payment, the account moved by one.
        expect(stub.account(dest.publicKey())!.balance).toBe(destBefore + 5_000n);
        expect(stub.account(source.publicKey())!.sequence).toBe(startSeq + 1n);
        expect(stub.applied()).toHaveLength(1);
        expect((await allRows(instance))[0]).toMatchObject({ status: 'sent' });
      },
      150_000,
    );
  });
}
