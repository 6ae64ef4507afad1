// Gasless EVM end to end: viem's bundler client, pointed at the relayer's bundler URL with
// `paymaster: true`, sends a fresh 0-ETH EOA's operation as an EIP-7702 smart account; the relayer
// sponsors it, bundles it through its normal send path and reports it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createWalletClient,
  encodeFunctionData,
  http,
  numberToHex,
  parseAbi,
  type Address,
  type Chain,
  type Hex,
  type HttpTransport,
  type PublicClient,
} from 'viem';
import {
  createBundlerClient,
  formatUserOperationRequest,
  entryPoint07Abi,
  getUserOperationHash,
  toSimple7702SmartAccount,
  toPackedUserOperation,
  toSmartAccount,
  type UserOperation,
} from 'viem/account-abstraction';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC } from '../../src/chains/evm/anvil.js';
import { ENTRY_POINT_V07, ENTRY_POINT_V08, SIMPLE_7702_ACCOUNT, SIMPLE_ACCOUNT_FACTORY_V07 } from '../../src/chains/evm/aa/canonical.js';
import { BUNDLE_MARGIN_MS } from '../../src/chains/evm/aa/bundling.js';
import { approvalTypedData, paymasterData, paymasterDeployment, relayerPaymasterAbi } from '../../src/chains/evm/aa/paymaster.js';
import { keystores, localSigner } from '../chains/stellar/support.js';
import { gaslessAnvil } from '../support/aa.js';
import { databaseKinds } from '../support/postgres.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from '../support/service.js';

const BUNDLER = '/api/v1/relayers/evm-relayer/bundler';
/** Stores its caller in slot 0 (see test/chains/evm/aa/support.ts). */
const CALLER_RECORDER_INIT: Hex = '0x63335f55005f526004601cf3';
const PM08 = paymasterDeployment(ENTRY_POINT_V08, DEV_ADDRESS, DEV_ADDRESS);
const PM07 = paymasterDeployment(ENTRY_POINT_V07, DEV_ADDRESS, DEV_ADDRESS);
/** secp256k1's order. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

type Ctx = { svc: TestService; chain: Chain; pub: PublicClient<HttpTransport, Chain>; recorder: Address; other: Address };

const HOOK = { relayer: { notification_id: 'hook' }, notifications: [{ id: 'hook', type: 'webhook', url: 'http://127.0.0.1:9/hook' }] };

async function setup(db: 'pglite' | 'postgres', userOperations: object, workers = true): Promise<Ctx> {
  // Beside the EVM relayer, a Stellar one (its network unreachable: it only has to exist) that has no bundler.
  const keys = await keystores();
  const stellarKey = await keys.create('stellar');
  const svc = await startTestService({
    db,
    anvil: true,
    workers,
    config: ({ rpcUrl }) => {
      const config = evmConfig(rpcUrl, { ...HOOK, relayer: { ...HOOK.relayer, policies: { user_operations: userOperations } } });
      config.relayers.push({
        id: 'stellar-relayer',
        name: 'Stellar',
        network: 'stellar-n',
        network_type: 'stellar',
        paused: false,
        signer_id: 'stellar-key',
        policies: {},
      } as never);
      config.signers.push(localSigner('stellar-key', stellarKey.file) as never);
      config.networks.push({
        type: 'stellar',
        network: 'stellar-n',
        rpc_urls: ['http://127.0.0.1:1'],
        passphrase: 'Test SDF Network ; September 2015',
        is_testnet: true,
      } as never);
      return config;
    },
  });
  const stop = svc.stop.bind(svc);
  svc.stop = async () => {
    await stop();
    await keys.remove();
  };
  // The relayer's paymasters (owner and signer the relayer's address), placed and funded by someone else.
  const { chain, pub, wallet } = await gaslessAnvil(svc.anvil!.url, [PM08, PM07]);
  const deploy = async () => (await pub.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ data: CALLER_RECORDER_INIT }) })).contractAddress!;
  return { svc, chain, pub, recorder: await deploy(), other: await deploy() };
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
  const res = await c.svc.request('POST', BUNDLER, typeof body === 'string' ? body : JSON.stringify(body), {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
  });
  return { status: res.status, body: (await res.json()) as any };
}

/** The JSON-RPC result, or throws with the error's code and message. */
async function rpcOk(c: Ctx, method: string, params: unknown[]) {
  const { body } = await callBundler(c, { jsonrpc: '2.0', id: 1, method, params });
  if (body.error) throw Object.assign(new Error(`${body.error.code} ${body.error.message}`), { code: body.error.code });
  return body.result;
}

const rpcError = async (c: Ctx, method: string, params: unknown[]) => (await callBundler(c, { jsonrpc: '2.0', id: 7, method, params })).body.error;

async function setPolicy(c: Ctx, userOperations: object | null) {
  const res = await c.svc.request('PATCH', '/api/v1/relayers/evm-relayer', { policies: userOperations ? { user_operations: userOperations } : null });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** A 7702 operation prepared through the bundler route (stub data, estimate, paymaster data) and signed, not sent. */
async function signedOp(
  c: Ctx,
  to: Address,
  user?: Awaited<ReturnType<typeof fresh7702>>,
  opts: { nonce?: bigint; approvalUntil?: number; delegated?: boolean } = {},
) {
  const u = user ?? (await fresh7702(c));
  const bundler = bundlerClient(c, u.account);
  const prepared = (await bundler.prepareUserOperation({
    calls: [{ to, data: '0x' }],
    // An account delegated already: no authorization, and (viem sees its code) no factory.
    authorization: opts.delegated ? undefined : u.authorization,
    ...(opts.nonce !== undefined ? { nonce: opts.nonce } : {}),
  })) as UserOperation<'0.8'>;
  if (opts.approvalUntil !== undefined) {
    // The paymaster's approval with a window of the test's choosing, signed by the relayer's key as the relayer would.
    const w = { validUntil: opts.approvalUntil, validAfter: 0 };
    const packed = toPackedUserOperation({ ...prepared, paymasterData: '0x' });
    const approval = await mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC).signTypedData(approvalTypedData(packed, prepared.paymaster!, c.chain.id, w));
    prepared.paymasterData = paymasterData(w, approval);
  }
  const signature = await u.account.signUserOperation(prepared as never);
  const op = { ...prepared, signature } as UserOperation<'0.8'>;
  return { ...u, op, json: formatUserOperationRequest(op) };
}

const rowsOf = (c: Ctx) => c.svc.rt.db.prisma.userOperation.count();
const txCount = (c: Ctx) => c.svc.rt.db.prisma.transaction.count();

async function waitOp(c: Ctx, hash: string, status: string, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const row = await c.svc.rt.db.prisma.userOperation.findFirst({ where: { hash: hash.toLowerCase() } });
    if (row?.status === status) return row;
    if (Date.now() > deadline) throw new Error(`operation ${hash}: ${row?.status ?? 'no row'} (${row?.statusReason}), not ${status}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const deposit = (c: Ctx, pm: Address) => c.pub.readContract({ address: pm, abi: relayerPaymasterAbi, functionName: 'getDeposit' }) as Promise<bigint>;
const callerOf = async (c: Ctx, target: Address) => `0x${((await c.pub.getStorageAt({ address: target, slot: '0x0' })) ?? '0x').slice(-40)}`.toLowerCase();

const simpleAccountAbi = parseAbi([
  'function execute(address dest, uint256 value, bytes func)',
  'function createAccount(address owner, uint256 salt) returns (address)',
  'function getAddress(address owner, uint256 salt) view returns (address)',
]);

/** A v0.7 SimpleAccount (eth-infinitism's, from its canonical factory) as viem's smart account; viem ships none for it. */
async function simpleAccountV07(c: Ctx, owner: ReturnType<typeof privateKeyToAccount>) {
  const address = (await c.pub.readContract({
    address: SIMPLE_ACCOUNT_FACTORY_V07,
    abi: simpleAccountAbi,
    functionName: 'getAddress',
    args: [owner.address, 0n],
  })) as Address;
  return toSmartAccount({
    client: c.pub,
    entryPoint: { abi: entryPoint07Abi, address: ENTRY_POINT_V07, version: '0.7' },
    getAddress: async () => address,
    getFactoryArgs: async () => ({
      factory: SIMPLE_ACCOUNT_FACTORY_V07,
      factoryData: encodeFunctionData({ abi: simpleAccountAbi, functionName: 'createAccount', args: [owner.address, 0n] }),
    }),
    encodeCalls: async (calls) =>
      encodeFunctionData({ abi: simpleAccountAbi, functionName: 'execute', args: [calls[0]!.to, calls[0]!.value ?? 0n, calls[0]!.data ?? '0x'] }),
    decodeCalls: undefined,
    getStubSignature: async () =>
      '0xfffffffffffffffffffffffffffffff0000000000000000000000000000000007aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1c',
    signMessage: async () => {
      throw new Error('not needed');
    },
    signTypedData: async () => {
      throw new Error('not needed');
    },
    // SimpleAccount checks an EIP-191 signature of the userOpHash by its owner.
    signUserOperation: async (op) =>
      owner.signMessage({
        message: {
          raw: getUserOperationHash({
            userOperation: { ...op, sender: address } as never,
            entryPointAddress: ENTRY_POINT_V07,
            entryPointVersion: '0.7',
            chainId: c.chain.id,
          }),
        },
      }),
  });
}

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

    // Its webhook (the outbox: written with the status change) and its metrics.
    const events = (await c.svc.rt.db.prisma.delivery.findMany({ where: { event: 'user_operation_update' } })).map((d) => JSON.parse(d.body).payload);
    expect(events.filter((e) => e.hash === hash.toLowerCase()).map((e) => e.status)).toEqual(['included']);
    const metrics = await c.svc.rt.metrics.registry.metrics();
    expect(metrics).toMatch(/relayer_user_operations_total\{relayer_id="evm-relayer",outcome="included"\} [1-9]/);
    expect(metrics).toMatch(/relayer_bundle_size_count\{relayer_id="evm-relayer"\} [1-9]/);
  }, 60_000);

  it('several operations sent at once go in one handleOps; the same signed operation again is the same hash, kept and included once', async () => {
    const ops = await Promise.all([signedOp(c, c.recorder), signedOp(c, c.recorder), signedOp(c, c.recorder)]);
    const rowsBefore = await rowsOf(c);
    // One JSON-RPC batch: accepted together, bundled together.
    const { body } = await callBundler(
      c,
      ops.map((o, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_sendUserOperation', params: [o.json, ENTRY_POINT_V08] })),
    );
    expect(body.map((b: any) => b.error)).toEqual([undefined, undefined, undefined]);
    const hashes = body.map((b: any) => b.result as string);
    expect(await rpcOk(c, 'eth_sendUserOperation', [ops[0]!.json, ENTRY_POINT_V08])).toBe(hashes[0]);
    const rows = await Promise.all(hashes.map((h: string) => waitOp(c, h, 'included')));
    expect(new Set(rows.map((r) => r.transactionId)).size).toBe(1);
    expect(await rowsOf(c)).toBe(rowsBefore + 3);
    // Sent again once included: still the same answer, nothing new.
    expect(await rpcOk(c, 'eth_sendUserOperation', [ops[0]!.json, ENTRY_POINT_V08])).toBe(hashes[0]);
    await new Promise((r) => setTimeout(r, 500));
    expect(await rowsOf(c)).toBe(rowsBefore + 3);
    const logs = await c.pub.getLogs({
      address: ENTRY_POINT_V08,
      event: parseAbi([
        'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
      ])[0],
      args: { userOpHash: hashes[0] as Hex },
      fromBlock: 0n,
    });
    expect(logs).toHaveLength(1);
    for (const o of ops) expect(await c.pub.getBalance({ address: o.owner.address })).toBe(0n);
    const receipt = await rpcOk(c, 'eth_getUserOperationReceipt', [hashes[1]]);
    expect(receipt).toMatchObject({ userOpHash: hashes[1], success: true, sender: ops[1]!.owner.address });
    expect(receipt.logs.at(-1).topics[1]).toBe(hashes[1]);
    // A client polling sends its receipts in one batch: each answer is the one asked alone, with
    // its own logs; an unknown hash has none.
    const one = await Promise.all(hashes.map((h: string) => rpcOk(c, 'eth_getUserOperationReceipt', [h])));
    const unknown = `0x${'ab'.repeat(32)}`;
    const { body: polled } = await callBundler(
      c,
      [...hashes, unknown].map((h, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_getUserOperationReceipt', params: [h] })),
    );
    expect(polled.map((b: any) => b.result)).toEqual([...one, null]);
    for (const [i, h] of hashes.entries()) expect(polled[i].result.logs.at(-1).topics[1]).toBe(h);
  }, 90_000);

  it('an operation whose call reverts is included, not successful, with its revert data; the paymaster paid', async () => {
    const user = await fresh7702(c);
    const bundler = bundlerClient(c, user.account);
    const before = await deposit(c, PM08.address);
    // The user asks the relayer's paymaster for its deposit: refused (NotOwner) inside the operation.
    const withdraw = encodeFunctionData({ abi: relayerPaymasterAbi, functionName: 'withdrawTo', args: [user.owner.address, 1n] });
    const hash = await bundler.sendUserOperation({ calls: [{ to: PM08.address, data: withdraw }], authorization: user.authorization });
    const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 30_000 });
    expect(receipt.success).toBe(false);
    expect(receipt.reason).toMatch(/^0x[0-9a-f]{8}/);
    const row = await waitOp(c, hash, 'included');
    expect(row.statusReason).toBe(receipt.reason);
    expect(await deposit(c, PM08.address)).toBeLessThan(before);
    expect(await c.svc.rt.metrics.registry.metrics()).toMatch(/relayer_user_operations_total\{relayer_id="evm-relayer",outcome="reverted"\} 1/);
  }, 60_000);

  it('refuses what the policy does not sponsor, before anything is stored or sent', async () => {
    const rows = await rowsOf(c);
    const txs = await txCount(c);
    await setPolicy(c, { paymaster: { address: PM08.address }, sponsorship: { allowed_targets: [c.recorder], max_operations_per_sender_per_hour: 1 } });
    try {
      const user = await fresh7702(c);
      const bundler = bundlerClient(c, user.account);
      // A call to a target not allowed: the paymaster refuses to sponsor it (-32501).
      await expect(bundler.sendUserOperation({ calls: [{ to: c.other, data: '0x' }], authorization: user.authorization })).rejects.toThrow(
        /not in the relayer's allowed_targets/,
      );
      const error = await rpcError(c, 'pm_getPaymasterStubData', [
        formatUserOperationRequest({
          sender: user.owner.address,
          nonce: 0n,
          callData: encodeFunctionData({ abi: parseAbi(['function execute(address,uint256,bytes)']), functionName: 'execute', args: [c.other, 0n, '0x'] }),
        }),
        ENTRY_POINT_V08,
        '0x7a69',
        {},
      ]);
      expect(error).toMatchObject({ code: -32501 });
      // An EntryPoint the relayer does not serve, and another chain.
      expect(await rpcError(c, 'eth_sendUserOperation', [{}, '0x0000000000000000000000000000000000004337'])).toMatchObject({ code: -32602 });
      // The per-sender limit, counted from the table: the first of the hour goes, the second is throttled.
      const first = await signedOp(c, c.recorder);
      const hash = await rpcOk(c, 'eth_sendUserOperation', [first.json, ENTRY_POINT_V08]);
      await waitOp(c, hash, 'included');
      const bundler2 = bundlerClient(c, first.account);
      await expect(bundler2.sendUserOperation({ calls: [{ to: c.recorder, data: '0x' }] })).rejects.toThrow(/max_operations_per_sender_per_hour is 1/);
      // A maximum cost below any operation's: pm_getPaymasterData refuses to approve.
      await setPolicy(c, { paymaster: { address: PM08.address }, sponsorship: { max_cost_per_operation: '1' } });
      const poor = await fresh7702(c);
      await expect(
        bundlerClient(c, poor.account).sendUserOperation({ calls: [{ to: c.recorder, data: '0x' }], authorization: poor.authorization }),
      ).rejects.toThrow(/above the relayer's max_cost_per_operation of 1 wei/);
      expect(await rowsOf(c)).toBe(rows + 1);
      expect(await txCount(c)).toBe(txs + 1);
    } finally {
      await setPolicy(c, { paymaster: { address: PM08.address } });
    }
  }, 90_000);

  it('refuses an operation that fails simulation with the ERC code, and stores nothing', async () => {
    const rows = await rowsOf(c);
    const o = await signedOp(c, c.recorder);
    const stranger = privateKeyToAccount(generatePrivateKey());
    const forged = { ...o.json, signature: await stranger.sign({ hash: `0x${'ab'.repeat(32)}` }) };
    expect(await rpcError(c, 'eth_sendUserOperation', [forged, ENTRY_POINT_V08])).toMatchObject({ code: -32507, message: expect.stringMatching(/signature/) });
    // Its paymaster approval altered: the paymaster refuses it (AA34 → -32507, or the ERC's paymaster code).
    const altered = { ...o.json, callGasLimit: '0x1' };
    expect((await rpcError(c, 'eth_sendUserOperation', [altered, ENTRY_POINT_V08])).code).toBeOneOf([-32500, -32501, -32507]);
    expect(await rowsOf(c)).toBe(rows);
  }, 60_000);

  it('refuses an EIP-7702 authorization with a high s (the node would skip it), when sending and estimating; nothing stored', async () => {
    const rows = await rowsOf(c);
    const txs = await txCount(c);
    const o = await signedOp(c, c.recorder);
    // Its twin s' = n - s, yParity flipped: it recovers to the same user, and the operation's
    // signature (which covers the delegate, not the authorization's signature) stays valid.
    const auth = o.json.eip7702Auth!;
    const twin = { ...auth, s: numberToHex(SECP256K1_N - BigInt(auth.s), { size: 32 }), yParity: BigInt(auth.yParity) === 0n ? '0x1' : '0x0' };
    const highS = { ...o.json, eip7702Auth: twin };
    for (const method of ['eth_sendUserOperation', 'eth_estimateUserOperationGas'])
      expect(await rpcError(c, method, [highS, ENTRY_POINT_V08])).toMatchObject({
        code: -32602,
        message: expect.stringMatching(/^eip7702Auth\.s: is above secp256k1n\/2, and EIP-7702 skips such an authorization/),
      });
    expect(await rowsOf(c)).toBe(rows);
    expect(await txCount(c)).toBe(txs);
    // What anvil does with it: a type-4 transaction carrying it is mined, and the authorization
    // skipped (the user's code and nonce untouched); a bundle carrying it would have reverted.
    const wallet = createWalletClient({
      chain: c.chain,
      transport: http(c.svc.anvil!.url),
      account: mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 2 }),
    });
    const skipped = await wallet.sendTransaction({
      to: wallet.account.address,
      gas: 100_000n,
      authorizationList: [{ address: auth.address, chainId: c.chain.id, nonce: 0, r: auth.r, s: twin.s as Hex, yParity: Number(BigInt(twin.yParity)) }],
    });
    expect((await c.pub.waitForTransactionReceipt({ hash: skipped })).status).toBe('success');
    expect(await c.pub.getCode({ address: o.owner.address })).toBeUndefined();
    expect(await c.pub.getTransactionCount({ address: o.owner.address })).toBe(0);
    // The same operation with its low-s authorization goes.
    const hash = await rpcOk(c, 'eth_sendUserOperation', [o.json, ENTRY_POINT_V08]);
    await waitOp(c, hash, 'included');
    expect(await rowsOf(c)).toBe(rows + 1);
  }, 60_000);

  it('answers JSON-RPC errors, never a 500: malformed JSON, unknown methods, bad params, a relayer without the policy', async () => {
    expect(await callBundler(c, '{"jsonrpc":')).toMatchObject({ status: 200, body: { jsonrpc: '2.0', id: null, error: { code: -32700 } } });
    expect((await callBundler(c, [])).body.error.code).toBe(-32600);
    expect((await callBundler(c, { jsonrpc: '2.0', id: 3, method: 'eth_sendTransaction', params: [] })).body).toMatchObject({ id: 3, error: { code: -32601 } });
    expect(await rpcError(c, 'eth_sendUserOperation', [{ sender: 'nope' }, ENTRY_POINT_V08])).toMatchObject({ code: -32602 });
    expect(await rpcError(c, 'eth_getUserOperationByHash', ['0x12'])).toMatchObject({ code: -32602 });
    expect(await rpcOk(c, 'eth_getUserOperationByHash', [`0x${'00'.repeat(32)}`])).toBeNull();
    expect(await rpcOk(c, 'eth_getUserOperationReceipt', [`0x${'00'.repeat(32)}`])).toBeNull();
    expect(await rpcOk(c, 'eth_chainId', [])).toBe('0x7a69');
    expect(await rpcOk(c, 'eth_supportedEntryPoints', [])).toEqual([ENTRY_POINT_V07, ENTRY_POINT_V08]);
    // Hostile params for every method: a JSON-RPC error naming the problem, never an internal one.
    const hostile: unknown[][] = [
      [],
      [null],
      [1, 2],
      ['0x', ENTRY_POINT_V08],
      [[], ENTRY_POINT_V08],
      [{ sender: `0x${'11'.repeat(20)}`, nonce: `0x${'f'.repeat(65)}`, callData: '0x' }, ENTRY_POINT_V08],
      [{ sender: `0x${'11'.repeat(20)}`, nonce: '0x0', callData: '0x', factory: '0x7702' }, ENTRY_POINT_V07, '0x7a69', {}],
      [{ sender: `0x${'11'.repeat(20)}`, nonce: '0x0', callData: '0xzz' }, ENTRY_POINT_V08, 'not a chain'],
      [{ initCode: '0x', sender: `0x${'11'.repeat(20)}` }, ENTRY_POINT_V08],
      [`0x${'00'.repeat(31)}`],
    ];
    const methods = [
      'eth_sendUserOperation',
      'eth_estimateUserOperationGas',
      'pm_getPaymasterStubData',
      'pm_getPaymasterData',
      'eth_getUserOperationByHash',
      'eth_getUserOperationReceipt',
    ];
    const calls = methods.flatMap((method) => hostile.map((params) => ({ jsonrpc: '2.0', id: `${method}:${JSON.stringify(params)}`, method, params })));
    const answers = (await callBundler(c, calls)).body as any[];
    const internal = answers.filter((a) => !a.error || a.error.code === -32603 || typeof a.error.message !== 'string');
    expect(internal).toEqual([]);
    // A batch answers each call in its place.
    const { body } = await callBundler(c, [{ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }, { jsonrpc: '2.0', id: 2, method: 'nope' }, 5]);
    expect(body.map((b: any) => [b.id, b.result ?? b.error.code])).toEqual([
      [1, '0x7a69'],
      [2, -32601],
      [null, -32600],
    ]);
    // Read permission reads; sending and paymaster data need execute.
    const admin = await c.svc.request('POST', '/api/v1/api-keys', { name: 'reader', permissions: ['relayer:evm-relayer:read'] });
    const reader = ((await admin.json()) as any).data.value as string;
    expect((await callBundler(c, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }, reader)).body.result).toBe('0x7a69');
    expect((await callBundler(c, { jsonrpc: '2.0', id: 1, method: 'eth_sendUserOperation', params: [{}, ENTRY_POINT_V08] }, reader)).status).toBe(403);
    // A relayer of another family has no bundler.
    const stellar = await c.svc.request(
      'POST',
      '/api/v1/relayers/stellar-relayer/bundler',
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    );
    expect(stellar.status).toBe(200);
    expect(((await stellar.json()) as any).error).toMatchObject({ code: -32601, message: expect.stringMatching(/not offered for Stellar relayers/) });
    expect((await c.svc.request('POST', '/api/v1/relayers/nope/bundler', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }))).status).toBe(404);
    // A paused relayer still answers reads, and sends nothing.
    expect((await c.svc.request('PATCH', '/api/v1/relayers/evm-relayer', { paused: true })).status).toBe(200);
    try {
      expect(await rpcOk(c, 'eth_chainId', [])).toBe('0x7a69');
      expect(await rpcError(c, 'eth_sendUserOperation', [{}, ENTRY_POINT_V08])).toMatchObject({ code: -32600, message: 'relayer evm-relayer is paused' });
    } finally {
      await c.svc.request('PATCH', '/api/v1/relayers/evm-relayer', { paused: false });
    }
    // Without the policy, every call says the bundler is off.
    await setPolicy(c, null);
    try {
      expect(await rpcError(c, 'eth_chainId', [])).toMatchObject({ code: -32601, message: expect.stringMatching(/no user_operations policy/) });
    } finally {
      await setPolicy(c, { paymaster: { address: PM08.address } });
    }
  }, 60_000);

  it('a v0.7 account (SimpleAccount through its factory) is bundled to EntryPoint v0.7', async () => {
    await setPolicy(c, { entry_points: [ENTRY_POINT_V07], paymaster: { address: PM07.address } });
    try {
      const owner = privateKeyToAccount(generatePrivateKey());
      const account = await simpleAccountV07(c, owner);
      const bundler = bundlerClient(c, account);
      const hash = await bundler.sendUserOperation({ calls: [{ to: c.other, data: '0x' }] });
      const receipt = await bundler.waitForUserOperationReceipt({ hash, timeout: 30_000 });
      expect(receipt.success).toBe(true);
      expect(receipt.entryPoint).toBe(ENTRY_POINT_V07);
      expect(await callerOf(c, c.other)).toBe(account.address.toLowerCase());
      expect(await c.pub.getBalance({ address: account.address })).toBe(0n);
    } finally {
      await setPolicy(c, { paymaster: { address: PM08.address } });
    }
  }, 60_000);
});

describe.each(await databaseKinds())('operations accepted while no worker runs (%s)', (db) => {
  let c: Ctx;
  beforeAll(async () => {
    c = await setup(db, { paymaster: { address: PM08.address } }, false);
  }, 120_000);
  afterAll(() => c?.svc.stop());

  it('one invalidated between acceptance and bundling is dropped with its reason; the rest of its bundle lands', async () => {
    const ops = await Promise.all([signedOp(c, c.recorder), signedOp(c, c.recorder), signedOp(c, c.recorder)]);
    const hashes: string[] = [];
    for (const o of ops) hashes.push(await rpcOk(c, 'eth_sendUserOperation', [o.json, ENTRY_POINT_V08]));
    expect((await c.svc.rt.db.prisma.userOperation.findMany()).map((r) => r.status)).toEqual(['pending', 'pending', 'pending']);
    // Someone else includes the second first: its nonce is used.
    const wallet = createWalletClient({
      chain: c.chain,
      transport: http(c.svc.anvil!.url),
      account: mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 2 }),
    });
    const handleOps = encodeFunctionData({
      abi: parseAbi([
        'struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }',
        'function handleOps(PackedUserOperation[] ops, address beneficiary)',
      ]),
      functionName: 'handleOps',
      args: [[(await import('viem/account-abstraction')).toPackedUserOperation(ops[1]!.op)], wallet.account.address],
    });
    const elsewhere = await wallet.sendTransaction({ to: ENTRY_POINT_V08, data: handleOps, authorizationList: [ops[1]!.op.authorization!], gas: 1_000_000n });
    expect((await c.pub.waitForTransactionReceipt({ hash: elsewhere })).status).toBe('success');

    c.svc = await c.svc.restart({}, true);
    const [a, b, d] = [await waitOp(c, hashes[0]!, 'included'), await waitOp(c, hashes[1]!, 'failed'), await waitOp(c, hashes[2]!, 'included')];
    expect(b.statusReason).toBe('AA25 invalid account nonce');
    expect(a.transactionId).toBe(d.transactionId);
    const events = (await c.svc.rt.db.prisma.delivery.findMany({ where: { event: 'user_operation_update' } })).map((x) => JSON.parse(x.body).payload);
    expect(events.find((e) => e.hash === hashes[1])).toMatchObject({ status: 'failed', status_reason: 'AA25 invalid account nonce' });
  }, 90_000);
});

const opEvents = (c: Ctx, hash: string) =>
  c.pub.getLogs({
    address: ENTRY_POINT_V08,
    event: parseAbi([
      'event UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster, uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)',
    ])[0],
    args: { userOpHash: hash as Hex },
    fromBlock: 0n,
  });

const opsOf = async (c: Ctx, sender: string) =>
  (await c.svc.rt.db.prisma.userOperation.findMany()).filter((r) => r.sender.toLowerCase() === sender.toLowerCase());

describe.each(await databaseKinds())('an operation that failed, sent again (%s)', (db) => {
  // A paymaster whose owner is someone else (it can drain the deposit without the relayer's key); the relayer signs its approvals.
  const OWNER = mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: 3 });
  const PM = paymasterDeployment(ENTRY_POINT_V08, OWNER.address, DEV_ADDRESS);
  let c: Ctx;
  beforeAll(async () => {
    c = await setup(db, { paymaster: { address: PM.address } }, false);
    const wallet = createWalletClient({ chain: c.chain, transport: http(c.svc.anvil!.url), account: OWNER });
    await c.pub.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ to: PM.to, data: PM.data }) });
    await c.pub.waitForTransactionReceipt({
      hash: await wallet.writeContract({ address: PM.address, abi: relayerPaymasterAbi, functionName: 'deposit', value: 10n ** 18n }),
    });
  }, 120_000);
  afterAll(() => c?.svc.stop());

  it('is refused with the ERC code while it would still fail, and accepted again in its row once it would not', async () => {
    const x = await signedOp(c, c.recorder);
    const hash = await rpcOk(c, 'eth_sendUserOperation', [x.json, ENTRY_POINT_V08]);
    const { id } = await waitOp(c, hash, 'pending');
    // The paymaster's deposit drained before it is bundled: bundling drops it (AA31).
    const wallet = createWalletClient({ chain: c.chain, transport: http(c.svc.anvil!.url), account: OWNER });
    const all = await deposit(c, PM.address);
    await c.pub.waitForTransactionReceipt({
      hash: await wallet.writeContract({ address: PM.address, abi: relayerPaymasterAbi, functionName: 'withdrawTo', args: [OWNER.address, all] }),
    });
    c.svc = await c.svc.restart({}, true);
    const failed = await waitOp(c, hash, 'failed');
    expect(failed.statusReason).toMatch(/^AA31/);
    const txs = await txCount(c);

    // Sent again while the deposit is empty: simulation refuses it (the paymaster's code); it stays failed.
    expect(await rpcError(c, 'eth_sendUserOperation', [x.json, ENTRY_POINT_V08])).toMatchObject({ code: -32501, message: expect.stringMatching(/AA31/) });
    expect(await waitOp(c, hash, 'failed')).toMatchObject({ id, statusReason: failed.statusReason });

    // Funded again: sent twice at once, both answer its hash; its one row goes back to pending and is included once.
    await c.pub.waitForTransactionReceipt({
      hash: await wallet.writeContract({ address: PM.address, abi: relayerPaymasterAbi, functionName: 'deposit', value: 10n ** 18n }),
    });
    const { body } = await callBundler(
      c,
      [0, 1].map((i) => ({ jsonrpc: '2.0', id: i, method: 'eth_sendUserOperation', params: [x.json, ENTRY_POINT_V08] })),
    );
    expect(body.map((b: any) => b.result)).toEqual([hash, hash]);
    const included = await waitOp(c, hash, 'included');
    expect(included.id).toBe(id);
    expect(included.statusReason).toBeNull();
    expect(await opsOf(c, x.owner.address)).toHaveLength(1);
    expect(await txCount(c)).toBe(txs + 1);
    expect(await rpcOk(c, 'eth_sendUserOperation', [x.json, ENTRY_POINT_V08])).toBe(hash);
    expect(await opEvents(c, hash)).toHaveLength(1);
    expect(await callerOf(c, c.recorder)).toBe(x.owner.address.toLowerCase());
  }, 120_000);

  it('the per-sender limit holds for operations sent at once: of 5 from one sender with a limit of 2, 2 are kept', async () => {
    await setPolicy(c, { paymaster: { address: PM.address }, sponsorship: { max_operations_per_sender_per_hour: 2 } });
    try {
      const user = await fresh7702(c);
      // Five operations of one sender, each with its own nonce key (all valid at once).
      const ops = await Promise.all([1n, 2n, 3n, 4n, 5n].map((k) => signedOp(c, c.recorder, user, { nonce: k << 64n })));
      const { body } = await callBundler(
        c,
        ops.map((o, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_sendUserOperation', params: [o.json, ENTRY_POINT_V08] })),
      );
      expect(body.filter((b: any) => b.result)).toHaveLength(2);
      expect(body.filter((b: any) => b.error).map((b: any) => [b.error.code, b.error.message])).toEqual(
        Array.from({ length: 3 }, () => [
          -32504,
          expect.stringMatching(/sent 2 operations in the last hour, the relayer's max_operations_per_sender_per_hour is 2/),
        ]),
      );
      expect(await opsOf(c, user.owner.address)).toHaveLength(2);
    } finally {
      await setPolicy(c, { paymaster: { address: PM.address } });
    }
  }, 90_000);
});

/** The hash of the relayer's transaction `id` once the node has it in its pool. */
const inPool = (c: Ctx, id: string) =>
  until(async () => {
    const tx = await c.svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id } });
    return tx.hash && (await c.pub.getTransaction({ hash: tx.hash as Hex }).catch(() => null)) ? (tx.hash as Hex) : null;
  }, 'the bundle in the node pool');

// A bundle held in the node's pool (automine off) while its deadline passes or its operations change under it.
describe.each(await databaseKinds())("bundles held in the node's pool (%s)", (db) => {
  let c: Ctx;
  beforeAll(async () => {
    c = await setup(db, { paymaster: { address: PM08.address } });
  }, 120_000);
  afterAll(async () => {
    await c?.pub.request({ method: 'evm_setAutomine' as never, params: [true] as never }).catch(() => {});
    await c?.svc.stop();
  });

  it("a bundle's valid_until ends before the first window of its operations; not mined by then, it is replaced, and the operation whose window closed fails, never sent again", async () => {
    // Approvals: 15 minutes (the relayer's own), and 45 s (signed here): the bundle of both must be mined 20 s before the shorter ends.
    const approvalUntil = Math.floor(Date.now() / 1000) + 45;
    const [long, short] = await Promise.all([signedOp(c, c.recorder), signedOp(c, c.other, undefined, { approvalUntil })]);
    // Nothing is mined from now on (the bundle stays in the node's pool) until the test says so.
    await c.pub.request({ method: 'evm_setAutomine' as never, params: [false] as never });
    const { body } = await callBundler(
      c,
      [long, short].map((o, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_sendUserOperation', params: [o.json, ENTRY_POINT_V08] })),
    );
    const [longHash, shortHash] = body.map((b: any) => b.result as string);
    const rowShort = await waitOp(c, shortHash!, 'submitted');
    expect(rowShort.validUntil?.getTime()).toBe(approvalUntil * 1000);
    expect((await waitOp(c, longHash!, 'submitted')).transactionId).toBe(rowShort.transactionId);
    const bundle = await c.svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id: rowShort.transactionId! } });
    // 20 s before the window ends by the chain's clock: by this machine's, later by as far as the
    // chain's latest block is behind it (mined moments ago here).
    const lag = bundle.validUntil!.getTime() - (approvalUntil * 1000 - BUNDLE_MARGIN_MS);
    expect(lag).toBeGreaterThanOrEqual(0);
    expect(lag).toBeLessThan(5000);

    // Past its valid_until the pipeline replaces it with a 0-value self-transfer: mined only then.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const tx = await c.svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id: bundle.id } });
      const onNode = tx.hash ? await c.pub.getTransaction({ hash: tx.hash as Hex }).catch(() => null) : null;
      if (onNode?.to?.toLowerCase() === DEV_ADDRESS.toLowerCase()) break;
      if (Date.now() > deadline) throw new Error(`bundle ${tx.id} not replaced: ${tx.status} ${tx.statusReason}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(Date.now()).toBeGreaterThan(bundle.validUntil!.getTime());
    await c.pub.request({ method: 'evm_setAutomine' as never, params: [true] as never });
    await c.pub.request({ method: 'evm_mine' as never, params: [] as never });

    const failed = await waitOp(c, shortHash!, 'failed');
    expect(failed.statusReason).toMatch(/validity window ends at .*, too soon to be included/);
    const included = await waitOp(c, longHash!, 'included');
    expect(included.transactionId).not.toBe(bundle.id);
    expect(await c.svc.rt.db.prisma.transaction.findUniqueOrThrow({ where: { id: bundle.id } })).toMatchObject({ status: 'expired' });
    // The short one was never on chain, nor its call; the long one once.
    await new Promise((r) => setTimeout(r, 1000));
    expect(await opEvents(c, shortHash!)).toHaveLength(0);
    expect(await opEvents(c, longHash!)).toHaveLength(1);
    expect(await callerOf(c, c.other)).toBe(`0x${'0'.repeat(40)}`);
    expect((await waitOp(c, shortHash!, 'failed')).transactionId).toBe(bundle.id);
  }, 120_000);

  it('a bundle that reverts on chain is a failed transaction of the relayer; the operation invalidated after its broadcast fails with its reason, the others land once', async () => {
    // A user delegated already (its first operation included), whose next operation carries no authorization.
    const first = await signedOp(c, c.recorder);
    await waitOp(c, await rpcOk(c, 'eth_sendUserOperation', [first.json, ENTRY_POINT_V08]), 'included');
    const [broken, b, d] = await Promise.all([signedOp(c, c.other, first, { delegated: true }), signedOp(c, c.recorder), signedOp(c, c.recorder)]);
    expect(broken.json.eip7702Auth).toBeUndefined();

    // Nothing is mined until the test says so: the bundle of the three is sent and waits in the node's pool.
    await c.pub.request({ method: 'evm_setAutomine' as never, params: [false] as never });
    const { body } = await callBundler(
      c,
      [broken, b, d].map((o, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_sendUserOperation', params: [o.json, ENTRY_POINT_V08] })),
    );
    const hashes = body.map((x: any) => x.result as string);
    expect(hashes.every((h: string) => /^0x[0-9a-f]{64}$/.test(h))).toBe(true);
    const [brokenHash, bHash, dHash] = hashes as [string, string, string];
    const bundleId = (await waitOp(c, brokenHash, 'submitted')).transactionId!;
    for (const h of [bHash, dHash]) expect((await waitOp(c, h, 'submitted')).transactionId).toBe(bundleId);
    const sentHash = await inPool(c, bundleId);

    // Then the first user's delegation is gone: its validation fails (AA20) when the bundle runs,
    // and handleOps reverts (FailedOp) as a whole.
    await c.pub.request({ method: 'anvil_setCode' as never, params: [first.owner.address, '0x'] as never });
    await c.pub.request({ method: 'evm_setAutomine' as never, params: [true] as never });
    await c.pub.request({ method: 'evm_mine' as never, params: [] as never });
    expect((await c.pub.getTransactionReceipt({ hash: sentHash })).status).toBe('reverted');

    // The bundle, as any transaction of the relayer: failed, reverted.
    const rest = await until(async () => {
      const res = await c.svc.request('GET', `/api/v1/relayers/evm-relayer/transactions/${bundleId}`);
      const data = ((await res.json()) as any).data;
      return data.status === 'failed' ? data : null;
    }, 'the bundle transaction failed');
    expect(rest.status_reason).toMatch(/revert/);
    expect(rest.hash).toBe(sentHash);

    // The invalidated operation fails with the EntryPoint's reason; the others go in another bundle.
    const failed = await waitOp(c, brokenHash, 'failed');
    expect(failed.statusReason).toMatch(/^AA20 account not deployed/);
    const [rb, rd] = [await waitOp(c, bHash, 'included'), await waitOp(c, dHash, 'included')];
    expect(rb.transactionId).not.toBe(bundleId);
    expect(rd.transactionId).toBe(rb.transactionId);
    const gql = await c.svc.gql('query($h: String!) { userOperation(hash: $h) { status statusReason transaction { id } } }', { h: brokenHash });
    expect(gql.data.userOperation).toMatchObject({ status: 'failed', statusReason: failed.statusReason });
    expect(await rpcOk(c, 'eth_getUserOperationByHash', [brokenHash])).toMatchObject({ transactionHash: null, blockNumber: null });
    expect(await rpcOk(c, 'eth_getUserOperationReceipt', [brokenHash])).toBeNull();
    for (const h of [bHash, dHash]) {
      const receipt = await rpcOk(c, 'eth_getUserOperationReceipt', [h]);
      expect(receipt).toMatchObject({ userOpHash: h, success: true });
      expect(receipt.receipt.transactionHash).not.toBe(sentHash);
    }
    // Exactly once on chain each, and never the invalidated one.
    await new Promise((r) => setTimeout(r, 1000));
    expect(await opEvents(c, bHash)).toHaveLength(1);
    expect(await opEvents(c, dHash)).toHaveLength(1);
    expect(await opEvents(c, brokenHash)).toHaveLength(0);
    expect(await callerOf(c, c.other)).toBe(`0x${'0'.repeat(40)}`);
    const events = (await c.svc.rt.db.prisma.delivery.findMany({ where: { event: 'user_operation_update' } })).map((x) => JSON.parse(x.body).payload);
    expect(events.filter((e) => hashes.includes(e.hash)).map((e) => [e.hash, e.status])).toEqual(
      expect.arrayContaining([
        [brokenHash, 'failed'],
        [bHash, 'included'],
        [dHash, 'included'],
      ]),
    );
    expect(events.filter((e) => hashes.includes(e.hash))).toHaveLength(3);
  }, 120_000);

  it('a bundled operation whose EIP-7702 authorization went stale after its broadcast fails with that reason, and is never sent again; the other lands once', async () => {
    const [stale, e] = await Promise.all([signedOp(c, c.other), signedOp(c, c.recorder)]);
    const txs = await txCount(c);
    await c.pub.request({ method: 'evm_setAutomine' as never, params: [false] as never });
    const { body } = await callBundler(
      c,
      [stale, e].map((o, i) => ({ jsonrpc: '2.0', id: i, method: 'eth_sendUserOperation', params: [o.json, ENTRY_POINT_V08] })),
    );
    const [staleHash, eHash] = body.map((x: any) => x.result as string) as [string, string];
    const bundleId = (await waitOp(c, staleHash, 'submitted')).transactionId!;
    expect((await waitOp(c, eHash, 'submitted')).transactionId).toBe(bundleId);
    const sentHash = await inPool(c, bundleId);
    // The user's account nonce moves on (as if it had sent a transaction of its own): its
    // authorization (nonce 0) is skipped, it stays undelegated, and handleOps reverts.
    await c.pub.request({ method: 'anvil_setNonce' as never, params: [stale.owner.address, '0x1'] as never });
    await c.pub.request({ method: 'evm_setAutomine' as never, params: [true] as never });
    await c.pub.request({ method: 'evm_mine' as never, params: [] as never });
    expect((await c.pub.getTransactionReceipt({ hash: sentHash })).status).toBe('reverted');
    expect(await c.pub.getCode({ address: stale.owner.address })).toBeUndefined();

    const failed = await waitOp(c, staleHash, 'failed');
    expect(failed.statusReason).toMatch(/^eip7702Auth: its nonce 0 is not the sender's account nonce \(1\) any more, and the sender is not delegated/);
    const included = await waitOp(c, eHash, 'included');
    expect(included.transactionId).not.toBe(bundleId);
    // Two transactions: the reverted bundle and the one that carried the other; nothing reverted again.
    await new Promise((r) => setTimeout(r, 1000));
    expect(await txCount(c)).toBe(txs + 2);
    expect(await opEvents(c, eHash)).toHaveLength(1);
    expect(await opEvents(c, staleHash)).toHaveLength(0);
  }, 120_000);
});

async function until<T>(f: () => Promise<T | null | undefined | false | ''>, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
