// EVM relay throughput, in one run, against one local chain (anvil, a block every second):
//   direct   N transactions signed beforehand and sent straight to anvil by a plain client
//            (eth_sendRawTransaction in JSON-RPC batches), timed until the last one is mined: the
//            chain's own limit;
//   accepted N sends through the relayer's send route (POST /api/v1/relayers/{id}/transactions),
//            timed until the last answer;
//   e2e      the same N sends, timed until the relayer reports every one confirmed.
// The relayer's clients are --concurrency HTTP keep-alive connections (bench/wire.ts, a lean client:
// the load generator takes as little as it can of the cores the service and anvil share). Each
// measurement starts just after a block; one unmeasured round warms both paths up, then the rounds
// alternate the two and the median is reported. The relayer runs as its own process
// (`src/main.ts`) on PGlite, or on PostgreSQL with --postgres <url>.
//
// Each round also prints the CPU time the service, anvil, this client and (when it runs on this
// machine) the PostgreSQL server spent per relayed transaction (from /proc), a figure that moves
// less than the rates when other work loads the machine; and their sum beside the CPU the chain's
// rate leaves a transaction on this machine's cores (cores / chain rate): relaying at the chain's
// rate needs the sum below it.
//
// A round is sized in blocks: by default 20 blocks' worth of transfers (the block gas limit over
// 21,000 gas, read from the chain), so one missed block moves a round's ratio by at most
// about 1/21 < 0.05. Each round prints the blocks each path took and what one block is worth.
// --json prints the figures as one JSON line last (bench/all.ts reads it).
//
//   npx tsx bench/evm.ts [--blocks 20 | --count N] [--rounds 3] [--concurrency 64] [--postgres postgres://...] [--json]

import { availableParallelism } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { mnemonicToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC, startAnvil } from '../src/chains/evm/anvil.js';
import { parseMetrics } from '../test/support/metrics.js';
import {
  auth,
  blockNumber as blockOf,
  cpuMs,
  jsonClient,
  nextBlock as nextBlockOf,
  postgresCpuMs as postgresCpuOf,
  RECEIVER,
  ROOT,
  sendRaw,
  startRelayer as startService,
  waitProgress,
} from './chain.js';
import { Wire } from './wire.js';

const SEND_PATH = '/api/v1/relayers/bench/transactions';
/** The devnet key's account (config/keys/devnet.json), anvil's account 0. */
const RELAYER_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

const { values: args } = parseArgs({
  options: {
    count: { type: 'string' },
    blocks: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '64' },
    postgres: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    json: { type: 'boolean', default: false },
  },
});
let N = 0; // set once the chain's block capacity is known
const C = Number(args.concurrency);
const CORES = availableParallelism();

const http = jsonClient(C + 8);
const { post, rpc } = http;
const freshConnections = () => http.fresh();
const nextBlock = (anvilUrl: string) => nextBlockOf(http, anvilUrl);
const blockNumber = (anvilUrl: string) => blockOf(http, anvilUrl);
const postgresCpuMs = () => postgresCpuOf(args.postgres);

// ---- direct: a plain client straight to anvil -----------------------------------------------

async function direct(anvilUrl: string, accountIndex: number): Promise<{ rate: number; blocks: number; anvilCpuMs: number }> {
  const account = mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: accountIndex });
  const start = Number(await rpc(anvilUrl, 'eth_getTransactionCount', [account.address, 'latest']));
  await nextBlock(anvilUrl);
  const gasPrice = BigInt(await rpc(anvilUrl, 'eth_gasPrice'));
  const signed = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      account.signTransaction({
        chainId: 31337,
        type: 'eip1559',
        to: RECEIVER,
        value: 1n,
        gas: 21_000n,
        nonce: start + i,
        // Full blocks raise the base fee by 1/8 each: a round of 20 blocks by about 10 times, and
        // a cap below what the last block asks leaves its transactions unmined (anvil drops them).
        maxFeePerGas: gasPrice * 100n,
        maxPriorityFeePerGas: 1n,
      }),
    ),
  );
  freshConnections();
  await nextBlock(anvilUrl);
  const t0 = performance.now();
  const b0 = await blockNumber(anvilUrl);
  const cpu0 = cpuMs(anvil.process.pid);
  await sendRaw(http, anvilUrl, signed);
  // A transaction that can never be mined (priced out) fails the run instead of stalling it.
  await waitProgress('direct mined nonce', async () => Number(await rpc(anvilUrl, 'eth_getTransactionCount', [account.address, 'latest'])), start + N, 25);
  const rate = N / ((performance.now() - t0) / 1000);
  return { rate, blocks: (await blockNumber(anvilUrl)) - b0, anvilCpuMs: (cpuMs(anvil.process.pid) - cpu0) / N };
}

// ---- through the relayer --------------------------------------------------------------------

function startRelayer(anvilUrl: string, dir: string) {
  const config = {
    relayers: [{ id: 'bench', name: 'bench', network: 'localnet', network_type: 'evm', signer_id: 'dev', policies: {} }],
    signers: [{ id: 'dev', type: 'local', config: { path: path.join(ROOT, 'config/keys/devnet.json'), passphrase: { type: 'plain', value: 'devnet' } } }],
    notifications: [],
    networks: [
      { type: 'evm', network: 'localnet', chain_id: 31337, required_confirmations: 1, rpc_urls: [anvilUrl], features: ['eip1559'], average_blocktime_ms: 1000 },
    ],
  };
  return startService(config, dir, args.postgres);
}

/**
 * What the service counted of its chain calls (by method; a JSON-RPC batch counts once, as
 * `batch:<its first method>`) and of its resubmissions, from its Prometheus metrics.
 */
async function chainWork(metricsUrl: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const { name, labels, value } of parseMetrics(await (await fetch(metricsUrl)).text())) {
    const key =
      name === 'relayer_rpc_requests_total'
        ? `${labels.method}${labels.outcome === 'ok' ? '' : ` (${labels.outcome})`}`
        : name === 'relayer_transaction_resubmissions_total'
          ? 'resubmissions'
          : null;
    if (key) counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

/** The counts of `after` that grew since `before`, per `n` transfers, largest first. */
const perTransfer = (before: Map<string, number>, after: Map<string, number>, n: number) =>
  [...after]
    .map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / n] as const)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1]);

const CONFIRMED = `query { relayerTransactions(relayerId: "bench", status: confirmed, perPage: 1) { pagination { totalItems } } }`;

async function confirmedCount(url: string): Promise<number> {
  const { body } = await post(`${url}/graphql`, { query: CONFIRMED }, auth);
  return body.data.relayerTransactions.pagination.totalItems;
}

async function throughRelayer(
  url: string,
  anvilUrl: string,
  n: number,
  already: number,
): Promise<{
  accepted: number;
  e2e: number;
  blocks: number;
  serviceCpuMs: number;
  serverCpuMs: number | null;
  anvilCpuMs: number;
  clientCpuMs: number;
  chainWork: (readonly [string, number])[];
  /** Seconds from the last transfer mined to the relayer reporting every one confirmed. */
  tailS: number;
}> {
  freshConnections();
  const { hostname, port } = new URL(url);
  const wires = await Promise.all(Array.from({ length: C }, () => Wire.open(hostname, Number(port))));
  const minedNonce = async () => Number(await rpc(anvilUrl, 'eth_getTransactionCount', [RELAYER_ADDRESS, 'latest']));
  const startNonce = await minedNonce();
  const work0 = await chainWork(relayer!.metricsUrl);
  await nextBlock(anvilUrl);
  const t0 = performance.now();
  const b0 = await blockNumber(anvilUrl);
  const cpu0 = [cpuMs(relayer?.child.pid), cpuMs(anvil.process.pid), cpuMs(process.pid)];
  const server0 = postgresCpuMs();
  let failed = 0;
  let next = 0;
  await Promise.all(
    wires.map(async (wire) => {
      while (next < n) {
        const res = await wire.post(SEND_PATH, JSON.stringify({ to: RECEIVER, value: ++next }), auth);
        if (res.status !== 200) failed++;
      }
    }),
  );
  const t1 = performance.now();
  for (const wire of wires) wire.close();
  if (failed) throw new Error(`${failed} sends were refused`);
  // Watch the chain until all are mined (asking the relayer meanwhile would load what is measured),
  // then the relayer until it reports every one confirmed.
  await waitProgress('mined nonce', minedNonce, startNonce + n, 25);
  const blocks = (await blockNumber(anvilUrl)) - b0;
  const tMined = performance.now();
  await waitProgress('confirmed count', () => confirmedCount(url), already + n, 25);
  const t2 = performance.now();
  const server1 = postgresCpuMs();
  const cpu1 = [cpuMs(relayer?.child.pid), cpuMs(anvil.process.pid), cpuMs(process.pid)];
  const work = perTransfer(work0, await chainWork(relayer!.metricsUrl), n);
  return {
    accepted: n / ((t1 - t0) / 1000),
    e2e: n / ((t2 - t0) / 1000),
    blocks,
    serviceCpuMs: (cpu1[0] - cpu0[0]) / n,
    serverCpuMs: server0 === null || server1 === null ? null : (server1 - server0) / n,
    anvilCpuMs: (cpu1[1] - cpu0[1]) / n,
    clientCpuMs: (cpu1[2] - cpu0[2]) / n,
    chainWork: work,
    tailS: (t2 - tMined) / 1000,
  };
}

// ---- run ------------------------------------------------------------------------------------

// A block every second (interval mining). Anvil's automine (a block per transaction) wedges under
// this load, even for the direct client sending in nonce order: it keeps an already-mined
// transaction in its pool and stops mining (see also foundry-rs/foundry#10122).
const anvil = await startAnvil({ accounts: 4, blockTime: 1 });
const gasLimit = Number(((await rpc(anvil.url, 'eth_getBlockByNumber', ['latest', false])) as { gasLimit: string }).gasLimit);
const perBlock = Math.floor(gasLimit / 21_000);
N = args.count ? Number(args.count) : Number(args.blocks) * perBlock;
const dir = await mkdtemp(path.join(tmpdir(), 'bench-evm-'));
let relayer: Awaited<ReturnType<typeof startRelayer>> | undefined;
try {
  relayer = await startRelayer(anvil.url, dir);
  // Warm up both paths (JIT, connection pools, caches) before measuring.
  const warm = Number(args.warmup ?? Math.min(N, 2000));
  await throughRelayer(relayer.url, anvil.url, warm, 0);
  await direct(anvil.url, 1);
  // Rounds alternate the two, so a busy machine slows both alike; the ratio is taken per round.
  const rounds: ({ chain: number; chainBlocks: number; chainAnvilCpuMs: number; machineCpuMs: number; budgetCpuMs: number } & Awaited<
    ReturnType<typeof throughRelayer>
  >)[] = [];
  let done = warm;
  for (let r = 0; r < Number(args.rounds); r++) {
    const { rate: chain, blocks: chainBlocks, anvilCpuMs: chainAnvilCpuMs } = await direct(anvil.url, 1 + (r % 3));
    const through = await throughRelayer(relayer.url, anvil.url, N, done);
    done += N;
    const machineCpuMs = through.serviceCpuMs + (through.serverCpuMs ?? 0) + through.anvilCpuMs + through.clientCpuMs;
    rounds.push({ chain, chainBlocks, chainAnvilCpuMs, ...through, machineCpuMs, budgetCpuMs: (CORES * 1000) / chain });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const f = (x: number) => x.toFixed(0).padStart(6);
  const m = { chain: median(rounds.map((r) => r.chain)), accepted: median(rounds.map((r) => r.accepted)), e2e: median(rounds.map((r) => r.e2e)) };
  const acceptedRatio = median(rounds.map((r) => r.accepted / r.chain));
  const e2eRatio = median(rounds.map((r) => r.e2e / r.chain));
  console.log(
    `EVM relay, ${N} transactions per round (${perBlock} fit in a block), ${rounds.length} rounds, ${C} concurrent clients, database: ${args.postgres ? 'PostgreSQL' : 'PGlite'}`,
  );
  for (const [i, r] of rounds.entries()) {
    console.log(
      `  round ${i + 1}: direct ${f(r.chain)}/s   accepted ${f(r.accepted)}/s (${(r.accepted / r.chain).toFixed(2)})   e2e ${f(r.e2e)}/s (${(r.e2e / r.chain).toFixed(2)})   blocks: direct ${r.chainBlocks}, relayer ${r.blocks} (one block moves the ratio ${(r.e2e / r.chain / (r.blocks + 1)).toFixed(3)})   CPU a transaction: service ${r.serviceCpuMs.toFixed(2)} ms, ${r.serverCpuMs === null ? '' : `PostgreSQL server ${r.serverCpuMs.toFixed(2)} ms, `}anvil ${r.anvilCpuMs.toFixed(2)} ms (direct ${r.chainAnvilCpuMs.toFixed(2)}), this client ${r.clientCpuMs.toFixed(2)} ms; all ${r.machineCpuMs.toFixed(2)} ms against ${r.budgetCpuMs.toFixed(2)} ms the chain's rate leaves on ${CORES} cores`,
    );
    console.log(
      `           all confirmed ${r.tailS.toFixed(1)} s after the last was mined; the service's chain calls and resubmissions a transfer: ${r.chainWork.map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')}`,
    );
  }
  console.log(`  median: direct to anvil (chain limit) ${f(m.chain)} confirmed/s`);
  console.log(`          send route                    ${f(m.accepted)} accepted/s    ratio ${acceptedRatio.toFixed(2)} of direct`);
  const ratios = rounds.map((r) => r.e2e / r.chain);
  const target = args.postgres ? 0.9 : 0.8;
  console.log(
    `          through the relayer (e2e)     ${f(m.e2e)} confirmed/s   ratio ${e2eRatio.toFixed(2)} of direct, rounds ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)} (target >= ${target})`,
  );
  if (args.json) console.log(JSON.stringify({ bench: 'evm', db: args.postgres ? 'postgres' : 'pglite', count: N, rounds, e2eRatio, acceptedRatio, target }));
} finally {
  await relayer?.stop();
  await anvil.stop();
  await rm(dir, { recursive: true, force: true });
  http.destroy();
}
