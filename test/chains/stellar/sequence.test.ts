// Finding on chain (the Stellar stand-in's getTransactions) the transaction that used a sequence number.
import { Account, Asset, Keypair, Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stellarRpcFrom } from '../../../src/chains/stellar/rpc-client.js';
import { findAtSequence } from '../../../src/chains/stellar/sequence.js';
import { createJsonRpcClient } from '../../../src/chains/jsonrpc.js';
import { startStellarRpc, type StellarRpcStub } from '../../support/stellar-rpc.js';

const PASSPHRASE = 'Sequence Search Network ; 2025';
const XLM = 10_000_000n;

describe('findAtSequence', () => {
  const owner = Keypair.random();
  const other = Keypair.random();
  const dest = Keypair.random();
  let stub: StellarRpcStub;
  beforeAll(async () => {
    stub = await startStellarRpc({
      networkPassphrase: PASSPHRASE,
      ledgerIntervalMs: 0,
      accounts: [
        { address: owner.publicKey(), balance: 100n * XLM, sequence: 500n },
        { address: other.publicKey(), balance: 100n * XLM, sequence: 500n },
        { address: dest.publicKey(), balance: 10n * XLM, sequence: 1n },
      ],
    });
  });
  afterAll(() => stub?.stop());

  const rpc = () => stellarRpcFrom(createJsonRpcClient([{ url: stub.url, weight: 100 }], { timeoutMs: 2_000 }));

  async function pay(kp: Keypair, seq: bigint, feeBumpedBy?: Keypair) {
    const tx = new TransactionBuilder(new Account(kp.publicKey(), (seq - 1n).toString()), { fee: '100', networkPassphrase: PASSPHRASE })
      .addOperation(Operation.payment({ destination: dest.publicKey(), asset: Asset.native(), amount: '1' }))
      .setTimeout(0)
      .build();
    tx.sign(kp);
    let env: { toXDR(): string; hash(): Buffer } = tx;
    if (feeBumpedBy) {
      const bump = TransactionBuilder.buildFeeBumpTransaction(feeBumpedBy, '200', tx, PASSPHRASE);
      bump.sign(feeBumpedBy);
      env = bump;
    }
    expect((await rpc().sendTransaction(env.toXDR())).status).toBe('PENDING');
    return { hash: env.hash().toString('hex'), innerHash: tx.hash().toString('hex') };
  }

  it('finds the transaction of one account at one sequence number among others, fee-bumped or not', async () => {
    const a = await pay(owner, 501n);
    await pay(other, 501n);
    stub.closeLedger();
    const b = await pay(owner, 502n, other);
    stub.closeLedger();
    const at = (n: bigint, pages?: number) =>
      findAtSequence(rpc(), PASSPHRASE, { account: owner.publicKey(), n, fromLedger: 1, oldestLedger: 1000, maxPages: pages });
    expect(await at(501n)).toMatchObject({ hash: a.hash, innerHash: a.innerHash, status: 'SUCCESS' });
    expect(await at(502n)).toMatchObject({ hash: b.hash, innerHash: b.innerHash, status: 'SUCCESS' });
    expect(await at(503n)).toBeNull();
  });

  it('finds nothing once the transaction is past the RPC history', async () => {
    stub.setRetention(1);
    stub.closeLedger();
    stub.closeLedger();
    expect(await findAtSequence(rpc(), PASSPHRASE, { account: owner.publicKey(), n: 501n, fromLedger: 1, oldestLedger: stub.ledger().sequence })).toBeNull();
    stub.setRetention(undefined);
  });
});
