// Gasless EVM end to end: viem's bundler client, pointed at the relayer's bundler URL with
// `paymaster: true`, sends a fresh 0-ETH EOA's operation as an EIP-7702 smart account; the relayer
// sponsors it, bundles it through its normal send path and reports it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPublicClient, createWalletClient, defineChain, encodeFunctionData, http, parseAbi, type Address, type Chain, type Hex } from 'viem';
import { createBundlerClient, toSimple7702SmartAccount, toSimpleSmartAccount } from 'viem/account-abstraction';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC } from '../../src/chains/evm/anvil.js';
import { ENTRY_POINT_V07, ENTRY_POINT_V08, placeCanonicalContracts, SIMPLE_7702_ACCOUNT } from '../../src/chains/evm/aa/canonical.js';
import { paymasterDeployment, relayerPaymasterAbi } from '../../src/chains/evm/aa/paymaster.js';
import { databaseKinds } from '../support/postgres.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from '../support/service.js';

const BUNDLER = '/api/v1/relayers/evm-relayer/bundler';
/** Stores its caller in slot 0 (see test/chains/evm/aa/support.ts). */
const CALLER_RECORDER_INIT: Hex = '0x63335f55005f526004601cf3';
const PM08 = paymasterDeployment(ENTRY_POINT_V08, DEV_ADDRESS, DEV_ADDRESS);
const PM07 = paymasterDeployment(ENTRY_POINT_V07, DEV_ADDRESS, DEV_ADDRESS);

type Ctx = { svc: TestService; chain: Chain; pub: ReturnType<typeof createPublicClient>; recorder: Address; other: Address };

async function setup(db: 'pglite' | 'postgres', userOperations: object, extra: object = {}): Promise<Ctx> {
  const svc = await startTestService({
    db,
    anvil: true,
    config: ({ rpcUrl }) => evmConfig(rpcUrl, { relayer: { policies: { user_operations: userOperations }, ...extra } }),
  });
  const url = svc.anvil!.url;
  const chain = defineChain({ id: 31337, name: 'anvil', nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 }, rpcUrls: { default: { http: [url] } } });
  const transport = http(url, { retryCount: 0 });
  const pub = createPublicClient({ chain, transport, pollingInterval: 50 });
  const funder = mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 4 });
  await placeCanonicalContracts(url, `0x${Buffer.from(funder.getHdKey().privateKey!).toString('hex')}`);
  // The relayer's paymasters (owner and signer the relayer's address), placed and funded by someone else.
  const wallet = createWalletClient({ chain, transport, account: mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 3 }), pollingInterval: 50 });
  for (const d of [PM08, PM07]) {
    await pub.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: d.to, data: d.data }) });
    await pub.waitForTransactionReceipt({
      hash: await wallet.writeContract({ address: d.address, abi: relayerPaymasterAbi, functionName: 'deposit', value: 10n ** 18n }),
    });
  }
  const deploy = async () => (await pub.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ data: CALLER_RECORDER_INIT }) })).contractAddress!;
  return { svc, chain, pub: pub as never, recorder: await deploy(), other: await deploy() };
}

function bundlerClient(c: Ctx, account: Parameters<typeof createBundlerClient>[0]['account']) {
  return createBundlerClient({
    account,
    client: c.pub,
    chain: c.chain,
    paymaster: true,
    pollingInterval: 100,
    transport: http(`http://relayer.test${BUNDLER}`, {
      retryCount: 0,
      fetchFn: (input, init) => c.svc.app.fetch(new Request(input as string, init)),
      fetchOptions: { headers: { authorization: `Bearer ${c.svc.apiKey}` } },
    }),
  });
}

async function callBundler(c: Ctx, body: unknown, key = c.svc.apiKey) {
  const res = await c.svc.request('POST', BUNDLER, typeof body === 'string' ? body : JSON.stringify(body), { authorization: `Bearer ${key}`, 'content-type': 'application/json' });
  return { status: res.status, body: (await res.json()) as any };
}

const deposit = (c: Ctx, pm: Address) => c.pub.readContract({ address: pm, abi: relayerPaymasterAbi, functionName: 'getDeposit' }) as Promise<bigint>;
const callerOf = async (c: Ctx, target: Address) => `0x${((await c.pub.getStorageAt({ address: target, slot: '0x0' })) ?? '0x').slice(-40)}`.toLowerCase();

async function fresh7702(c: Ctx) {
  const owner = privateKeyToAccount(generatePrivateKey());
  const account = await toSimple7702SmartAccount({ client: c.pub, owner });
  const authorization = await owner.signAuthorization({ address: SIMPLE_7702_ACCOUNT, chainId: c.chain.id, nonce: 0 });
  return { owner, account, authorization };
}

describe.each(await databaseKinds())('gasless EVM through the bundler route (%s)', (db) => {
  let c: Ctx;
  beforeAll(async () => {
    c = await setup(db, { paymaster: { address: PM08.address } });
  }, 120_000);
  afterAll(() => c?.svc.stop());

  it("a fresh 0-ETH EOA's EIP-7702 operation, sent with viem's bundler client, is included: the target sees the user, the relayer paid", async () => {
    const { owner, account, authorization } = await fresh7702(c);
    const bundler = bundlerClient(c, account);
    const relayerBefore = await c.pub.getBalance({ address: DEV_ADDRESS });
    const depositBefore = await deposit(c, PM08.address);

    const hash = await bundler.sendUserOperation({ calls: [{ to: c.recorder, data: '0x' }], authorization });
    const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 30_000 });

    expect(receipt.success).toBe(true);
    expect(receipt.sender.toLowerCase()).toBe(owner.address.toLowerCase());
    expect(receipt.receipt.status).toBe('success');
    expect(await callerOf(c, c.recorder)).toBe(owner.address.toLowerCase());
    expect(await c.pub.getBalance({ address: owner.address })).toBe(0n);
    // The relayer paid: the bundle's gas from its account, the operation's from its paymaster's
    // deposit (refunded to it as beneficiary); together they fell.
    const depositAfter = await deposit(c, PM08.address);
    expect(depositAfter).toBeLessThan(depositBefore);
    expect((await c.pub.getBalance({ address: DEV_ADDRESS })) + depositAfter).toBeLessThan(relayerBefore + depositBefore);
    // The handleOps transaction is an ordinary transaction of the relayer, type 4 (it carried the authorization).
    const row = await c.svc.rt.db.prisma.userOperation.findFirstOrThrow({ where: { hash: hash.toLowerCase() } });
    expect(row.status).toBe('included');
    const tx = await c.svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id: row.transactionId! } });
    expect(tx.to?.toLowerCase()).toBe(ENTRY_POINT_V08.toLowerCase());
    expect(['mined', 'confirmed']).toContain(tx.status);
    expect((await c.pub.getTransaction({ hash: tx.hash as Hex })).type).toBe('eip7702');

    const byHash = await bundler.getUserOperation({ hash });
    expect(byHash.transactionHash).toBe(receipt.receipt.transactionHash);
  }, 60_000);
});
