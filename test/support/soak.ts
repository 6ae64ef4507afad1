// The exactly-once soak: rounds of concurrent sends to an EVM relayer (the real service as its own
// process) while anvil stops mining for random stretches, a chaos proxy between the service and
// anvil drops, delays, duplicates and loses answers, and the process is killed with SIGKILL at a
// random moment each round. At the end (mining on, proxy clean, service restarted) every accepted
// transaction must be confirmed exactly once, and the chain must agree with the database.
// Used by bench/soak.ts (the long run) and test/faults/soak.test.ts (a short one).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startAnvil, type AnvilInstance } from '../../src/chains/evm/anvil.js';
import { seededRandom, startChaosProxy, type ChaosProxy, type Fault, type FaultMix } from './chaos-proxy.js';
import { allTransactions, startInstance } from './instance.js';
import { DEV_ADDRESS, evmConfig } from './service.js';

export interface SoakOptions {
  rounds: number;
  seed: number;
  /** A PostgreSQL server URL: a fresh database is made on it (and dropped after); else PGlite. */
  postgres?: string;
  /** Sends per round, and how many are in flight at once. */
  sends?: number;
  concurrency?: number;
  /** The chain's block gas limit (default anvil's): small blocks keep the EVM send window holding transactions. */
  gasLimit?: number;
  mix?: FaultMix;
  /** How long the final instance may take to bring every transaction to a final state. */
  settleMs?: number;
  log?: (line: string) => void;
  /** Runs after the final settle and before the checks (the checks' own test uses it to break the chain on purpose). */
  beforeCheck?: (chain: { url: string; receiver: string; rows: { id: string; value: string; status: string }[] }) => Promise<void>;
}

export interface SoakResult {
  seed: number;
  rounds: number;
  kills: number;
  /** Sends the service answered 200 (the client knows the id). */
  accepted: number;
  /** Rows in the database (accepted ones plus any whose answer the kill swallowed). */
  transactions: number;
  /** Rows (or accepted ids) not confirmed, or confirmed without their payload on chain. */
  lost: number;
  /** Payloads mined more than once, or relayer transfers on chain that no row accounts for. */
  doubled: number;
  /** Every other disagreement between chain and database (nonces, balance, hashes), in words. */
  problems: string[];
  faults: Record<Fault, number>;
  broadcastFaults: Record<Fault, number>;
  miningStops: number;
  durationMs: number;
  settleMs: number;
  /** Service output of each round (index 0 = round 1; the last is the final instance). */
  logs: string[];
  /** Round in which each row's payload was sent (by value). */
  roundOf: Map<string, number>;
  /** Ids of the lost and doubled rows, for reading the logs. */
  badIds: string[];
}

const SEND_PATH = '/api/v1/relayers/evm-relayer/transactions';
const FINAL = ['confirmed', 'failed', 'expired', 'canceled'];
export const DEFAULT_MIX: FaultMix = { drop: 0.05, delay: 0.15, duplicate: 0.1, lose: 0.08, hang: 0.005, garbage: 0.03 };

async function nodeRpc<T = any>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(30_000),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

async function nodeBatch(url: string, calls: { method: string; params: unknown[] }[]): Promise<any[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((c, i) => ({ jsonrpc: '2.0', id: i, ...c }))),
    signal: AbortSignal.timeout(60_000),
  });
  const answers = (await res.json()) as { id: number; result?: unknown; error?: { message: string } }[];
  return calls.map((_, i) => {
    const a = answers.find((x) => x.id === i);
    if (!a || a.error) throw new Error(`batch call ${i}: ${a?.error?.message ?? 'no answer'}`);
    return a.result;
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const log = opts.log ?? (() => {});
  const random = seededRandom(opts.seed);
  // The proxy draws from its own stream, so the plan of each round does not depend on request timing.
  const proxyRandom = seededRandom(opts.seed ^ 0x5eed5eed);
  const sends = opts.sends ?? 30;
  const concurrency = opts.concurrency ?? 10;
  const mix = opts.mix ?? DEFAULT_MIX;
  // A recipient no one else pays, so its balance is exactly what the relayer sent.
  const receiver = `0x5eed${(opts.seed >>> 0).toString(16).padStart(8, '0')}${'0'.repeat(27)}1`;
  const cleanup: (() => Promise<unknown>)[] = [];
  const started = Date.now();
  const logs: string[] = [];
  const roundOf = new Map<string, number>();
  let kills = 0;
  let miningStops = 0;
  let anvil: AnvilInstance;
  let proxy: ChaosProxy;
  try {
    anvil = await startAnvil({ blockTime: 1, gasLimit: opts.gasLimit });
    cleanup.push(() => anvil.stop());
    proxy = await startChaosProxy(anvil.url, proxyRandom);
    cleanup.push(() => proxy.close());
    const dir = await mkdtemp(path.join(tmpdir(), 'relayer-soak-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    let databaseUrl: string | undefined;
    if (opts.postgres) {
      const name = `relayer_soak_${process.pid}_${(opts.seed >>> 0).toString(36)}`;
      const admin = new pg.Client({ connectionString: opts.postgres });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${name}`);
      await admin.end();
      const url = new URL(opts.postgres);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
      cleanup.push(async () => {
        const c = new pg.Client({ connectionString: opts.postgres });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        await c.end();
      });
    }
    await writeFile(path.join(dir, 'config.json'), JSON.stringify(evmConfig(proxy.url)));
    const env = {
      CONFIG_PATH: path.join(dir, 'config.json'),
      DATA_DIR: dir,
      INSTANCE_ID: 'soak',
      LOG_LEVEL: process.env.SOAK_LOG_LEVEL ?? 'info',
      RATE_LIMIT_REQUESTS_PER_SECOND: '100000',
      RATE_LIMIT_BURST_SIZE: '100000',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    const startNonce = Number(await nodeRpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));
    const startBlock = Number(await nodeRpc(anvil.url, 'eth_blockNumber'));

    const accepted = new Map<string, string>(); // id -> value
    let value = 1_000_000;
    const miningOn = async (automine: boolean) => {
      if (automine) await nodeRpc(anvil.url, 'evm_setAutomine', [true]);
      else {
        await nodeRpc(anvil.url, 'evm_setAutomine', [false]);
        await nodeRpc(anvil.url, 'evm_setIntervalMining', [1]);
      }
    };
    const miningOff = async () => {
      miningStops++;
      await nodeRpc(anvil.url, 'evm_setAutomine', [false]);
      await nodeRpc(anvil.url, 'evm_setIntervalMining', [0]);
    };

    // A stop of mining that the kill interrupted may last through the restart.
    let miningIsOff = false;
    for (let round = 1; round <= opts.rounds; round++) {
      // The plan of this round, drawn up front from the seed (anvil then mines a block a second, or on
      // every transaction when `automine`).
      const killAfterMs = Math.floor(random() * 6_000);
      // Sends are spread over the first seconds of the round, so the kill finds some in flight.
      const pauses = Array.from({ length: sends }, () => Math.floor(random() * 400));
      // Some stretches outlast the resubmission delay (3 blocks), so fee bumps meet lost answers too.
      const stretches = Array.from({ length: 1 + Math.floor(random() * 3) }, () => ({
        at: Math.floor(random() * 5_000),
        forMs: 300 + Math.floor(random() * 8_000),
        automine: random() < 0.3,
      }));
      const carryOver = random() < 0.25;
      const carried = { ms: 500 + Math.floor(random() * 4_000), automine: random() < 0.3 };
      proxy.setMode({ kind: 'chaos', mix, maxDelayMs: 1_500 });
      const instance = await startInstance(env);
      cleanup.push(() => instance.kill());
      const roundStart = Date.now();
      let stop = false;
      // Mining: off and on again in the planned stretches (bounded by the stretch count).
      const mining = (async () => {
        if (miningIsOff) {
          await sleep(carried.ms);
          await miningOn(carried.automine);
          miningIsOff = false;
        }
        for (const s of stretches.sort((a, b) => a.at - b.at)) {
          const wait = s.at - (Date.now() - roundStart);
          if (wait > 0) await sleep(wait);
          if (stop) return;
          await miningOff();
          miningIsOff = true;
          const end = Date.now() + s.forMs;
          while (Date.now() < end) {
            if (stop && carryOver) return; // still off when the next instance starts
            await sleep(Math.min(100, end - Date.now()));
          }
          await miningOn(s.automine);
          miningIsOff = false;
        }
      })();
      let next = 0;
      const clients = Promise.all(
        Array.from({ length: concurrency }, async () => {
          for (let i = next++; i < sends && !stop; i = next++) {
            await sleep(pauses[i]);
            if (stop) break;
            const v = String(value++);
            roundOf.set(v, round);
            try {
              const res = await instance.request('POST', SEND_PATH, { to: receiver, value: Number(v), speed: 'fast' });
              const text = await res.text();
              if (res.status === 200) accepted.set(JSON.parse(text).data.id, v);
            } catch {
              // The process died before answering: the client cannot know, so it is not counted as accepted.
            }
          }
        }),
      );
      await sleep(killAfterMs);
      await instance.kill();
      kills++;
      stop = true;
      await Promise.all([clients, mining]);
      logs.push(instance.output());
      log(`round ${round}: killed after ${killAfterMs} ms; ${accepted.size} accepted so far`);
    }

    // Final: everything healthy, one instance brings every row to a final state.
    proxy.setMode({ kind: 'clean' });
    await nodeRpc(anvil.url, 'evm_setAutomine', [false]);
    await nodeRpc(anvil.url, 'evm_setIntervalMining', [1]);
    const final = await startInstance(env);
    cleanup.push(() => final.stop());
    const settleStart = Date.now();
    const settleMs = opts.settleMs ?? 300_000;
    let rows: any[] = [];
    for (;;) {
      rows = await allTransactions(final);
      const open = rows.filter((r) => !FINAL.includes(r.status));
      if (open.length === 0) break;
      if (Date.now() - settleStart > settleMs) {
        log(`not final after ${settleMs} ms: ${JSON.stringify(open.slice(0, 5))}`);
        break;
      }
      await sleep(1_000);
    }
    const settled = Date.now() - settleStart;
    await opts.beforeCheck?.({ url: anvil.url, receiver, rows });
    // Let the last block land (interval mining) before reading the chain.
    await sleep(1_500);
    logs.push(final.output());

    // The chain: every transfer from the relayer's account since the start, by payload (value).
    const problems: string[] = [];
    const head = Number(await nodeRpc(anvil.url, 'eth_blockNumber'));
    const onChain = new Map<string, { count: number; hashes: string[] }>();
    let relayerTxs = 0;
    for (let from = startBlock; from <= head; from += 50) {
      const numbers = Array.from({ length: Math.min(50, head - from + 1) }, (_, i) => from + i);
      const blocks = await nodeBatch(
        anvil.url,
        numbers.map((n) => ({ method: 'eth_getBlockByNumber', params: [`0x${n.toString(16)}`, true] })),
      );
      for (const block of blocks) {
        for (const t of block.transactions) {
          if (t.from.toLowerCase() !== DEV_ADDRESS.toLowerCase()) continue;
          relayerTxs++;
          if (t.to?.toLowerCase() !== receiver.toLowerCase()) continue;
          const v = BigInt(t.value).toString();
          const seen = onChain.get(v) ?? { count: 0, hashes: [] };
          seen.count++;
          seen.hashes.push(t.hash);
          onChain.set(v, seen);
        }
      }
    }

    const badIds = new Set<string>();
    let lost = 0;
    let doubled = 0;
    const byId = new Map(rows.map((r) => [r.id, r]));
    const byValue = new Map<string, any[]>();
    for (const r of rows) byValue.set(r.value, [...(byValue.get(r.value) ?? []), r]);
    for (const [id, v] of accepted) {
      const row = byId.get(id);
      if (!row) {
        lost++;
        problems.push(`accepted ${id} (value ${v}, round ${roundOf.get(v)}) is not in the database`);
        badIds.add(id);
      }
    }
    for (const r of rows) {
      const seen = onChain.get(r.value)?.count ?? 0;
      if (r.status !== 'confirmed' || seen === 0) {
        lost++;
        badIds.add(r.id);
        problems.push(
          `lost: ${r.id} (value ${r.value}, round ${roundOf.get(r.value)}, nonce ${r.nonce}) is ${r.status}${r.statusReason ? ` (${r.statusReason})` : ''}, mined ${seen} times`,
        );
      }
      if (seen > 1) {
        doubled++;
        badIds.add(r.id);
        problems.push(`doubled: ${r.id} (value ${r.value}, round ${roundOf.get(r.value)}) mined ${seen} times: ${onChain.get(r.value)!.hashes.join(', ')}`);
      }
      if ((byValue.get(r.value)?.length ?? 0) > 1) problems.push(`two rows carry value ${r.value}`);
    }
    for (const [v, seen] of onChain) {
      if (!byValue.has(v)) {
        doubled += seen.count;
        problems.push(`on chain without a row: value ${v} (round ${roundOf.get(v)}) mined ${seen.count} times: ${seen.hashes.join(', ')}`);
      }
    }
    // Nonces: unique and contiguous from the start, and the account moved by exactly the number of rows.
    const nonces = rows.map((r) => r.nonce).sort((a, b) => a - b);
    const gaps = nonces.filter((n, i) => n !== startNonce + i);
    if (gaps.length > 0) problems.push(`nonces not contiguous from ${startNonce}: first mismatch ${gaps[0]} (${rows.length} rows)`);
    const chainNonce = Number(await nodeRpc(anvil.url, 'eth_getTransactionCount', [DEV_ADDRESS, 'latest']));
    if (chainNonce !== startNonce + rows.length) problems.push(`account nonce ${chainNonce}, expected ${startNonce + rows.length}`);
    if (relayerTxs !== rows.length) problems.push(`${relayerTxs} transactions from the relayer on chain for ${rows.length} rows`);
    // Balance: exactly the confirmed payloads.
    const balance = BigInt(await nodeRpc(anvil.url, 'eth_getBalance', [receiver, 'latest']));
    const expected = rows.filter((r) => r.status === 'confirmed').reduce((sum, r) => sum + BigInt(r.value), 0n);
    if (balance !== expected) problems.push(`recipient balance ${balance}, expected ${expected}`);
    // Each confirmed row's hash is mined at its nonce.
    const confirmed = rows.filter((r) => r.status === 'confirmed' && r.hash);
    for (let i = 0; i < confirmed.length; i += 100) {
      const part = confirmed.slice(i, i + 100);
      const txs = await nodeBatch(
        anvil.url,
        part.map((r) => ({ method: 'eth_getTransactionByHash', params: [r.hash] })),
      );
      part.forEach((r, j) => {
        if (!txs[j]) problems.push(`${r.id}: its hash ${r.hash} is not on chain`);
        else if (Number(txs[j].nonce) !== r.nonce) problems.push(`${r.id}: mined at nonce ${Number(txs[j].nonce)}, row says ${r.nonce}`);
        else if (BigInt(txs[j].value).toString() !== r.value) problems.push(`${r.id}: its hash carries value ${BigInt(txs[j].value)}, row says ${r.value}`);
      });
    }
    return {
      seed: opts.seed,
      rounds: opts.rounds,
      kills,
      accepted: accepted.size,
      transactions: rows.length,
      lost,
      doubled,
      problems,
      faults: { ...proxy.counts },
      broadcastFaults: { ...proxy.broadcasts },
      miningStops,
      durationMs: Date.now() - started,
      settleMs: settled,
      logs,
      roundOf,
      badIds: [...badIds],
    };
  } finally {
    while (cleanup.length) await cleanup.pop()!().catch(() => {});
  }
}
