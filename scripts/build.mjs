// `npm run build`: generated code, then src/ compiled to dist/ (files tsc does not emit copied beside).
// With --if-stale (`npm start`'s prestart) it builds only when dist/ is missing or older than a source.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const stamp = `${root}dist/.built`;
// What the build reads; src/generated is left out as the build itself writes it from the others.
const sources = ['src', 'prisma/schema.prisma', 'schema', 'codegen.ts', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  if (path === `${root}src/generated`) return 0;
  return Math.max(0, ...readdirSync(path).map((name) => newest(`${path}/${name}`)));
}

if (process.argv.includes('--if-stale')) {
  // A production tree (dist/ without src/) has nothing to build from.
  if (!existsSync(`${root}src`)) process.exit(0);
  const built = statSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  if (built >= Math.max(...sources.map((s) => newest(`${root}${s}`)))) process.exit(0);
  process.stderr.write(existsSync(stamp) ? 'dist/ is older than the sources: building\n' : 'dist/ is missing: building\n');
}

rmSync(`${root}dist`, { recursive: true, force: true });
execFileSync(process.execPath, [`${root}scripts/generate.mjs`], { cwd: root, stdio: 'inherit' });
execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
copyFileSync(`${root}src/db/pglite-thread.mjs`, `${root}dist/db/pglite-thread.mjs`);
copyFileSync(`${root}src/core/plugins/worker.mjs`, `${root}dist/core/plugins/worker.mjs`);
writeFileSync(stamp, `${new Date().toISOString()}\n`);
