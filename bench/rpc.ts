// The CPU one JSON-RPC call costs the service's process, by transport: fetch (undici, what the
// chain clients used before) against lib/post.ts (node:http with kept-alive connections, what they
// use now). Sequential calls of eth_getTransactionCount to a local anvil, the transports alternated
// in rounds after a warm-up, CPU from process.cpuUsage (user + system, every thread of this process).
//
//   npx tsx bench/rpc.ts [--calls 2000] [--rounds 3]

import { parseArgs } from 'node:util';
import { startAnvil } from '../src/chains/evm/anvil.js';
import { postJson } from '../src/lib/post.js';

const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '2000' }, rounds: { type: 'string', default: '3' } } });
const anvil = await startAnvil({ accounts: 1, blockTime: 1 });
const url = new URL(anvil.url);
const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getTransactionCount', params: ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', 'pending'] });
const transports = {
  fetch: async () => (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) })).text(),
  'node:http': async () => (await postJson(url, body, 10_000)).text,
};
try {
  const n = Number(args.calls);
  for (const call of Object.values(transports)) for (let i = 0; i < 200; i++) await call(); // JIT and connections
  for (let round = 1; round <= Number(args.rounds); round++) {
    const line: string[] = [];
    for (const [name, call] of Object.entries(transports)) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        if (!(await call()).includes('"result"')) throw new Error(`${name}: no result`);
      }
      const cpu = process.cpuUsage(cpu0);
      line.push(`${name} ${((cpu.user + cpu.system) / n).toFixed(0)} µs CPU, ${(((performance.now() - t0) * 1000) / n).toFixed(0)} µs wall`);
    }
    console.log(`round ${round}, a call: ${line.join('; ')}`);
  }
} finally {
  await anvil.stop();
}
