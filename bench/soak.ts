// Exactly-once soak: K rounds of concurrent sends to an EVM relayer while anvil stops mining at
// random, a chaos proxy drops, delays, duplicates and loses RPC answers, and the service is killed
// with SIGKILL at a random moment each round; then every accepted transaction must be confirmed
// exactly once, and the chain must agree with the database (see test/support/soak.ts).
//
//   npx tsx bench/soak.ts [--rounds 50] [--seed N] [--postgres postgres://user@host:5432/postgres]
//                         [--sends 30] [--concurrency 10] [--gas-limit N] [--logs <dir>]
//   --gas-limit: the chain's block gas limit; 92400 (4 transfers a block) keeps the send window
//   holding transactions through the faults.
//
// Exits 1 when a transaction was lost or doubled, or the chain disagrees with the database; the
// service output of every round is then written under --logs (default a temp dir), with the lines
// that name a lost or doubled transaction printed.
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runSoak } from '../test/support/soak.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '50' },
    seed: { type: 'string' },
    postgres: { type: 'string' },
    sends: { type: 'string', default: '30' },
    concurrency: { type: 'string', default: '10' },
    'gas-limit': { type: 'string' },
    logs: { type: 'string' },
  },
});
const seed = args.seed !== undefined ? Number(args.seed) >>> 0 : Math.floor(Math.random() * 2 ** 32);
const rounds = Number(args.rounds);
const gasLimit = args['gas-limit'] === undefined ? undefined : Number(args['gas-limit']);
console.log(
  `soak: seed ${seed}, ${rounds} rounds, ${args.sends} sends a round (${args.concurrency} at once), ${args.postgres ? 'PostgreSQL' : 'PGlite'}${gasLimit ? `, blocks of ${gasLimit} gas` : ''}`,
);
console.log(
  `replay: npx tsx bench/soak.ts --rounds ${rounds} --seed ${seed}${args.postgres ? ` --postgres ${args.postgres}` : ''} --sends ${args.sends} --concurrency ${args.concurrency}${gasLimit ? ` --gas-limit ${gasLimit}` : ''}`,
);

const r = await runSoak({
  rounds,
  seed,
  postgres: args.postgres,
  sends: Number(args.sends),
  concurrency: Number(args.concurrency),
  gasLimit,
  log: (line) => console.log(`  ${line}`),
});

const fmt = (o: Record<string, number>) =>
  Object.entries(o)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
console.log(`\nseed          ${r.seed}`);
console.log(`database      ${args.postgres ? 'PostgreSQL' : 'PGlite'}`);
console.log(`rounds        ${r.rounds}`);
console.log(`kills         ${r.kills}`);
console.log(`accepted      ${r.accepted} (answered 200)`);
console.log(`transactions  ${r.transactions} (rows)`);
console.log(`lost          ${r.lost}`);
console.log(`doubled       ${r.doubled}`);
console.log(`mining stops  ${r.miningStops}`);
console.log(`rpc faults    ${fmt(r.faults)}`);
console.log(`broadcasts    ${fmt(r.broadcastFaults)}`);
console.log(`duration      ${(r.durationMs / 1000).toFixed(1)} s (final settle ${(r.settleMs / 1000).toFixed(1)} s)`);
for (const p of r.problems.slice(0, 50)) console.log(`problem: ${p}`);
if (r.problems.length > 50) console.log(`... ${r.problems.length - 50} more problems`);

const failed = r.lost > 0 || r.doubled > 0 || r.problems.length > 0;
if (failed) {
  const dir = args.logs ?? path.join(tmpdir(), `relayer-soak-${seed}`);
  await mkdir(dir, { recursive: true });
  await Promise.all(r.logs.map((text, i) => writeFile(path.join(dir, i < r.rounds ? `round-${i + 1}.log` : 'final.log'), text)));
  console.log(`\nservice output of every round: ${dir}`);
  for (const id of r.badIds.slice(0, 10)) {
    r.logs.forEach((text, i) => {
      for (const line of text
        .split('\n')
        .filter((l) => l.includes(id))
        .slice(0, 20))
        console.log(`${i < r.rounds ? `round ${i + 1}` : 'final'}: ${line}`);
    });
  }
}
process.exit(failed ? 1 : 0);
