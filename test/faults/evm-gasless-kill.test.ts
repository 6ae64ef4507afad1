// kill -9 of the service between an operation's acceptance and its inclusion: after restarts,
// every accepted operation is included exactly once (one UserOperationEvent), by the normal send
// path's guarantees (the bundle transaction is written with the operations it carries).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { http, parseAbi, type Address, type Hex } from 'viem';
import { createBundlerClient, formatUserOperationRequest, toSimple7702SmartAccount, type UserOperation } from 'viem/account-abstraction';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../../src/chains/evm/anvil.js';
import { ENTRY_POINT_V08, SIMPLE_7702_ACCOUNT } from '../../src/chains/evm/aa/canonical.js';
import { paymasterDeployment } from '../../src/chains/evm/aa/paymaster.js';
import { gaslessAnvil } from '../support/aa.js';
import { startProxy } from '../support/rpc-proxy.js';
import { startInstance, type Instance } from '../support/instance.js';
import { createTestDatabase, databaseKinds, postgresReachable } from '../support/postgres.js';
import { API_KEY, DEV_ADDRESS, evmConfig } from '../support/service.js';

const BUNDLER = '/api/v1/relayers/evm-relayer/bundler';
const PM = paymasterDeployment(ENTRY_POINT_V08, DEV_ADDRESS, DEV_ADDRESS);
const USER_OPERATION_EVENT = parseAbi([
  'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
])[0];

/** anvil with the ERC-4337 contracts, the relayer's paymaster (funded) and a target; broadcasts through a proxy that can hold them. */
async function gaslessChain(cleanup: (() => Promise<unknown>)[]) {
  const anvil = await startAnvil();
  cleanup.push(() => anvil.stop());
  const { chain, pub, wallet } = await gaslessAnvil(anvil.url, [PM]);
  const target = (await pub.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ data: '0x63335f55005f526004601cf3' }) })).contractAddress!;
  const hold = { on: false, held: 0 };
  const proxy = await startProxy(anvil.url, async (body, forward) => {
    if (hold.on && body.includes('eth_sendRawTransaction')) {
      hold.held++;
      return null;
    }
    return forward();
  });
  cleanup.push(() => proxy.close());
  const config = evmConfig(proxy.url, { relayer: { policies: { user_operations: { paymaster: { address: PM.address } } } } });

  const call = async (instance: Instance, method: string, params: unknown[]) => {
    const res = await instance.request('POST', BUNDLER, { jsonrpc: '2.0', id: 1, method, params });
    const body = (await res.json()) as { result?: any; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  };
  /** A fresh EIP-7702 user's operation, prepared through `instance`'s bundler and signed. */
  const signed = async (instance: Instance) => {
    const owner = privateKeyToAccount(generatePrivateKey());
    const account = await toSimple7702SmartAccount({ client: pub, owner });
    const authorization = await owner.signAuthorization({ address: SIMPLE_7702_ACCOUNT, chainId: chain.id, nonce: 0 });
    const bundler = createBundlerClient({
      account,
      client: pub,
      chain,
      paymaster: true,
      transport: http(instance.url + BUNDLER, { retryCount: 0, fetchOptions: { headers: { authorization: `Bearer ${API_KEY}` } } }),
    });
    const prepared = await bundler.prepareUserOperation({ calls: [{ to: target, data: '0x' }], authorization });
    const op = { ...prepared, signature: await account.signUserOperation(prepared as never) } as UserOperation<'0.8'>;
    return formatUserOperationRequest(op);
  };
  /** Waits until every operation is included; checks each has one UserOperationEvent and the relayer sent each bundle once. */
  const includedOnce = async (instance: Instance, hashes: Hex[], others: Instance[] = []) => {
    for (const hash of hashes) {
      let receipt: any = null;
      for (const deadline = Date.now() + 90_000; !receipt; ) {
        receipt = await call(instance, 'eth_getUserOperationReceipt', [hash]);
        if (!receipt && Date.now() > deadline) {
          const seen = await call(instance, 'eth_getUserOperationByHash', [hash]);
          const logs = [instance, ...others].map((i) => i.output().slice(-3000)).join('\n---\n');
          throw new Error(`${hash} not included (${JSON.stringify(seen)?.slice(0, 300)}):\n${logs}`);
        }
        if (!receipt) await new Promise((r) => setTimeout(r, 200));
      }
      expect(receipt.success).toBe(true);
      const logs = await pub.getLogs({ address: ENTRY_POINT_V08, event: USER_OPERATION_EVENT, args: { userOpHash: hash }, fromBlock: 0n });
      expect(logs).toHaveLength(1);
    }
    const byHash = await Promise.all(hashes.map((h) => call(instance, 'eth_getUserOperationByHash', [h])));
    const txs = new Set(byHash.map((o) => o.transactionHash as string));
    expect(Number(await pub.getTransactionCount({ address: DEV_ADDRESS as Address }))).toBe(txs.size);
    return txs;
  };
  return { hold, config, call, signed, includedOnce };
}

describe.each(await databaseKinds())('kill -9 between acceptance and inclusion (%s)', (db) => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    while (cleanup.length) await cleanup.pop()!().catch(() => {});
  });

  it('includes every accepted operation exactly once after restarts', async () => {
    const { hold, config, call, signed, includedOnce } = await gaslessChain(cleanup);
    const dir = await mkdtemp(path.join(tmpdir(), 'relayer-gasless-kill-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const database = db === 'postgres' ? await createTestDatabase() : undefined;
    if (database) cleanup.push(() => database.drop());
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
    const env = { CONFIG_PATH: path.join(dir, 'config.json'), DATA_DIR: dir, INSTANCE_ID: 'gasless-kill', ...(database ? { DATABASE_URL: database.url } : {}) };
    const hashes: Hex[] = [];

    // 1: killed right after it answered the acceptance.
    let instance = await startInstance(env);
    cleanup.push(() => instance.kill());
    const first = await signed(instance);
    hashes.push(await call(instance, 'eth_sendUserOperation', [first, ENTRY_POINT_V08]));
    await instance.kill();

    // 2: killed once the bundle transaction was written and its broadcast is under way (held).
    hold.on = true;
    instance = await startInstance(env);
    const more = [await signed(instance), await signed(instance)];
    for (const op of more) hashes.push(await call(instance, 'eth_sendUserOperation', [op, ENTRY_POINT_V08]));
    for (const deadline = Date.now() + 30_000; hold.held === 0; ) {
      if (Date.now() > deadline) throw new Error(`no broadcast attempted:\n${instance.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await instance.kill();
    // The same operation sent again after the restart: still one.
    hold.on = false;
    instance = await startInstance(env);
    expect(await call(instance, 'eth_sendUserOperation', [more[0], ENTRY_POINT_V08])).toBe(hashes[1]);
    await includedOnce(instance, hashes);
    await instance.stop();
  }, 240_000);
});

describe.runIf(await postgresReachable())('two instances bundling one relayer', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    while (cleanup.length) await cleanup.pop()!().catch(() => {});
  });

  it('operations sent to both are each included once, each bundle sent once', async () => {
    const { config, call, signed, includedOnce } = await gaslessChain(cleanup);
    const dir = await mkdtemp(path.join(tmpdir(), 'relayer-gasless-two-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const database = await createTestDatabase();
    cleanup.push(() => database.drop());
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(config));
    const env = (id: string) => ({ CONFIG_PATH: path.join(dir, 'config.json'), DATA_DIR: dir, INSTANCE_ID: id, DATABASE_URL: database.url });
    const a = await startInstance(env('a'));
    cleanup.push(() => a.stop());
    const b = await startInstance(env('b'));
    cleanup.push(() => b.stop());
    const ops = await Promise.all(Array.from({ length: 8 }, (_, i) => signed(i % 2 ? b : a)));
    // Each sent to both at once: both instances see them pending and race to bundle them.
    const hashes = await Promise.all(
      ops.map(async (op) => {
        const [x, y] = await Promise.all([call(a, 'eth_sendUserOperation', [op, ENTRY_POINT_V08]), call(b, 'eth_sendUserOperation', [op, ENTRY_POINT_V08])]);
        expect(x).toBe(y);
        return x as Hex;
      }),
    );
    await includedOnce(a, hashes, [b]);
  }, 240_000);
});
