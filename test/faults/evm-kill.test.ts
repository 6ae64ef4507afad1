import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAnvil, type AnvilInstance } from '../../src/chains/evm/anvil.js';
import { startProxy } from '../support/rpc-proxy.js';
import { allTransactions, startInstance } from '../support/instance.js';
import { createTestDatabase, databaseKinds } from '../support/postgres.js';
import { DEV_ADDRESS, evmConfig } from '../support/service.js';
import { RECEIVER, rpc } from '../support/evm.js';

const SEND_PATH = '/api/v1/relayers/evm-relayer/transactions';
describe.each(await databaseKinds())('kill -9 at any moment (%s)', (db) => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    while (cleanup.length) await cleanup.pop()!().catch(() => {});
  });

  it('resumes every accepted transaction after each restart: none lost, none sent twice, nonces contiguous', async () => {
    const anvil: AnvilInstance = await startAnvil({ blockTime: 1 });
    cleanup.push(() => anvil.stop());
    const dir = await mkdtemp(path.join(tmpdir(), 'relayer-crash-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const database = db === 'postgres' ? await createTestDatabase() : undefined;
    if (database) cleanup.push(() => database.drop());
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(evmConfig(anvil.url)));
    const env = {
      CONFIG_PATH: path.join(dir, 'config.json'),
      DATA_DIR: dir,
      INSTANCE_ID: 'crash-test',
      RATE_LIMIT_REQUESTS_PER_SECOND: '10000',
      RATE_LIMIT_BURST_SIZE: '10000',
      ...(database ? { DATABASE_URL: database.url } : {}),
    };
    const startNonce = Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));

    const accepted = new Map<string, number>();
    let value = 1000;
    // Each round sends 30 transactions and kills the process at a different moment: while sends are
    // still being accepted, right after, or while the accepted ones are being signed, sent and mined.
    const plan = [
      { after: 1, wait: 0 },
      { after: 10, wait: 30 },
      { after: 30, wait: 250 },
      { after: 30, wait: 900 },
      { after: 20, wait: 100 },
    ];
    for (const { after, wait } of plan) {
      const instance = await startInstance(env);
      cleanup.push(() => instance.kill());
      let answered = 0;
      let reached: () => void;
      const enough = new Promise<void>((r) => (reached = r));
      const sends = Array.from({ length: 30 }, async () => {
        const v = value++;
        try {
          const res = await instance.request('POST', SEND_PATH, { to: RECEIVER, value: v });
          if (res.status === 200) accepted.set(((await res.json()) as any).data.id, v);
        } catch {
          // The process died before answering: the client does not know, so it is not counted as accepted.
        } finally {
          if (++answered >= after) reached();
        }
      });
      await enough;
      await new Promise((r) => setTimeout(r, wait));
      await instance.kill();
      await Promise.all(sends);
    }
    expect(accepted.size).toBeGreaterThan(0);

    const instance = await startInstance(env);
    cleanup.push(() => instance.stop());
    let rows: any[] = [];
    const deadline = Date.now() + 90_000;
    for (;;) {
      rows = await allTransactions(instance);
      if (rows.every((r) => ['confirmed', 'failed', 'expired', 'canceled'].includes(r.status))) break;
      if (Date.now() > deadline) throw new Error(`not all final: ${JSON.stringify(rows.filter((r) => r.status !== 'confirmed'))}`);
      await new Promise((r) => setTimeout(r, 500));
    }

    // Every accepted transaction is confirmed, with the value it was sent with.
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const [id, v] of accepted) expect(byId.get(id)).toMatchObject({ status: 'confirmed', value: String(v) });
    expect(rows.every((r) => r.status === 'confirmed')).toBe(true);
    // Nonces: unique and contiguous from where the account started.
    const nonces = rows.map((r) => r.nonce).sort((a, b) => a - b);
    expect(nonces).toEqual(Array.from({ length: rows.length }, (_, i) => startNonce + i));
    // On chain: each row's hash is mined at its nonce, the account moved by exactly the number of rows,
    // and each payload (a unique value) appears exactly once.
    expect(Number(await rpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']))).toBe(startNonce + rows.length);
    const seen = new Map<string, number>();
    const head = Number(await rpc(anvil.url, 'eth_blockNumber'));
    for (let b = 0; b <= head; b++) {
      const block = await rpc(anvil.url, 'eth_getBlockByNumber', [`0x${b.toString(16)}`, true]);
      for (const t of block.transactions) if (t.from.toLowerCase() === DEV_ADDRESS.toLowerCase()) seen.set(t.value, (seen.get(t.value) ?? 0) + 1);
    }
    for (const r of rows) {
      expect(seen.get(`0x${BigInt(r.value).toString(16)}`)).toBe(1);
      const onChain = await rpc(anvil.url, 'eth_getTransactionByHash', [r.hash]);
      expect(Number(onChain.nonce)).toBe(r.nonce);
    }
  });
});

/** An RPC proxy to `target` that, while `hold` is set, never answers a request that broadcasts. */
async function holdingProxy(target: string) {
  const state = { hold: true, held: 0 };
  const proxy = await startProxy(target, async (body, forward) => {
    if (state.hold && body.includes('eth_sendRawTransaction')) {
      state.held++;
      return null;
    }
    return forward();
  });
  return { ...proxy, state };
}

describe('restart on the embedded database', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    while (cleanup.length) await cleanup.pop()!().catch(() => {});
  });

  it('takes up at once, without INSTANCE_ID, a transaction the killed process held a lease on', async () => {
    const anvil = await startAnvil();
    cleanup.push(() => anvil.stop());
    const proxy = await holdingProxy(anvil.url);
    cleanup.push(() => proxy.close());
    const dir = await mkdtemp(path.join(tmpdir(), 'relayer-restart-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(evmConfig(proxy.url)));
    const env = { CONFIG_PATH: path.join(dir, 'config.json'), DATA_DIR: dir };

    const first = await startInstance(env);
    cleanup.push(() => first.kill());
    const res = await first.request('POST', SEND_PATH, { to: RECEIVER, value: 7 });
    expect(res.status).toBe(200);
    const { id } = ((await res.json()) as any).data;
    // Killed while its broadcast hangs: the transaction is signed and leased to the dead process.
    while (proxy.state.held === 0) await new Promise((r) => setTimeout(r, 20));
    await first.kill();

    proxy.state.hold = false;
    const second = await startInstance(env);
    cleanup.push(() => second.stop());
    const restarted = Date.now();
    let status = '';
    while (status !== 'confirmed' && Date.now() - restarted < 20_000) {
      const tx = ((await (await second.request('GET', `${SEND_PATH}/${id}`)).json()) as any).data;
      status = tx.status;
      if (status !== 'confirmed') await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe('confirmed');
    // Well before the dead process's lease (30 s from acceptance) would have run out.
    expect(Date.now() - restarted).toBeLessThan(10_000);
  });
});
