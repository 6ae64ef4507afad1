// Rewrites test/support/durations.json (the order of test/support/sequencer.ts) from vitest JSON
// reports: `npx tsx test/support/durations.ts run.json [more.json...]`. Files under 5 s are left out.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
type Report = { testResults: { name: string; startTime: number; endTime: number }[] };
const reports = (process.argv.length > 2 ? process.argv.slice(2) : ['run.json']).map((f) => JSON.parse(readFileSync(f, 'utf8')) as Report);
const seconds = reports
  .flatMap((r) => r.testResults)
  .map((f) => [relative(ROOT, f.name).replaceAll('\\', '/'), Math.round((f.endTime - f.startTime) / 1000)] as const)
  .filter(([, s]) => s >= 5)
  .sort((a, b) => b[1] - a[1]);
writeFileSync(new URL('./durations.json', import.meta.url), `${JSON.stringify(Object.fromEntries(seconds), null, 2)}\n`);
console.log(`${seconds.length} files`);
