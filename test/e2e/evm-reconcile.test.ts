import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRelayer } from '../../src/core/relayers/checks.js';
import { DEV_ADDRESS, startTestService, type TestService } from '../support/service.js';
import { RECEIVER, RELAYER, rpc, sendOk, waitFor, waitStatus } from '../support/evm.js';

/**
 * A transaction from the relayer's own account, sent to anvil directly (the account is unlocked
 * there), and mined. Anvil picks its nonce from the chain and its pool, and answers before its block
 * is mined; on a busy machine the pick can race the miner ("nonce too low", seen once in CI), so
 * that is tried again.
 */
async function sendBehindItsBack(url: string): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    let hash: string;
    try {
      hash = await rpc<string>(url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: RECEIVER, value: '0x5' }]);
    } catch (e) {
      if (attempt < 3 && /nonce too low/.test((e as Error).message)) {
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      throw e;
    }
    while (!(await rpc(url, 'eth_getTransactionReceipt', [hash]))) await new Promise((r) => setTimeout(r, 10));
    return Number((await rpc(url, 'eth_getTransactionByHash', [hash])).nonce);
  }
}

describe('nonce reconciliation with the chain', () => {
  let svc: TestService;
  let url: string;
  beforeAll(async () => {
    svc = await startTestService({ anvil: true });
    url = svc.anvil!.url;
    await waitStatus(svc, (await sendOk(svc)).id, 'confirmed');
  });
  afterAll(() => svc?.stop());

  const nextNonce = async () => (await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } })).nextNonce!;

  it("moves a transaction whose nonce was used behind the relayer's back to a new nonce, and mines it once", async () => {
    const used = await sendBehindItsBack(url);
    const tx = await sendOk(svc, { to: RECEIVER, value: '42' });
    expect(tx.nonce).toBe(used);
    const done = await waitStatus(svc, tx.id, 'confirmed', 30_000);
    expect(done.nonce).toBe(used + 1);
    expect(done.statusReason).toMatch(new RegExp(`nonce ${used} was used by another transaction from this account; sent again at nonce ${used + 1}`));
    const onChain = await rpc(url, 'eth_getTransactionByHash', [done.hash]);
    expect(Number(onChain.nonce)).toBe(used + 1);
    expect(onChain.value).toBe('0x2a');
    // Exactly one transfer of 42 wei from the relayer is on chain.
    const latest = Number(await rpc(url, 'eth_blockNumber'));
    let found = 0;
    for (let b = 0; b <= latest; b++) {
      const block = await rpc(url, 'eth_getBlockByNumber', [`0x${b.toString(16)}`, true]);
      found += block.transactions.filter((t: any) => t.from.toLowerCase() === DEV_ADDRESS.toLowerCase() && t.value === '0x2a').length;
    }
    expect(found).toBe(1);
    const next = await sendOk(svc);
    expect(next.nonce).toBe(used + 2);
    // Mined before the next test sends behind the relayer's back, which would take its nonce.
    await waitStatus(svc, next.id, 'confirmed');
  });

  it('moves the nonce counter past transactions sent elsewhere when the relayer is checked (as at start-up)', async () => {
    const before = await nextNonce();
    await sendBehindItsBack(url);
    await sendBehindItsBack(url);
    const relayer = await svc.rt.db.prisma.relayer.findUniqueOrThrow({ where: { id: RELAYER } });
    const checked = await checkRelayer(svc.rt, relayer);
    expect(checked.systemDisabled).toBe(false);
    const chain = BigInt(await rpc(url, 'eth_getTransactionCount', [DEV_ADDRESS, 'pending']));
    expect(await nextNonce()).toBe(chain);
    expect(chain).toBeGreaterThan(before);
    const tx = await sendOk(svc);
    expect(BigInt(tx.nonce)).toBe(chain);
    expect((await waitStatus(svc, tx.id, 'confirmed')).statusReason).toBeNull();
  });

  it('fills a nonce no transaction holds with a 0-value self-transfer, so the transactions after it are mined', async () => {
    await waitFor(svc, (await sendOk(svc)).id, (t) => t.status === 'confirmed');
    // A nonce allocated without a transaction (as a crash between allocation and write could leave).
    const [{ hole }] = await svc.rt.db.prisma.$queryRaw<{ hole: bigint }[]>`
      UPDATE relayers SET next_nonce = next_nonce + 1 WHERE id = ${RELAYER} RETURNING next_nonce - 1 AS hole`;
    const tx = await sendOk(svc);
    expect(BigInt(tx.nonce)).toBe(hole + 1n);
    await waitStatus(svc, tx.id, 'confirmed', 30_000);
    const filler = await svc.rt.db.prisma.transaction.findFirstOrThrow({ where: { relayerId: RELAYER, nonce: hole } });
    expect(filler.status).toBe('canceled');
    expect(filler.statusReason).toMatch(new RegExp(`nonce ${hole} was allocated but no transaction held it`));
    await waitFor(svc, filler.id, (t) => t.hash !== null && t.networkData?.block_number !== undefined);
    const onChain = await rpc(url, 'eth_getTransactionByHash', [(await svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id: filler.id } })).hash]);
    expect(BigInt(onChain.nonce)).toBe(hole);
    expect(onChain.to).toBe(DEV_ADDRESS.toLowerCase());
  });
});
