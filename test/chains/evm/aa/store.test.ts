// The user_operations table on both databases: one row per operation however often it is sent,
// and the status moves only forward.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keccak256, toHex } from 'viem';
import {
  keepUserOp,
  keepUserOpWithin,
  markFailed,
  markIncluded,
  markIncludedMany,
  markPending,
  markSubmitted,
  pendingUserOps,
  reviveUserOp,
  userOpByHash,
  type NewUserOp,
} from '../../../../src/chains/evm/aa/store.js';
import { ENTRY_POINT_V07, ENTRY_POINT_V08 } from '../../../../src/chains/evm/aa/canonical.js';
import type { Database } from '../../../../src/db/client.js';
import { databaseKinds } from '../../../support/postgres.js';
import { openTestDatabase } from '../../../support/pglite.js';

describe.each(await databaseKinds())('user operations on %s', (kind) => {
  let db: Database;
  let drop: (() => Promise<void>) | undefined;
  let txId: string;

  beforeAll(async () => {
    ({ db, drop } = await openTestDatabase(kind));
    await db.prisma.relayer.create({
      data: { id: 'r', name: 'r', network: 'localnet', networkType: 'evm', signerId: 's', address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', policies: {} },
    });
    txId = (
      await db.prisma.transaction.create({ data: { relayerId: 'r', networkType: 'evm', from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', request: {} } })
    ).id;
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  let n = 0;
  const op = (over: Partial<NewUserOp> = {}): NewUserOp => {
    n++;
    return {
      relayerId: 'r',
      chainId: 31337,
      entryPoint: ENTRY_POINT_V08,
      hash: keccak256(toHex(`op ${n}`)),
      sender: '0x1111111111111111111111111111111111111111',
      nonce: BigInt(n),
      operation: { sender: '0x1111111111111111111111111111111111111111', nonce: toHex(n) },
      ...over,
    };
  };

  it('the same operation sent again, or many times at once, is one row', async () => {
    const o = op();
    const first = await keepUserOp(db, o);
    expect(first.created).toBe(true);
    expect(first.row).toMatchObject({
      status: 'pending',
      hash: o.hash,
      entryPoint: ENTRY_POINT_V08.toLowerCase(),
      nonce: o.nonce.toString(),
      operation: o.operation,
    });
    const again = await keepUserOp(db, { ...o, hash: o.hash.toUpperCase().replace('0X', '0x') });
    expect(again).toEqual({ row: first.row, created: false });

    const o2 = op();
    const racing = await Promise.all(Array.from({ length: 6 }, () => keepUserOp(db, o2)));
    expect(racing.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(racing.map((r) => r.row.id)).size).toBe(1);
    expect(await db.prisma.userOperation.count({ where: { hash: o2.hash } })).toBe(1);
  });

  it('the same hash at another EntryPoint or chain is another operation', async () => {
    const o = op();
    await keepUserOp(db, o);
    expect((await keepUserOp(db, { ...o, entryPoint: ENTRY_POINT_V07 })).created).toBe(true);
    expect((await keepUserOp(db, { ...o, chainId: 1 })).created).toBe(true);
    expect((await userOpByHash(db, 1, o.hash))?.chainId).toBe(1);
  });

  it('pending, then submitted in a transaction, then included or failed', async () => {
    await db.prisma.userOperation.updateMany({ where: { status: 'pending' }, data: { status: 'failed' } });
    const [a, b, c] = [op(), op(), op()];
    for (const o of [a, b, c]) await keepUserOp(db, o);
    const pending = await pendingUserOps(db, 'r', ENTRY_POINT_V08, 10);
    expect(pending.map((p) => p.hash)).toEqual([a.hash, b.hash, c.hash]);
    expect(await pendingUserOps(db, 'r', ENTRY_POINT_V07, 10)).toEqual([]);
    expect(await pendingUserOps(db, 'r', ENTRY_POINT_V08, 2)).toHaveLength(2);

    const [ra, rb, rc] = pending;
    expect(await markFailed(db, [rc!.id], 'AA25 invalid account nonce')).toBe(1);
    expect(await markSubmitted(db, [ra!.id, rb!.id, rc!.id], txId)).toBe(2);
    expect(await pendingUserOps(db, 'r', ENTRY_POINT_V08, 10)).toEqual([]);

    const receipt = { success: true, actualGasCost: '1000', actualGasUsed: '100', transactionHash: '0xaa', blockNumber: '7', blockHash: '0xbb' };
    const included = await markIncluded(db, ra!.id, receipt);
    expect(included).toMatchObject({ status: 'included', transactionId: txId, receipt, statusReason: null });
    expect(await markFailed(db, [ra!.id, rb!.id], 'the bundle was dropped')).toBe(1);
    expect(await userOpByHash(db, 31337, b.hash)).toMatchObject({ status: 'failed', statusReason: 'the bundle was dropped' });
    expect(await userOpByHash(db, 31337, c.hash)).toMatchObject({ status: 'failed', statusReason: 'AA25 invalid account nonce', transactionId: null });
    expect(
      (await db.prisma.transaction.findUnique({ where: { id: txId }, include: { userOperations: true } }))?.userOperations.map((u) => u.hash).sort(),
    ).toEqual([a.hash, b.hash].sort());
  });

  it("records a bundle's inclusions in one statement, each its receipt; an operation already ended stays as it was", async () => {
    await db.prisma.userOperation.updateMany({ where: { status: 'pending' }, data: { status: 'failed' } });
    const [a, b, c] = [op(), op(), op()];
    for (const o of [a, b, c]) await keepUserOp(db, o);
    const [ra, rb, rc] = await pendingUserOps(db, 'r', ENTRY_POINT_V08, 10);
    await markSubmitted(db, [ra!.id, rb!.id], txId);
    await markFailed(db, [rc!.id], 'AA25 invalid account nonce');
    const ok = { success: true, actualGasCost: '1000', actualGasUsed: '100', transactionHash: '0xaa', blockNumber: '7', blockHash: '0xbb' };
    const reverted = { ...ok, success: false, actualGasCost: '2000', reason: '0x08c379a0' };
    const changed = await markIncludedMany(db, [
      { id: ra!.id, receipt: ok },
      { id: rb!.id, receipt: reverted },
      { id: rc!.id, receipt: ok },
    ]);
    expect(changed.sort()).toEqual([ra!.id, rb!.id].sort());
    expect(await userOpByHash(db, 31337, a.hash)).toMatchObject({ status: 'included', receipt: ok, statusReason: null, transactionId: txId });
    expect(await userOpByHash(db, 31337, b.hash)).toMatchObject({ status: 'included', receipt: reverted, statusReason: '0x08c379a0' });
    expect(await userOpByHash(db, 31337, c.hash)).toMatchObject({ status: 'failed', receipt: null, statusReason: 'AA25 invalid account nonce' });
    // Again: nothing left to change.
    expect(await markIncludedMany(db, [{ id: ra!.id, receipt: reverted }])).toEqual([]);
    expect(await userOpByHash(db, 31337, a.hash)).toMatchObject({ receipt: ok });
    expect(await markIncludedMany(db, [])).toEqual([]);
  });

  it('the per-sender limit is exact when its sends race: of 8 at once with a limit of 3, 3 are kept', async () => {
    const sender = '0x2222222222222222222222222222222222222222';
    const limit = { max: 3, since: new Date(Date.now() - 3_600_000) };
    const ops = Array.from({ length: 8 }, () => op({ sender, validUntil: new Date('2030-01-01T00:00:00Z') }));
    const results = await Promise.all(ops.map((o) => keepUserOpWithin(db, o, limit)));
    expect(results.filter((r) => 'created' in r && r.created)).toHaveLength(3);
    expect(results.filter((r) => 'throttled' in r).map((r) => (r as { throttled: number }).throttled)).toEqual([3, 3, 3, 3, 3]);
    expect(await db.prisma.userOperation.count({ where: { sender } })).toBe(3);
    const kept = await db.prisma.userOperation.findFirstOrThrow({ where: { sender } });
    expect(kept.validUntil?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    // Another sender, or a window ending before the count's start, is not counted.
    expect(await keepUserOpWithin(db, op({ sender: '0x3333333333333333333333333333333333333333' }), limit)).toMatchObject({ created: true });
    expect(await keepUserOpWithin(db, op({ sender }), { max: 3, since: new Date(Date.now() + 60_000) })).toMatchObject({ created: true });
    // A kept operation sent again is the same row, whatever the count.
    const again = await keepUserOpWithin(db, { ...ops.find((o) => o.hash === kept.hash)! }, limit);
    expect(again).toEqual({ row: expect.objectContaining({ id: kept.id }), created: false });
  });

  it('a failed operation revived goes back to pending in its row, once when revived at once', async () => {
    const o = op({ sender: '0x4444444444444444444444444444444444444444' });
    const { row } = await keepUserOp(db, o);
    expect(await reviveUserOp(db, row.id, o)).toEqual({ revived: null }); // pending: not revived
    await markFailed(db, [row.id], 'AA25 invalid account nonce');
    const operation = { ...o.operation, signature: '0x01' };
    const racing = await Promise.all(Array.from({ length: 5 }, () => reviveUserOp(db, row.id, { ...o, operation, validUntil: new Date('2031-01-01Z') })));
    expect(racing.filter((r) => 'revived' in r && r.revived)).toHaveLength(1);
    expect(await userOpByHash(db, 31337, o.hash)).toMatchObject({
      id: row.id,
      status: 'pending',
      statusReason: null,
      operation,
      validUntil: new Date('2031-01-01Z'),
    });
    expect(await db.prisma.userOperation.count({ where: { hash: o.hash } })).toBe(1);
    // Under a limit its own row is not counted; others of its sender are.
    await markFailed(db, [row.id], 'again');
    const limit = { max: 1, since: new Date(Date.now() - 3_600_000) };
    expect(await reviveUserOp(db, row.id, o, limit)).toMatchObject({ revived: { status: 'pending' } });
    await markFailed(db, [row.id], 'again');
    await keepUserOp(db, op({ sender: o.sender }));
    expect(await reviveUserOp(db, row.id, o, limit)).toEqual({ throttled: 1 });
    expect(await userOpByHash(db, 31337, o.hash)).toMatchObject({ status: 'failed', statusReason: 'again' });
  });
  it('a drop or a settlement read before another instance moved the operation leaves it', async () => {
    const { row } = await keepUserOp(db, op());
    expect(await markSubmitted(db, [row.id], txId)).toBe(1);
    expect(await markFailed(db, [row.id], 'AA25 invalid account nonce', { status: 'pending' })).toBe(0);
    expect(await userOpByHash(db, 31337, row.hash)).toMatchObject({ status: 'submitted', statusReason: null, transactionId: txId });
    // Settling another bundle (one it was in before) leaves it in this one.
    const other = { status: 'submitted' as const, transactionId: crypto.randomUUID() };
    expect(await markPending(db, [row.id], other)).toBe(0);
    expect(await markFailed(db, [row.id], 'its bundle reverted', other)).toBe(0);
    expect(await markPending(db, [row.id], { status: 'submitted', transactionId: txId })).toBe(1);
  });
});
