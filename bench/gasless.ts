// Gasless EVM throughput (issue 75), in one run, on one local chain (anvil, a block every second)
// with the ERC-4337 contracts at their canonical addresses:
//   relayed  --users fresh EOAs with no ETH, each as viem's toSimple7702SmartAccount, each with one
//            UserOperation sponsored by the relayer's own paymaster (prepared beforehand through the
//            relayer's bundler URL, ERC-7677 pm_* methods included), all sent at once with
//            eth_sendUserOperation (ERC-7769) to POST /api/v1/relayers/{id}/bundler; timed from
//            just after a block until eth_getUserOperationReceipt answers for every one;
//   direct   as many other users' operations, prepared the same way, bundled in handleOps
//            transactions of the size the relayer made (operations per handleOps, rounded) and
//            sent straight to anvil by a plain client (type 4, carrying the bundle's EIP-7702
//            authorizations); timed from just after a block until the last one is mined.
// Reports operations per handleOps, the ratio of the two rates (relayed ÷ direct, target >= 0.8)
// and the median time to an eth_sendUserOperation answer (target <= 20 ms): of the N sent at once,
// and of 20 more sent one after the other (no queue in front of each); and, for scale, the median
// answer to N eth_chainId sent at once through the same route (its HTTP, auth and GraphQL path
// alone). The relayer runs as its own process (`src/main.ts`) on PGlite, or on PostgreSQL with
// --postgres <url of an empty database>.
// --json prints the figures as one JSON line last (bench/all.ts reads it).
//
//   npx tsx bench/gasless.ts [--users 100] [--postgres postgres://...] [--json]

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createPublicClient, createWalletClient, defineChain, encodeFunctionData, http, parseAbi, type Hex } from 'viem';
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from 'viem/accounts';
import {
  createBundlerClient,
  entryPoint08Abi,
  formatUserOperationRequest,
  toPackedUserOperation,
  toSimple7702SmartAccount,
  type UserOperation,
} from 'viem/account-abstraction';
import { ANVIL_DEFAULT_MNEMONIC, startAnvil } from '../src/chains/evm/anvil.js';
import { ENTRY_POINT_V08, placeCanonicalContracts } from '../src/chains/evm/aa/canonical.js';
import { relayerPaymaster } from '../src/chains/evm/aa/funding.js';
import { evmConfig } from '../test/support/service.js';
import { auth, jsonClient, nextBlock, RECEIVER, startRelayer, waitUntil } from './chain.js';
import { median } from './stats.js';

const { values: args } = parseArgs({
  options: {
    users: { type: 'string', default: '100' },
    postgres: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});
const N = Number(args.users);
const ETH = 10n ** 18n;
/** The devnet key's account (config/keys/devnet.json), anvil's account 0: the relayer. */
const RELAYER_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
const devAccount = (i: number) => mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: i });
const keyOf = (i: number): Hex => `0x${Buffer.from(devAccount(i).getHdKey().privateKey!).toString('hex')}`;

const anvil = await startAnvil({ blockTime: 1 });
const dir = await mkdtemp(path.join(tmpdir(), 'relayer-bench-gasless-'));
const http1 = jsonClient(N + 8);
let relayer: Awaited<ReturnType<typeof startRelayer>> | undefined;
try {
  await placeCanonicalContracts(anvil.url, keyOf(9));
  const policies = {
    user_operations: { entry_points: [ENTRY_POINT_V08], paymaster: { deploy: true, deposit: String(100n * ETH), min_deposit: String(ETH) } },
  };
  relayer = await startRelayer(evmConfig(anvil.url, { relayer: { id: 'bench', policies } }), dir, args.postgres);
  const bundlerUrl = `${relayer.url}/api/v1/relayers/bench/bundler`;

  const chain = defineChain({
    id: 31337,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [anvil.url] } },
  });
  const client = createPublicClient({ chain, transport: http(anvil.url), pollingInterval: 50 });
  const balanceOf = parseAbi(['function balanceOf(address) view returns (uint256)']);
  const pm = relayerPaymaster({ address: RELAYER_ADDRESS }, ENTRY_POINT_V08).address;
  console.log(`waiting for the relayer to deploy and fund its paymaster ${pm}`);
  await waitUntil(async () => {
    const code = await client.getCode({ address: pm });
    if (!code || code === '0x') return false;
    return (await client.readContract({ address: ENTRY_POINT_V08, abi: balanceOf, functionName: 'balanceOf', args: [pm] })) >= ETH;
  }, 200);

  /** One fresh user's operation, sponsored by the relayer (its pm_* answers) and signed. */
  async function prepared(): Promise<UserOperation<'0.8'>> {
    const owner = privateKeyToAccount(generatePrivateKey());
    const account = await toSimple7702SmartAccount({ client, owner });
    const bundler = createBundlerClient({
      account,
      client,
      paymaster: true,
      transport: http(bundlerUrl, { fetchOptions: { headers: auth } }),
    });
    const authorization = await owner.signAuthorization({ address: account.authorization.address, chainId: chain.id, nonce: 0 });
    const op = (await bundler.prepareUserOperation({ authorization, calls: [{ to: RECEIVER, data: '0x' }] })) as UserOperation<'0.8'>;
    return { ...op, signature: await account.signUserOperation(op) };
  }
  async function prepareAll(n = N): Promise<UserOperation<'0.8'>[]> {
    const out: UserOperation<'0.8'>[] = [];
    // A few at a time: preparing is not measured, and must not starve the service.
    for (let i = 0; i < n; i += 10) out.push(...(await Promise.all(Array.from({ length: Math.min(10, n - i) }, prepared))));
    return out;
  }

  // ---- relayed ----
  console.log(`preparing ${N} operations through ${bundlerUrl}`);
  const ops = await prepareAll();
  await nextBlock(http1, anvil.url);
  const started = performance.now();
  const answers = await Promise.all(
    ops.map(async (op) => {
      const t = performance.now();
      const { body } = await http1.post(
        bundlerUrl,
        { jsonrpc: '2.0', id: 1, method: 'eth_sendUserOperation', params: [formatUserOperationRequest(op), ENTRY_POINT_V08] },
        auth,
        false,
      );
      if (body?.error) throw new Error(`eth_sendUserOperation: ${JSON.stringify(body.error)}`);
      return { hash: body.result as Hex, ms: performance.now() - t };
    }),
  );
  const answeredMs = performance.now() - started;
  const receipts = new Map<Hex, { transactionHash: Hex; success: boolean }>();
  await waitUntil(async () => {
    const left = answers.filter((a) => !receipts.has(a.hash));
    const { body } = await http1.post(
      bundlerUrl,
      left.map((a, id) => ({ jsonrpc: '2.0', id, method: 'eth_getUserOperationReceipt', params: [a.hash] })),
      auth,
    );
    for (const r of body as { id: number; result?: { receipt: { transactionHash: Hex }; success: boolean } | null }[])
      if (r.result) receipts.set(left[r.id].hash, { transactionHash: r.result.receipt.transactionHash, success: r.result.success });
    return receipts.size === N;
  }, 50); // as often as the direct path's waitForTransactionReceipt polls
  const relayedMs = performance.now() - started;
  const bundles = new Set([...receipts.values()].map((r) => r.transactionHash)).size;
  const perBundle = N / bundles;
  const failed = [...receipts.values()].filter((r) => !r.success).length;
  const sendP50 = median(answers.map((a) => a.ms));
  console.log(
    `relayed: ${N} operations in ${bundles} handleOps, ${(relayedMs / 1000).toFixed(2)} s (all answered after ${(answeredMs / 1000).toFixed(2)} s), ${failed} calls reverted; send p50 ${sendP50.toFixed(1)} ms`,
  );

  // ---- the route's own floor: as many eth_chainId at once (no simulation, no write) ----
  const floor = median(
    await Promise.all(
      Array.from({ length: N }, async () => {
        const t = performance.now();
        const { body } = await http1.post(bundlerUrl, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }, auth);
        if (body?.result !== '0x7a69') throw new Error(`eth_chainId: ${JSON.stringify(body)}`);
        return performance.now() - t;
      }),
    ),
  );
  console.log(`floor: ${N} eth_chainId at once through the same route, p50 ${floor.toFixed(1)} ms`);

  // ---- one at a time: the answer's latency without a queue in front of it ----
  const alone: number[] = [];
  for (const op of await prepareAll(Math.min(N, 20))) {
    const t = performance.now();
    const { body } = await http1.post(
      bundlerUrl,
      { jsonrpc: '2.0', id: 1, method: 'eth_sendUserOperation', params: [formatUserOperationRequest(op), ENTRY_POINT_V08] },
      auth,
      false,
    );
    alone.push(performance.now() - t);
    if (body?.error) throw new Error(`eth_sendUserOperation: ${JSON.stringify(body.error)}`);
  }
  const aloneP50 = median(alone);
  console.log(`one at a time: ${alone.length} eth_sendUserOperation, p50 ${aloneP50.toFixed(1)} ms`);

  // ---- direct ----
  console.log(`preparing ${N} more operations for the direct path`);
  const direct = await prepareAll();
  const size = Math.max(1, Math.round(perBundle));
  const sender = createWalletClient({ chain, transport: http(anvil.url), account: privateKeyToAccount(keyOf(1)) });
  let nonce = await client.getTransactionCount({ address: sender.account.address, blockTag: 'pending' });
  const groups: UserOperation<'0.8'>[][] = [];
  for (let i = 0; i < direct.length; i += size) groups.push(direct.slice(i, i + size));
  // Signed beforehand, so the timed part is the chain's: the bundles' gas as the EntryPoint's
  // simulation would set it, with a margin.
  const signed: Hex[] = [];
  for (const group of groups) {
    const data = encodeFunctionData({
      abi: entryPoint08Abi,
      functionName: 'handleOps',
      args: [group.map((o) => toPackedUserOperation(o)), sender.account.address],
    });
    const authorizationList = group.flatMap((o) => (o.authorization ? [o.authorization] : []));
    const gas = await client.estimateGas({ account: sender.account, to: ENTRY_POINT_V08, data, authorizationList });
    const request = await sender.prepareTransactionRequest({
      to: ENTRY_POINT_V08,
      data,
      authorizationList,
      gas: (gas * 12n) / 10n,
      nonce: nonce++,
      type: 'eip7702',
    });
    signed.push(await sender.signTransaction(request as never));
  }
  await nextBlock(http1, anvil.url);
  const directStart = performance.now();
  const hashes: Hex[] = [];
  for (const raw of signed) hashes.push(await client.sendRawTransaction({ serializedTransaction: raw }));
  const mined = await Promise.all(hashes.map((hash) => client.waitForTransactionReceipt({ hash, pollingInterval: 50 })));
  const directMs = performance.now() - directStart;
  const reverted = mined.filter((r) => r.status !== 'success').length;
  console.log(`direct: ${N} operations in ${groups.length} handleOps of ${size}, ${(directMs / 1000).toFixed(2)} s${reverted ? `, ${reverted} reverted` : ''}`);

  const relayedRate = N / (relayedMs / 1000);
  const directRate = N / (directMs / 1000);
  const ratio = relayedRate / directRate;
  console.log(
    `gasless ${N} users: ${perBundle.toFixed(1)} operations per handleOps; confirmed ops/s relayed ${relayedRate.toFixed(1)} / direct ${directRate.toFixed(1)} = ${ratio.toFixed(2)} (target >= 0.8); eth_sendUserOperation p50 ${sendP50.toFixed(1)} ms all at once (eth_chainId at once ${floor.toFixed(1)} ms), ${aloneP50.toFixed(1)} ms one at a time (target <= 20)`,
  );
  if (args.json)
    console.log(JSON.stringify({ users: N, perBundle, bundles, relayedRate, directRate, ratio, sendP50, floorP50: floor, aloneP50, answeredMs, failed }));
} finally {
  await relayer?.stop();
  http1.destroy();
  await anvil.stop();
  await rm(dir, { recursive: true, force: true });
}
