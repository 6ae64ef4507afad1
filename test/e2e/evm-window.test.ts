import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseKinds } from '../support/postgres.js';
import { DEV_ADDRESS, startTestService, type TestService } from '../support/service.js';
import { getTx, RECEIVER, RELAYER, rpc, waitStatus } from '../support/evm.js';

// A chain whose blocks hold 4 transfers (23,100 gas each, what the relayer gives a plain transfer),
// a block a second: 60 transfers sent at once fill 15 blocks, each raising the base fee by about a
// tenth (a transfer uses 21,000). Signed all at once at twice the base fee, the later ones would be
// priced out after seven blocks or so and signed again; the send window (3 blocks' worth, at least
// 16) signs each only when the chain is near it.
const SENDS = 60;
/** Sent once the first of the flood is confirmed, while the window holds the rest. */
const LATER = 20;
const PER_BLOCK = 4;

describe.each(await databaseKinds())('a flood beyond what the chain mines in a few blocks, on %s', (db) => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startTestService({ db, anvil: { blockTime: 1, gasLimit: PER_BLOCK * 23_100 } });
  });
  afterAll(async () => {
    await svc?.stop();
  });

  it('is signed as the chain gets near each transaction: every one confirmed with its first signing, in full blocks; one written free canceled or replaced at once', async () => {
    const send = (n: number, from: number) =>
      Promise.all(
        Array.from({ length: n }, async (_, i) => {
          const res = await svc.request('POST', `/api/v1/relayers/${RELAYER}/transactions`, { to: RECEIVER, value: from + i + 1, speed: 'fast' });
          expect(res.status).toBe(200);
          return ((await res.json()) as { data: { id: string } }).data.id;
        }),
      );
    const sent = await send(SENDS, 0);
    // Held by the window: the last ones are still pending, unsigned, while the first are mined.
    const last = await getTx(svc, sent[SENDS - 1]);
    expect(last.status).toBe('pending');
    expect(last.hashes).toEqual([]);

    // Sends far beyond the window while the chain works through the flood are not handed to the
    // worker only to be given back: they are written free, due later, and claimed as the window reaches them.
    // Once the first window's transfers are confirmed, the relayer's watch knows the window (16 here).
    const first = (await Promise.all(sent.map((id) => getTx(svc, id)))).sort((a, b) => Number(a.nonce) - Number(b.nonce));
    await waitStatus(svc, first[15].id, 'confirmed', 30_000);
    sent.push(...(await send(LATER, SENDS)));
    const later = await svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id: sent[sent.length - 1] } });
    expect(later).toMatchObject({ status: 'pending', leaseOwner: null });
    expect(later.dueAt!.getTime()).toBeGreaterThan(Date.now());

    // Written free, such rows are taken at once by a cancel or a replace: each is answered without
    // waiting for the window (more than 10 s away for the last), and goes out as changed when the window reaches it.
    const [canceled, replaced] = sent.slice(-2);
    const started = Date.now();
    const cancel = await svc.request('DELETE', `/api/v1/relayers/${RELAYER}/transactions/${canceled}`);
    expect(cancel.status).toBe(200);
    expect(((await cancel.json()) as { data: { status: string } }).data.status).toBe('canceled');
    const replace = await svc.request('PUT', `/api/v1/relayers/${RELAYER}/transactions/${replaced}`, { to: RECEIVER, value: 7777 });
    expect(replace.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(5_000);

    const txs = [];
    for (const id of sent.filter((id) => id !== canceled)) txs.push(await waitStatus(svc, id, 'confirmed', 60_000));
    expect(txs.find((tx) => tx.id === replaced)).toMatchObject({ value: '7777' });
    // The canceled one's nonce still went out (a 0-value self-transfer): no nonce was skipped.
    const nonces = [...txs, await getTx(svc, canceled)].map((tx) => Number(tx.nonce)).sort((a, b) => a - b);
    expect(nonces[nonces.length - 1] - nonces[0]).toBe(SENDS + LATER - 1);
    const mined = async () => Number(await rpc(svc.anvil!.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));
    await expect.poll(mined, { timeout: 20_000 }).toBe(nonces[nonces.length - 1] + 1);
    expect((await getTx(svc, canceled)).status).toBe('canceled');
    for (const tx of txs) {
      expect(tx.hashes).toHaveLength(1);
      expect(tx.statusReason).toBeNull();
    }
    // No block went short while transfers waited (the first may have come before all were sent).
    const blocks = new Set(txs.map((tx) => tx.networkData.block_number));
    expect(blocks.size).toBeLessThanOrEqual((SENDS + LATER) / PER_BLOCK + 1);
  });
});
