// Both drivers read `timestamp without time zone` as local time unless told otherwise: run these
// reads away from UTC so a local reading would show.
const previousTz = process.env.TZ;
process.env.TZ = 'America/New_York';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/client.js';
import type { Runtime } from '../../src/core/runtime.js';
import { readPage } from '../../src/core/transactions/pages.js';
import { readTransaction } from '../../src/core/transactions/store.js';
import { databaseKinds } from '../support/postgres.js';
import { openTestDatabase } from '../support/pglite.js';

// The zone is put back for whatever runs next in this process.
afterAll(() => {
  if (previousTz === undefined) delete process.env.TZ;
  else process.env.TZ = previousTz;
});

// The API's reads are hand-written SQL on the database handle: each row must be exactly what
// Prisma's findUnique/findMany read for it, on both databases.
describe.each(await databaseKinds())('API reads on %s', (kind) => {
  let db: Database;
  let rt: Runtime;
  let drop: (() => Promise<void>) | undefined;
  const sentAt = new Date('2030-01-01T00:00:00.123Z');

  beforeAll(async () => {
    ({ db, drop } = await openTestDatabase(kind));
    rt = { db } as unknown as Runtime;
    await db.prisma.relayer.create({
      data: { id: 'r', name: 'r', network: 'localnet', networkType: 'evm', signerId: 's', address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', policies: {} },
    });
    // Every column non-null, int8 above 2^53 and near its top.
    await db.prisma.transaction.create({
      data: {
        id: 'full',
        relayerId: 'r',
        networkType: 'evm',
        status: 'confirmed',
        statusReason: 'why',
        createdAt: new Date('2030-01-01T00:00:00.001Z'),
        sentAt,
        confirmedAt: new Date('2030-06-30T23:59:59.999Z'),
        hash: '0xaa',
        hashes: ['0xaa', '0xbb'],
        from: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
        to: '0x000000000000000000000000000000000000dEaD',
        value: '340282366920938463463374607431768211455',
        data: '0xabcdef01',
        nonce: 2n ** 53n + 1n,
        gasLimit: 2n ** 63n - 1n,
        gasPrice: '1',
        maxFeePerGas: '30000000000',
        maxPriorityFeePerGas: '1000000000',
        speed: 'fast',
        validUntil: new Date('2031-01-02T03:04:05.000Z'),
        request: { to: '0xdead', nested: { list: [1, 'two', null, true, 1.5] } },
        chainState: { phase: 'signed', raw: '0x01' },
        signature: { r: '0x1', s: '0x2', v: 27 },
        attempts: 3,
        dueAt: new Date('2030-01-01T00:00:05.456Z'),
        leaseOwner: 'w',
        leaseUntil: new Date('2030-01-01T00:00:35.456Z'),
        idempotencyKey: 'key',
        requestDigest: 'digest',
      },
    });
    await db.prisma.transaction.create({
      data: { id: 'bare', relayerId: 'r', networkType: 'solana', from: 'addr', request: {}, createdAt: new Date('2030-01-01T00:00:00.002Z') },
    });
  });
  afterAll(async () => {
    await db?.close();
    await drop?.();
  });

  it('reads a transaction by id as findUnique does', async () => {
    for (const id of ['full', 'bare']) {
      expect(await readTransaction(rt, id)).toStrictEqual(await db.prisma.transaction.findUnique({ where: { id } }));
    }
    const full = await readTransaction(rt, 'full');
    expect(full).toMatchObject({ nonce: 2n ** 53n + 1n, gasLimit: 2n ** 63n - 1n, sentAt, hashes: ['0xaa', '0xbb'], status: 'confirmed', speed: 'fast' });
    expect(await readTransaction(rt, 'missing')).toBeNull();
  });

  it('reads pages as findMany does', async () => {
    const orderBy = [{ createdAt: 'desc' as const }, { id: 'desc' as const }];
    expect(await readPage(rt, 'r', null, 0, 10)).toStrictEqual(await db.prisma.transaction.findMany({ where: { relayerId: 'r' }, orderBy }));
    expect(await readPage(rt, 'r', null, 1, 1)).toStrictEqual(await db.prisma.transaction.findMany({ where: { relayerId: 'r' }, orderBy, skip: 1, take: 1 }));
    const confirmed = await readPage(rt, 'r', 'confirmed', 0, 10);
    expect(confirmed.map((t) => t.id)).toEqual(['full']);
    expect(confirmed).toStrictEqual(await db.prisma.transaction.findMany({ where: { relayerId: 'r', status: 'confirmed' }, orderBy }));
  });
});
