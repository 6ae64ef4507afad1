// Once per run, before the workers start (integration and faults projects): the compiled service
// the spawning tests run (`node dist/main.js`), rebuilt only when a source is newer than it, and
// the migrated PGlite template the tests copy (support/pglite.ts).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEMPLATE_ENV } from './pglite.js';

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

/**
 * Makes the template (once per migration set and PGlite version, kept in the temporary folder
 * across runs) with the compiled service's own openDatabase, and exports its path to the workers.
 */
function preparePgliteTemplate(): void {
  const migrations = path.join(ROOT, 'prisma/migrations');
  const hash = createHash('sha256');
  hash.update(readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json')));
  for (const name of readdirSync(migrations, { recursive: true, encoding: 'utf8' }).sort()) {
    if (name.endsWith('.sql')) hash.update(name).update(readFileSync(path.join(migrations, name)));
  }
  const template = path.join(tmpdir(), `relayer-test-pglite-${hash.digest('hex').slice(0, 16)}`);
  if (!existsSync(template)) {
    const work = mkdtempSync(`${template}-`);
    const open = `const { openDatabase } = await import(${JSON.stringify(path.join(ROOT, 'dist/db/client.js'))});
      await (await openDatabase({ dataDir: process.argv[1] })).close();`;
    execFileSync(process.execPath, ['--input-type=module', '-e', open, work], { stdio: 'inherit' });
    try {
      renameSync(path.join(work, 'pglite'), template);
    } catch (e) {
      // Another run made it meanwhile.
      if (!existsSync(template)) throw e;
    }
    rmSync(work, { recursive: true, force: true });
  }
  process.env[TEMPLATE_ENV] = template;
}

export function setup(): void {
  const main = path.join(ROOT, 'dist/main.js');
  const built = existsSync(main) ? statSync(main).mtimeMs : 0;
  if (SOURCES.some((s) => newestMtime(path.join(ROOT, s)) > built)) {
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  }
  preparePgliteTemplate();
}
