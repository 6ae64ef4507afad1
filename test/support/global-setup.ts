// Once per run, before the workers start (integration and faults projects): the compiled service
// the spawning tests run (`node dist/main.js`), rebuilt only when a source is newer than it, and
// migrated databases the tests copy instead of migrating their own: a PGlite data directory
// (support/pglite.ts) and, when the server answers, a PostgreSQL template (support/postgres.ts);
// and Debian's SoftHSM when it is missing (support/softhsm.ts).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { TEMPLATE_ENV } from './pglite.js';
import { ensureSoftHsm } from './softhsm.js';
import { PG_TEMPLATE_ENV, POSTGRES_ADMIN_URL, postgresReachable } from './postgres.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** What `npm run build` reads: a change to any of them makes dist/ stale. */
const SOURCES = ['src', 'prisma', 'schema', 'codegen.ts', 'tsconfig.json', 'scripts/build.mjs', 'scripts/generate.mjs'];

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

/** Names a migrated database by what makes it: the migrations and the PGlite version. */
function migrationsHash(): string {
  const migrations = path.join(ROOT, 'prisma/migrations');
  const hash = createHash('sha256');
  hash.update(readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json')));
  for (const name of readdirSync(migrations, { recursive: true, encoding: 'utf8' }).sort()) {
    if (name.endsWith('.sql')) hash.update(name).update(readFileSync(path.join(migrations, name)));
  }
  return hash.digest('hex').slice(0, 16);
}

/** Opens (so migrates) a database with the service's openDatabase, in a child process. */
function migrate(target: { dataDir: string } | { databaseUrl: string }): void {
  const open = `const { openDatabase } = await import(${JSON.stringify(path.join(ROOT, 'src/db/client.ts'))});
    await (await openDatabase(JSON.parse(process.argv[1]))).close();`;
  execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', open, JSON.stringify(target)], { cwd: ROOT, stdio: 'inherit' });
}

/** The PGlite template, kept in the temporary folder across runs. */
function preparePglite(hash: string): void {
  const template = path.join(tmpdir(), `relayer-test-pglite-${hash}`);
  if (!existsSync(template)) {
    const work = mkdtempSync(`${template}-`);
    migrate({ dataDir: work });
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

/** The PostgreSQL template database, kept on the server across runs (and shared by runs of the same migrations). */
async function preparePostgres(hash: string): Promise<void> {
  if (!(await postgresReachable())) return;
  const template = `relayer_test_template_${hash}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    const exists = async (name: string) => (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1;
    if (!(await exists(template))) {
      const work = `${template}_${process.pid}`;
      await admin.query(`CREATE DATABASE ${work}`);
      const url = new URL(POSTGRES_ADMIN_URL);
      url.pathname = `/${work}`;
      migrate({ databaseUrl: url.toString() });
      // Another run may have made it meanwhile.
      await admin.query(`ALTER DATABASE ${work} RENAME TO ${template}`).catch(async (e) => {
        await admin.query(`DROP DATABASE IF EXISTS ${work}`);
        if (!(await exists(template))) throw e;
      });
    }
  } finally {
    await admin.end();
  }
  process.env[PG_TEMPLATE_ENV] = template;
}

export async function setup(): Promise<void> {
  // Once, before the workers: several test files use a SoftHSM token, and apt-get runs one at a time.
  ensureSoftHsm();
  const main = path.join(ROOT, 'dist/main.js');
  const built = existsSync(main) ? statSync(main).mtimeMs : 0;
  if (SOURCES.some((s) => newestMtime(path.join(ROOT, s)) > built)) {
    execFileSync(process.execPath, [path.join(ROOT, 'scripts/build.mjs')], { cwd: ROOT, stdio: 'inherit' });
  }
  const hash = migrationsHash();
  preparePglite(hash);
  await preparePostgres(hash);
}
