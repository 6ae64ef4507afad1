// Many relayers on many chains, in one run: --relayers relayers (each its own key, an anvil dev
// account) spread over --chains anvil processes (each its own chain id, a block every second),
// --sends transfers each, all sent at once through the send route by --concurrency keep-alive
// clients (interleaved: every relayer's first, then every relayer's second, ...). Against it, the
// same transfers from as many accounts on the same chains, signed beforehand and sent straight to
// them (as bench/evm.ts does for one). Rounds alternate the two and each is timed from just after a block
// until the last transfer is mined (direct) or reported confirmed by the service (relayed).
//
// Each chain's block gas limit is set so its share of a round fills --blocks blocks: the chains,
// not this machine's two cores, are the limit, as in production (anvil's default 30M gas would put
// 1,428 transfers a second through each chain, more than the service and three anvils can work on
// two cores; --gas-limit sets it instead).
//
// After each relayed round it checks that every transfer is confirmed, that each relayer's nonces
// are contiguous from its account's nonce before the round, and that no relayer was starved: the
// slowest relayer's last transfer mined (and reported confirmed) within 2 blocks of the median's.
// --json prints the figures as one JSON line last (bench/all.ts reads it). --trace prints, for each
// relayed round, every chain's blocks as they come (transfers in the block, the relayers they are
// from and their caps as multiples of the block's base fee, then the node's pending and queued
// transactions: a queued one waits for a nonce missing before it) and the block in which each
// relayer's last transfer was mined, by chain. --postgres takes the URL of an empty database.
//
//   npx tsx bench/many.ts [--relayers 100] [--chains 3] [--sends 50] [--blocks 20 | --gas-limit N]
//                         [--rounds 2] [--concurrency 64] [--postgres postgres://...] [--json] [--trace]

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { mnemonicToAccount } from 'viem/accounts';
import { ANVIL_DEFAULT_MNEMONIC, type AnvilInstance, startAnvil } from '../src/chains/evm/anvil.js';
import { encryptKeystore } from '../src/signers/keystore.js';
import { auth, blockNumber, cpuMs, jsonClient, nextBlock, postgresCpuMs, RECEIVER, sendRaw, startRelayer, waitProgress } from './chain.js';
import { median, spread } from './stats.js';
import { parseMetrics } from '../test/support/metrics.js';
import { Wire } from './wire.js';

const { values: args } = parseArgs({
  options: {
    relayers: { type: 'string', default: '100' },
    chains: { type: 'string', default: '3' },
    sends: { type: 'string', default: '50' },
    blocks: { type: 'string', default: '20' },
    'gas-limit': { type: 'string' },
    rounds: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '64' },
    postgres: { type: 'string' },
    json: { type: 'boolean', default: false },
    trace: { type: 'boolean', default: false },
  },
});
const R = Number(args.relayers);
const CHAINS = Number(args.chains);
const SENDS = Number(args.sends);
const C = Number(args.concurrency);
const BLOCK_MS = 1000;
/** Blocks the slowest relayer may lag the median one by. */
const STARVED_BLOCKS = 2;

const http = jsonClient(C + 8);
const chainOf = (r: number) => r % CHAINS;
const account = (i: number) => mnemonicToAccount(ANVIL_DEFAULT_MNEMONIC, { addressIndex: i });
/** The relayers' accounts; the direct client sends from as many others, spread over the chains alike (sending from the relayers' own would move their nonces under them). */
const accounts = Array.from({ length: R }, (_, i) => account(i));
const directAccounts = Array.from({ length: R }, (_, i) => account(R + i));
const relayerIds = accounts.map((_, i) => `r${i}`);
const perChain = Math.ceil(R / CHAINS) * SENDS;
const gasLimit = args['gas-limit'] ? Number(args['gas-limit']) : Math.ceil(perChain / Number(args.blocks)) * 21_000;

/** Each chain's relayers' accounts' mined nonces, by relayer index. */
async function minedNonces(chains: AnvilInstance[], of = accounts): Promise<number[]> {
  const nonces = new Array<number>(R);
  await Promise.all(
    chains.map(async (chain, c) => {
      const on = relayerIds.map((_, r) => r).filter((r) => chainOf(r) === c);
      const counts = await http.batch<string>(
        chain.url,
        on.map((r) => ({ method: 'eth_getTransactionCount', params: [of[r].address, 'latest'] })),
      );
      on.forEach((r, i) => (nonces[r] = Number(counts[i])));
    }),
  );
  return nonces;
}
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

async function afterNextBlock(chains: AnvilInstance[]) {
  await Promise.all(chains.map((a) => nextBlock(http, a.url)));
  return Promise.all(chains.map((a) => blockNumber(http, a.url)));
}

// ---- direct: signed beforehand, straight to the chains ---------------------------------------

async function direct(chains: AnvilInstance[], sends: number): Promise<{ rate: number }> {
  const start = await minedNonces(chains, directAccounts);
  await afterNextBlock(chains);
  const signed = await Promise.all(
    chains.map(async (chain, c) => {
      const gasPrice = BigInt(await http.rpc(chain.url, 'eth_gasPrice'));
      const out: Promise<string>[] = [];
      for (let k = 0; k < sends; k++)
        for (let r = c; r < R; r += CHAINS)
          out.push(
            directAccounts[r].signTransaction({
              chainId: chain.chainId,
              type: 'eip1559',
              to: RECEIVER,
              value: 1n,
              gas: 21_000n,
              nonce: start[r] + k,
              // Full blocks raise the base fee by 1/8 each; a cap below what the last block asks leaves its transactions unmined.
              maxFeePerGas: gasPrice * 100n,
              maxPriorityFeePerGas: 1n,
            }),
          );
      return Promise.all(out);
    }),
  );
  http.fresh();
  await afterNextBlock(chains);
  const t0 = performance.now();
  await Promise.all(chains.map((chain, c) => sendRaw(http, chain.url, signed[c])));
  const target = sum(start) + R * sends;
  await waitProgress('direct mined nonces', async () => sum(await minedNonces(chains, directAccounts)), target, 25);
  return { rate: (R * sends) / ((performance.now() - t0) / 1000) };
}

// ---- through the relayer --------------------------------------------------------------------

/** Transactions the service has signed again because the chain had not taken them in time (its metrics). */
async function resubmissions(metricsUrl: string): Promise<number> {
  const all = parseMetrics(await (await fetch(metricsUrl)).text());
  return sum(all.filter((m) => m.name === 'relayer_transaction_resubmissions_total').map((m) => m.value));
}

/** GraphQL queries of the relayers' confirmed counts, a few relayers each (the API bounds the fields of one query). */
const CONFIRMED = Array.from({ length: Math.ceil(R / 10) }, (_, q) => relayerIds.slice(q * 10, q * 10 + 10)).map(
  (ids) =>
    `query { ${ids.map((id) => `${id}: relayerTransactions(relayerId: "${id}", status: confirmed, perPage: 1) { pagination { totalItems } }`).join(' ')} }`,
);

async function confirmedCounts(url: string): Promise<number> {
  const counts = await Promise.all(
    CONFIRMED.map(async (query) => {
      const { body } = await http.post(`${url}/graphql`, { query }, auth);
      if (!body.data) throw new Error(`confirmed counts: ${JSON.stringify(body.errors)}`);
      return sum(Object.values(body.data as Record<string, { pagination: { totalItems: number } }>).map((x) => x.pagination.totalItems));
    }),
  );
  return sum(counts);
}

type Tx = { id: string; status: string; nonce: number; hash: string; confirmed_at: string | null };

async function listTransactions(url: string, relayerId: string): Promise<Tx[]> {
  const all: Tx[] = [];
  for (let page = 1; ; page++) {
    const res = await fetch(`${url}/api/v1/relayers/${relayerId}/transactions?page=${page}&per_page=100`, { headers: auth });
    const { data } = (await res.json()) as { data: Tx[] };
    all.push(...data);
    if (data.length < 100) return all;
  }
}

/** Each chain's newest block, its transfers (their senders and caps) and the node's pool, once a block; the function returned stops it and gives the lines. */
function tracePools(chains: AnvilInstance[], b0: number[]) {
  const lines: string[] = [];
  let stopped = false;
  const run = (async () => {
    let last = -1;
    while (!stopped) {
      const n = await blockNumber(http, chains[0].url);
      if (n !== last) {
        last = n;
        const parts = await Promise.all(
          chains.map(async (chain, c) => {
            const m = c === 0 ? n : await blockNumber(http, chain.url);
            const [block, pool] = await Promise.all([
              http.rpc(chain.url, 'eth_getBlockByNumber', [`0x${m.toString(16)}`, true]),
              http.rpc(chain.url, 'txpool_status'),
            ]);
            const txs = block.transactions as { from: string; maxFeePerGas?: string }[];
            const caps = txs.map((t) => Number(BigInt(t.maxFeePerGas ?? 0)) / Number(BigInt(block.baseFeePerGas ?? 1)));
            const senders = new Set(txs.map((t) => t.from)).size;
            const range = caps.length > 0 ? ` (${senders} senders, caps ${Math.min(...caps).toFixed(2)}-${Math.max(...caps).toFixed(2)}× base)` : '';
            return `${m - b0[c]}: ${txs.length} in${range}, ${Number(pool.pending)} pending, ${Number(pool.queued)} queued`;
          }),
        );
        lines.push(`    ${parts.join('   |   ')}`);
      }
      await new Promise((r) => setTimeout(r, BLOCK_MS / 4));
    }
  })();
  return async () => {
    stopped = true;
    await run;
    return lines;
  };
}

async function relayed(
  service: { url: string; metricsUrl: string; child: { pid?: number } },
  chains: AnvilInstance[],
  sends: number,
  already: number[],
): Promise<{
  rate: number;
  serviceCpuMs: number;
  serverCpuMs: number | null;
  resubmitted: number;
  problems: string[];
  lagBlocks: number;
  lagConfirmedBlocks: number;
}> {
  const start = await minedNonces(chains);
  const resubmitted0 = await resubmissions(service.metricsUrl);
  const { hostname, port } = new URL(service.url);
  const wires = await Promise.all(Array.from({ length: C }, () => Wire.open(hostname, Number(port))));
  const queue = Array.from({ length: sends * R }, (_, i) => relayerIds[i % R]);
  const ids = relayerIds.map(() => new Set<string>());
  const b0 = await afterNextBlock(chains);
  const trace = args.trace ? tracePools(chains, b0) : undefined;
  const t0 = performance.now();
  const cpu0 = cpuMs(service.child.pid);
  const server0 = postgresCpuMs(args.postgres);
  let next = 0;
  let refused = 0;
  await Promise.all(
    wires.map(async (wire) => {
      while (next < queue.length) {
        const i = next++;
        const res = await wire.post(`/api/v1/relayers/${queue[i]}/transactions`, JSON.stringify({ to: RECEIVER, value: i + 1 }), auth);
        if (res.status === 200) ids[i % R].add(JSON.parse(res.body).data.id);
        else refused++;
      }
    }),
  );
  for (const wire of wires) wire.close();
  if (refused) throw new Error(`${refused} sends were refused`);
  // The chains until all are mined (asking the service meanwhile would load what is measured), then the service.
  await waitProgress('mined nonces', async () => sum(await minedNonces(chains)), sum(start) + R * sends, 25);
  const traced = await trace?.();
  const target = sum(already) + R * sends;
  await waitProgress('confirmed', () => confirmedCounts(service.url), target, 25);
  const t1 = performance.now();
  const server1 = postgresCpuMs(args.postgres);
  const serviceCpuMs = (cpuMs(service.child.pid) - cpu0) / (R * sends);

  // Checks (not timed).
  const problems: string[] = [];
  const lastMined: number[] = [];
  const lastConfirmed: number[] = [];
  for (const [r, id] of relayerIds.entries()) {
    const txs = (await listTransactions(service.url, id)).filter((t) => ids[r].has(t.id));
    const unconfirmed = txs.filter((t) => t.status !== 'confirmed').length;
    if (txs.length !== sends || unconfirmed) problems.push(`${id}: ${txs.length} of ${sends} listed, ${unconfirmed} not confirmed`);
    const nonces = txs.map((t) => t.nonce).sort((a, b) => a - b);
    if (nonces.some((n, k) => n !== start[r] + k)) problems.push(`${id}: nonces not contiguous from ${start[r]}: ${nonces.join(',')}`);
    const last = txs.reduce((a, b) => (b.nonce > a.nonce ? b : a));
    const receipt = await http.rpc(chains[chainOf(r)].url, 'eth_getTransactionReceipt', [last.hash]);
    lastMined.push(Number(receipt.blockNumber) - b0[chainOf(r)]);
    lastConfirmed.push(Math.max(...txs.map((t) => Date.parse(t.confirmed_at ?? '')))); // NaN when one is missing: reported above
  }
  if (traced) {
    console.log(`  each chain's blocks from the round's start (block: transfers in it, the pool after it):\n${traced.join('\n')}`);
    for (let c = 0; c < chains.length; c++) {
      const blocks = lastMined.filter((_, r) => chainOf(r) === c).sort((a, b) => a - b);
      console.log(`  chain ${c}: block of each relayer's last transfer: ${blocks.join(' ')}`);
    }
  }
  const lagBlocks = Math.max(...lastMined) - median(lastMined);
  const lagConfirmedBlocks = (Math.max(...lastConfirmed) - median(lastConfirmed)) / BLOCK_MS;
  if (!(lagBlocks <= STARVED_BLOCKS)) problems.push(`slowest relayer's last transfer mined ${lagBlocks} blocks after the median's`);
  if (!(lagConfirmedBlocks <= STARVED_BLOCKS)) problems.push(`slowest relayer's last confirmation ${lagConfirmedBlocks.toFixed(1)} blocks after the median's`);
  return {
    rate: (R * sends) / ((t1 - t0) / 1000),
    serviceCpuMs,
    serverCpuMs: server0 === null || server1 === null ? null : (server1 - server0) / (R * sends),
    resubmitted: (await resubmissions(service.metricsUrl)) - resubmitted0,
    problems,
    lagBlocks,
    lagConfirmedBlocks,
  };
}

// ---- run ------------------------------------------------------------------------------------

const chains = await Promise.all(
  Array.from({ length: CHAINS }, (_, c) => startAnvil({ chainId: 31337 + c, accounts: 2 * R, blockTime: BLOCK_MS / 1000, gasLimit })),
);
const dir = await mkdtemp(path.join(tmpdir(), 'bench-many-'));
let service: Awaited<ReturnType<typeof startRelayer>> | undefined;
try {
  const signers = await Promise.all(
    accounts.map(async (a, i) => {
      const file = path.join(dir, `key-${i}.json`);
      // A low scrypt cost: 100 keys open at start-up; these are anvil's public dev keys anyway.
      await writeFile(file, JSON.stringify(await encryptKeystore(a.getHdKey().privateKey!, 'bench', { n: 1024, address: a.address })));
      return { id: `s${i}`, type: 'local', config: { path: file, passphrase: { type: 'plain', value: 'bench' } } };
    }),
  );
  const config = {
    relayers: relayerIds.map((id, r) => ({ id, name: id, network: `chain-${chainOf(r)}`, network_type: 'evm', signer_id: signers[r].id, policies: {} })),
    signers,
    notifications: [],
    networks: chains.map((chain, c) => ({
      type: 'evm',
      network: `chain-${c}`,
      chain_id: chain.chainId,
      required_confirmations: 1,
      rpc_urls: [chain.url],
      features: ['eip1559'],
      average_blocktime_ms: BLOCK_MS,
    })),
  };
  service = await startRelayer(config, dir, args.postgres);
  // Warm up both paths (JIT, connection pools, caches) before measuring.
  const confirmed = relayerIds.map(() => 0);
  const warm = 5;
  await relayed(service, chains, warm, confirmed);
  confirmed.fill(warm);
  await direct(chains, warm);
  const rounds: { chain: number; relayed: Awaited<ReturnType<typeof relayed>> }[] = [];
  for (let i = 0; i < Number(args.rounds); i++) {
    const { rate } = await direct(chains, SENDS);
    rounds.push({ chain: rate, relayed: await relayed(service, chains, SENDS, confirmed) });
    for (let r = 0; r < R; r++) confirmed[r] += SENDS;
  }
  const ratios = rounds.map((x) => x.relayed.rate / x.chain);
  const ratio = median(ratios);
  const problems = rounds.flatMap((x) => x.relayed.problems);
  const lag = Math.max(...rounds.map((x) => Math.max(x.relayed.lagBlocks, x.relayed.lagConfirmedBlocks)));
  console.log(
    `Many relayers: ${R} relayers on ${CHAINS} anvil chains (${gasLimit / 21_000} transfers a block each), ${SENDS} sends each (${R * SENDS} a round), ${rounds.length} rounds, ${C} clients, database: ${args.postgres ? 'PostgreSQL' : 'PGlite'}`,
  );
  for (const [i, x] of rounds.entries())
    console.log(
      `  round ${i + 1}: direct ${x.chain.toFixed(0)}/s   relayed ${x.relayed.rate.toFixed(0)} confirmed/s (${ratios[i].toFixed(2)})   slowest relayer's last transfer after the median's: mined ${x.relayed.lagBlocks} blocks, confirmed ${x.relayed.lagConfirmedBlocks.toFixed(1)} blocks   CPU a transfer: service ${x.relayed.serviceCpuMs.toFixed(2)} ms${x.relayed.serverCpuMs === null ? '' : `, PostgreSQL server ${x.relayed.serverCpuMs.toFixed(2)} ms`}   signed again: ${x.relayed.resubmitted}`,
    );
  console.log(
    `  relayed / direct: ${ratio.toFixed(2)} (rounds ${spread(ratios)}; target >= 0.90), slowest relayer's lag at most ${lag.toFixed(1)} blocks (target <= ${STARVED_BLOCKS})`,
  );
  console.log(
    problems.length ? `  checks FAILED:\n    ${problems.slice(0, 20).join('\n    ')}` : '  checks: every transfer confirmed, nonces contiguous per relayer',
  );
  if (args.json)
    console.log(
      JSON.stringify({
        bench: 'many',
        db: args.postgres ? 'postgres' : 'pglite',
        relayers: R,
        chains: CHAINS,
        sends: SENDS,
        ratio,
        ratios,
        lag,
        problems,
        rounds,
      }),
    );
  // Alone, failed checks fail the run; bench/all.ts reads them from the JSON line.
  if (problems.length && !args.json) process.exitCode = 1;
} finally {
  await service?.stop();
  await Promise.all(chains.map((a) => a.stop()));
  await rm(dir, { recursive: true, force: true });
  http.destroy();
}
