import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mnemonicToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC } from '../../src/chains/evm/anvil.js';
import { encryptKeystore } from '../../src/signers/keystore.js';
import { databaseKinds } from '../support/postgres.js';
import { evmConfig, startTestService, type TestService } from '../support/service.js';
import { RECEIVER, rpc, waitStatus } from '../support/evm.js';

// Three relayers on one chain whose blocks hold 6 transfers (23,100 gas each), a block a second,
// 20 sends each at once: ten blocks of work. anvil mines the highest cap first and, among equal
// caps, the first to arrive; each relayer's sends are signed and broadcast together.
const RELAYERS = 3;
const SENDS = 20;
const PER_BLOCK = 6;
const poorAddress = mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: RELAYERS + 1 }).address;

describe.each(await databaseKinds())('relayers sharing a busy chain, on %s', (db) => {
  let svc: TestService;
  let keys: string;
  const ids = Array.from({ length: RELAYERS }, (_, i) => `line-${i}`);
  // A relayer whose balance carries a bid at the market price, not one at the line's level.
  const poor = 'line-poor';

  beforeAll(async () => {
    keys = await mkdtemp(path.join(tmpdir(), 'line-keys-'));
    const signers = await Promise.all(
      [...ids, poor].map(async (id, i) => {
        // Anvil's dev accounts 1.. (0 is the default relayer's).
        const account = mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: i + 1 });
        const file = path.join(keys, `${id}.json`);
        await writeFile(file, JSON.stringify(await encryptKeystore(account.getHdKey().privateKey!, 'line', { n: 1024, address: account.address })));
        return { id, type: 'local', config: { path: file, passphrase: { type: 'plain', value: 'line' } } };
      }),
    );
    svc = await startTestService({
      db,
      anvil: { blockTime: 1, gasLimit: PER_BLOCK * 23_100 },
      config: ({ rpcUrl }) => {
        const base = evmConfig(rpcUrl);
        return { ...base, relayers: [...ids, poor].map((id) => ({ ...base.relayers[0], id, name: id, signer_id: id })), signers };
      },
    });
  });
  afterAll(async () => {
    await svc?.stop();
    await rm(keys, { recursive: true, force: true });
  });

  /** `count` sends from relayer `id` at once; their ids. */
  const flood = (id: string, count: number) =>
    Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const res = await svc.request('POST', `/api/v1/relayers/${id}/transactions`, { to: RECEIVER, value: i + 1, speed: 'fast' });
        expect(res.status).toBe(200);
        return ((await res.json()) as { data: { id: string } }).data.id;
      }),
    );

  it('are mined in turn: none is left for last, and the blocks stay full', async () => {
    const sent = await Promise.all(ids.map((id) => flood(id, SENDS)));
    const blocks: number[][] = [];
    for (const txIds of sent) {
      const own: number[] = [];
      for (const id of txIds) own.push(Number((await waitStatus(svc, id, 'confirmed', 60_000)).networkData.block_number));
      blocks.push(own);
    }
    // No relayer left for last: each one's last transfer within a block of the others'.
    const lasts = blocks.map((b) => Math.max(...b));
    expect(Math.max(...lasts) - Math.min(...lasts), JSON.stringify(blocks)).toBeLessThanOrEqual(1);
    // And the chain kept busy: full blocks but for the first (sends still arriving) and the last.
    const used = new Set(blocks.flat()).size;
    expect(used, JSON.stringify(blocks)).toBeLessThanOrEqual((RELAYERS * SENDS) / PER_BLOCK + 2);
  });

  it('take a relayer whose balance cannot carry the line’s bids at the market price instead', async () => {
    // A base fee of 1 gwei, and a balance for one transfer at 10 gwei: enough at the market price
    // (twice the base fee, raised for the line ahead), short of the line's level (over 30 gwei).
    await rpc(svc.anvil!.url, 'anvil_setNextBlockBaseFeePerGas', ['0x3b9aca00']);
    await rpc(svc.anvil!.url, 'evm_mine');
    await rpc(svc.anvil!.url, 'anvil_setBalance', [poorAddress, `0x${(23_100n * 10_000_000_000n).toString(16)}`]);
    const [, [own]] = await Promise.all([Promise.all(ids.map((id) => flood(id, SENDS))), flood(poor, 1)]);
    // Behind the line, not refused by the node for want of funds; bid again, never past the balance.
    await waitStatus(svc, own, 'confirmed', 45_000);
  });
});
