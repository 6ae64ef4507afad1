import { describe, expect, it } from 'vitest';
import { BigIntScalar, DateTimeScalar, LongScalar } from '../../../src/api/graphql/scalars.js';
import { publicState, type RecordSource, transactionRecord } from '../../../src/core/transactions/record.js';
import type { Transaction } from '../../../src/generated/prisma/client.js';
import { writeJson } from '../../../src/lib/json.js';
import { families } from '../../support/families.js';

// Webhooks build the record from the row, REST from the GraphQL fields of that row: one builder,
// so the two can only differ if GraphQL gave other values than the row holds.

const row = (o: Partial<Transaction> = {}): Transaction => ({
  id: '5f0c9a51-2a53-4c2e-9a36-0f4d8b8f1e01',
  relayerId: 'evm-relayer',
  networkType: 'evm',
  status: 'sent',
  statusReason: null,
  createdAt: new Date(Date.UTC(2030, 0, 1)),
  updatedAt: new Date(Date.UTC(2030, 0, 1, 0, 1)),
  sentAt: new Date(Date.UTC(2030, 0, 1, 0, 0, 2)),
  confirmedAt: null,
  hash: '0xabc',
  hashes: ['0xabc'],
  from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
  to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  value: '340282366920938463463374607431768211455',
  data: '0x',
  nonce: 7n,
  gasLimit: 21000n,
  gasPrice: null,
  maxFeePerGas: '30000000000',
  maxPriorityFeePerGas: '1500000000',
  speed: 'fast',
  validUntil: new Date(Date.UTC(2030, 0, 1, 8)),
  request: {},
  chainState: { public: { network: 'testnet', fee: 100 }, secret: 'not shown' },
  signature: { r: '0x1', s: '0x2', v: 27 },
  attempts: 1,
  dueAt: null,
  leaseOwner: null,
  leaseUntil: null,
  idempotencyKey: null,
  requestDigest: null,
  ...o,
});

/** The row's fields as GraphQL's Transaction type serializes them (what the REST operations read). */
function asGraphql(tx: Transaction): RecordSource {
  const time = (d: Date | null) => (d === null ? null : DateTimeScalar.serialize(d));
  const long = (n: bigint | null) => (n === null ? null : LongScalar.serialize(n));
  const big = (s: string | null) => (s === null ? null : BigIntScalar.serialize(s));
  return {
    ...tx,
    chainState: undefined,
    networkData: publicState(tx),
    createdAt: DateTimeScalar.serialize(tx.createdAt),
    sentAt: time(tx.sentAt),
    confirmedAt: time(tx.confirmedAt),
    validUntil: time(tx.validUntil),
    value: BigIntScalar.serialize(tx.value),
    nonce: long(tx.nonce),
    gasLimit: long(tx.gasLimit),
    gasPrice: big(tx.gasPrice),
    maxFeePerGas: big(tx.maxFeePerGas),
    maxPriorityFeePerGas: big(tx.maxPriorityFeePerGas),
  } as RecordSource;
}

describe('transactionRecord', () => {
  it('gives the same JSON from the row and from its GraphQL fields, for each family', () => {
    const stellar = row({ networkType: 'stellar', relayerId: 'stellar-relayer', to: null, gasLimit: null, maxFeePerGas: null, speed: null });
    for (const tx of [row(), row({ gasLimit: 2n ** 60n + 1n, nonce: 2n ** 53n + 1n }), stellar, row({ networkType: 'tron' })]) {
      expect(writeJson(transactionRecord(families, asGraphql(tx)))).toBe(writeJson(transactionRecord(families, tx)));
    }
  });

  it('writes the EVM fields, integers past 2^53 with every digit', () => {
    const text = writeJson(transactionRecord(families, row({ gasLimit: 2n ** 60n + 1n })));
    expect(text).toBe(
      '{"id":"5f0c9a51-2a53-4c2e-9a36-0f4d8b8f1e01","relayer_id":"evm-relayer","status":"sent","status_reason":null,' +
        '"created_at":"2030-01-01T00:00:00.000Z","sent_at":"2030-01-01T00:00:02.000Z","confirmed_at":null,"valid_until":"2030-01-01T08:00:00.000Z",' +
        '"hash":"0xabc","from":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","to":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8",' +
        '"value":"340282366920938463463374607431768211455","data":"0x","nonce":7,"gas_limit":1152921504606846977,"gas_price":null,' +
        '"max_fee_per_gas":"30000000000","max_priority_fee_per_gas":"1500000000","speed":"fast","signature":{"r":"0x1","s":"0x2","v":27}}',
    );
  });

  it('gives other families their network type and published fields, never the rest of chain_state', () => {
    const record = transactionRecord(families, row({ networkType: 'solana' }));
    expect(Object.keys(record).slice(9)).toEqual(['network_type', 'from', 'network', 'fee']);
    expect(record).not.toHaveProperty('secret');
  });
});
