import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Set by the global setup: a PGlite data directory with every migration applied. */
const TEMPLATE_ENV = 'RELAYER_TEST_PGLITE_TEMPLATE';

/**
 * Gives DATA_DIR `dir` a copy of the migrated PGlite template, so the service opens it instead of
 * creating and migrating a database (seconds on this machine). Does nothing outside a test run
 * (no template) or when `dir` already has a database.
 */
export async function seedPglite(dir: string): Promise<void> {
  const template = process.env[TEMPLATE_ENV];
  if (!template || existsSync(path.join(dir, 'pglite'))) return;
  await cp(template, path.join(dir, 'pglite'), { recursive: true });
}

/**
 * Makes the template (once per migration set and PGlite version, kept in the temporary folder
 * across runs) with the compiled service's own openDatabase, and exports its path to the workers.
 */
export function preparePgliteTemplate(root: string): void {
  const migrations = path.join(root, 'prisma/migrations');
  const hash = createHash('sha256');
  hash.update(readFileSync(path.join(root, 'node_modules/@electric-sql/pglite/package.json')));
  for (const name of readdirSync(migrations, { recursive: true, encoding: 'utf8' }).sort()) {
    const file = path.join(migrations, name);
    if (name.endsWith('.sql')) hash.update(name).update(readFileSync(file));
  }
  const template = path.join(tmpdir(), `relayer-test-pglite-${hash.digest('hex').slice(0, 16)}`);
  if (!existsSync(template)) {
    const work = mkdtempSync(`${template}-`);
    const open = `const { openDatabase } = await import(${JSON.stringify(path.join(root, 'dist/db/client.js'))});
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
