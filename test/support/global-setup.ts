// Once per run, before the workers start (integration and faults projects): the compiled service
// the spawning tests run (`node dist/main.js`), rebuilt only when a source is newer than it, and
// the migrated PGlite template the tests copy (support/pglite.ts).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { preparePgliteTemplate } from './pglite.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** What `npm run build` reads: a change to any of them makes dist/ stale. */
const SOURCES = ['src', 'prisma', 'schema', 'codegen.ts', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs', 'scripts/generate.mjs'];

function newestMtime(entry: string): number {
  const stat = statSync(entry, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = 0;
  for (const name of readdirSync(entry, { recursive: true, encoding: 'utf8' })) {
    const file = path.join(entry, name);
    // The build regenerates src/generated itself.
    if (!file.includes(`${path.sep}generated${path.sep}`)) newest = Math.max(newest, statSync(file).mtimeMs);
  }
  return newest;
}

export function setup(): void {
  const main = path.join(ROOT, 'dist/main.js');
  const built = existsSync(main) ? statSync(main).mtimeMs : 0;
  if (SOURCES.some((s) => newestMtime(path.join(ROOT, s)) > built)) {
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  }
  preparePgliteTemplate(ROOT);
}
