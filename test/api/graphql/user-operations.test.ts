// ERC-4337 operations in GraphQL, on both databases: rows written as the bundler writes them
// (src/chains/evm/aa/store.ts), read by hash and as a relayer's list, their changes streamed from
// the live events the bundler publishes, and every read checked against the relayer's permission.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keccak256, toHex } from 'viem';
import { ENTRY_POINT_V08 } from '../../../src/chains/evm/aa/canonical.js';
import { keepUserOp, markIncluded, markSubmitted, type UserOpRow } from '../../../src/chains/evm/aa/store.js';
import { databaseKinds } from '../../support/postgres.js';
import { evmConfig, startTestService, type TestService } from '../../support/service.js';
import { subscribe } from '../../support/subscribe.js';

const RELAYER = 'evm-relayer';
const SENDER = '0x1111111111111111111111111111111111111111';
const FIELDS = `hash relayerId entryPoint sender nonce status statusReason factory callData callGasLimit maxFeePerGas paymaster
  paymasterVerificationGasLimit eip7702Auth createdAt updatedAt
  receipt { success actualGasCost actualGasUsed transactionHash blockNumber blockHash reason } transaction { id hash }`;
const BY_HASH = `query($h: String!) { userOperation(hash: $h) { ${FIELDS} } }`;
const LIST = `query($first: Int, $after: String, $page: Int, $perPage: Int, $status: UserOperationStatus) {
  relayer(id: "${RELAYER}") { userOperations(first: $first, after: $after, page: $page, perPage: $perPage, status: $status) {
    items { hash } edges { cursor node { hash } } pageInfo { hasNextPage endCursor } pagination { totalItems }
  } } }`;

const hashOf = (n: number) => keccak256(toHex(`operation ${n}`));
const operation = (n: number) => ({
  sender: SENDER,
  nonce: toHex(n),
  factory: '0x7702',
  factoryData: '0x',
  callData: '0xb61d27f6',
  callGasLimit: '0x186a0',
  verificationGasLimit: '0x30d40',
  preVerificationGas: '0xc350',
  maxFeePerGas: '0x77359400',
  maxPriorityFeePerGas: '0x3b9aca00',
  paymaster: '0x2222222222222222222222222222222222222222',
  paymasterVerificationGasLimit: '0xc350',
  paymasterPostOpGasLimit: '0x0',
  paymasterData: '0x',
  signature: '0x',
  eip7702Auth: { chainId: '0x7a69', address: '0xe6Cae83BdE06E4c305530e199D7217f42808555B', nonce: '0x0', yParity: '0x1', r: '0x01', s: '0x02' },
});

describe.each(await databaseKinds())('user operations in GraphQL on %s', (kind) => {
  let svc: TestService;
  const rows: UserOpRow[] = [];
  let txId: string;

  const gqlAs = async (key: string, query: string, variables?: object) =>
    (await svc.request('POST', '/graphql', { query, variables }, { authorization: `Bearer ${key}` })).json() as Promise<any>;
  const makeKey = async (permissions: string[]) => {
    const res = await svc.request('POST', '/api/v1/api-keys', { name: 'test', permissions });
    return ((await res.json()) as any).data.value as string;
  };

  beforeAll(async () => {
    svc = await startTestService({ db: kind, workers: false, config: (c) => evmConfig(c.rpcUrl) });
    for (let n = 1; n <= 3; n++) {
      const { row } = await keepUserOp(svc.rt.db, {
        relayerId: RELAYER,
        chainId: 31337,
        entryPoint: ENTRY_POINT_V08,
        hash: hashOf(n),
        sender: SENDER,
        nonce: BigInt(n),
        operation: operation(n),
      });
      rows.push(row);
      // Distinct creation times, so "newest first" is one order.
      await new Promise((r) => setTimeout(r, 5));
    }
    txId = (
      await svc.rt.db.prisma.transaction.create({
        data: { relayerId: RELAYER, networkType: 'evm', from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', request: {}, hash: `0x${'ab'.repeat(32)}` },
      })
    ).id;
    await markSubmitted(svc.rt.db, [rows[0].id], txId);
    await markIncluded(svc.rt.db, rows[0].id, {
      success: false,
      actualGasCost: '123456789000',
      actualGasUsed: '98765',
      transactionHash: `0x${'ab'.repeat(32)}`,
      blockNumber: '42',
      blockHash: `0x${'cd'.repeat(32)}`,
      reason: 'the call reverted: nope',
    });
  }, 60_000);
  afterAll(async () => {
    await svc?.stop();
  });

  it('reads an operation by hash: its fields (quantities in decimal), its receipt and its transaction', async () => {
    const r = await svc.gql(BY_HASH, { h: hashOf(1).toUpperCase().replace('0X', '0x') });
    expect(r.errors).toBeUndefined();
    expect(r.data.userOperation).toMatchObject({
      hash: hashOf(1),
      relayerId: RELAYER,
      entryPoint: ENTRY_POINT_V08.toLowerCase(),
      sender: SENDER,
      nonce: '1',
      status: 'included',
      statusReason: 'the call reverted: nope',
      factory: '0x7702',
      callData: '0xb61d27f6',
      callGasLimit: '100000',
      maxFeePerGas: '2000000000',
      paymaster: '0x2222222222222222222222222222222222222222',
      paymasterVerificationGasLimit: '50000',
      eip7702Auth: operation(1).eip7702Auth,
      receipt: {
        success: false,
        actualGasCost: '123456789000',
        actualGasUsed: '98765',
        transactionHash: `0x${'ab'.repeat(32)}`,
        blockNumber: '42',
        blockHash: `0x${'cd'.repeat(32)}`,
        reason: 'the call reverted: nope',
      },
      transaction: { id: txId, hash: `0x${'ab'.repeat(32)}` },
    });
    const pending = await svc.gql(BY_HASH, { h: hashOf(2) });
    expect(pending.data.userOperation).toMatchObject({ status: 'pending', receipt: null, transaction: null });
  });

  it('refuses a malformed hash and answers an unknown one with not found', async () => {
    const bad = await svc.gql(BY_HASH, { h: '0x1234' });
    expect(bad.errors?.[0]).toMatchObject({ message: 'Bad Request', extensions: { detail: 'hash: must be a 0x-prefixed 32-byte hex string' } });
    const unknown = await svc.gql(BY_HASH, { h: hashOf(99) });
    expect(unknown.errors?.[0]).toMatchObject({ message: `User operation with hash ${hashOf(99)} not found`, extensions: { code: 'NOT_FOUND' } });
    const otherRelayer = await svc.gql(`query($h: String!) { userOperation(hash: $h, relayerId: "nope") { hash } }`, { h: hashOf(1) });
    expect(otherRelayer.errors?.[0].extensions.code).toBe('NOT_FOUND');
  });

  it("lists a relayer's operations newest first, by cursor and by page, and by status", async () => {
    const first = await svc.gql(LIST, { first: 2 });
    expect(first.errors).toBeUndefined();
    const a = first.data.relayer.userOperations;
    expect(a.items.map((o: { hash: string }) => o.hash)).toEqual([hashOf(3), hashOf(2)]);
    expect(a.pageInfo.hasNextPage).toBe(true);
    expect(a.pagination.totalItems).toBe(3);
    const rest = (await svc.gql(LIST, { first: 2, after: a.pageInfo.endCursor })).data.relayer.userOperations;
    expect(rest.edges.map((e: { node: { hash: string } }) => e.node.hash)).toEqual([hashOf(1)]);
    expect(rest.pageInfo).toEqual({ hasNextPage: false, endCursor: rest.edges[0].cursor });
    const page2 = (await svc.gql(LIST, { page: 2, perPage: 2 })).data.relayer.userOperations;
    expect(page2.items.map((o: { hash: string }) => o.hash)).toEqual([hashOf(1)]);
    const included = (await svc.gql(LIST, { status: 'included' })).data.relayer.userOperations;
    expect([included.items.map((o: { hash: string }) => o.hash), included.pagination.totalItems]).toEqual([[hashOf(1)], 1]);
    const mixed = await svc.gql(LIST, { first: 2, page: 1 });
    expect(mixed.errors?.[0].extensions.detail).toBe('give page and perPage, or first and after, not both');
  });

  it('needs read permission on the relayer', async () => {
    const [mine, other] = await Promise.all([makeKey([`relayer:${RELAYER}:read`]), makeKey(['relayer:someone-else:read'])]);
    expect((await gqlAs(mine, BY_HASH, { h: hashOf(1) })).data.userOperation.hash).toBe(hashOf(1));
    const refused = await gqlAs(other, BY_HASH, { h: hashOf(1) });
    expect(refused.errors[0]).toMatchObject({ extensions: { code: 'FORBIDDEN' } });
    expect(refused.data?.userOperation ?? null).toBeNull();
    const byRelayer = await gqlAs(other, `query($h: String!) { userOperation(hash: $h, relayerId: "${RELAYER}") { hash } }`, { h: hashOf(1) });
    expect(byRelayer.errors[0].extensions.code).toBe('FORBIDDEN');
    const stream = subscribe(svc.app, `subscription($h: String!) { userOperationUpdated(hash: $h) { hash } }`, { h: hashOf(1) }, other);
    await stream.ended;
    expect(stream.events[0].errors[0].extensions.code).toBe('FORBIDDEN');
  });

  it('streams the changes the bundler publishes, by relayer and by hash', async () => {
    const byRelayer = subscribe(svc.app, `subscription { userOperationUpdated(relayerId: "${RELAYER}") { hash status transaction { id } } }`, {});
    const byHash = subscribe(svc.app, `subscription($h: String!) { userOperationUpdated(hash: $h) { hash status } }`, { h: hashOf(2) });
    const byOtherHash = subscribe(svc.app, `subscription($h: String!) { userOperationUpdated(hash: $h) { hash status } }`, { h: hashOf(3) });
    await Promise.all([byRelayer.response, byHash.response, byOtherHash.response]);
    // Give the streams' subscribe resolvers their turn before publishing.
    await new Promise((r) => setTimeout(r, 200));
    const publish = (row: UserOpRow) => {
      svc.rt.notifications.events.publish('userOperation:relayer', row.relayerId, row);
      svc.rt.notifications.events.publish('userOperation:hash', row.hash, row);
    };
    await markSubmitted(svc.rt.db, [rows[1].id], txId);
    publish(await svc.rt.db.prisma.userOperation.findUniqueOrThrow({ where: { id: rows[1].id } }));
    const deadline = Date.now() + 5_000;
    while ((byRelayer.events.length < 1 || byHash.events.length < 1) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    await Promise.all([byRelayer.close(), byHash.close(), byOtherHash.close()]);
    expect(byRelayer.events.map((e) => e.data.userOperationUpdated)).toEqual([{ hash: hashOf(2), status: 'submitted', transaction: { id: txId } }]);
    expect(byHash.events.map((e) => e.data.userOperationUpdated)).toEqual([{ hash: hashOf(2), status: 'submitted' }]);
    expect(byOtherHash.events).toEqual([]);
  });

  it('a subscription needs a hash or a relayer, and ends on an unknown one', async () => {
    const none = subscribe(svc.app, 'subscription { userOperationUpdated { hash } }', {});
    await none.ended;
    expect(none.events[0].errors[0].extensions.detail).toBe('give hash or relayerId');
    const unknown = subscribe(svc.app, `subscription($h: String!) { userOperationUpdated(hash: $h) { hash } }`, { h: hashOf(99) });
    await unknown.ended;
    expect(unknown.events[0].errors[0].extensions.code).toBe('NOT_FOUND');
  });
});
