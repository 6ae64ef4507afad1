import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Database } from '../../src/db/client.js';

/** Set by the global setup: a PGlite data directory with every migration applied. */
export const TEMPLATE_ENV = 'RELAYER_TEST_PGLITE_TEMPLATE';

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

/** A migrated PGlite database of its own: a copy of the template (removed on close), else in memory. */
export async function openTestPglite(): Promise<Database> {
  const { openDatabase } = await import('../../src/db/client.js');
  if (!process.env[TEMPLATE_ENV]) return openDatabase({ inMemory: true });
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-db-'));
  await seedPglite(dir);
  const db = await openDatabase({ dataDir: dir });
  return {
    ...db,
    async close() {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A migrated database of `kind` of its own: PGlite as openTestPglite, or a new database on the
 * PostgreSQL server; `drop` removes the latter once the database is closed.
 */
export async function openTestDatabase(kind: 'pglite' | 'postgres'): Promise<{ db: Database; drop?: () => Promise<void> }> {
  if (kind === 'pglite') return { db: await openTestPglite() };
  const [{ openDatabase }, { createTestDatabase }] = await Promise.all([import('../../src/db/client.js'), import('./postgres.js')]);
  const pg = await createTestDatabase();
  return { db: await openDatabase({ databaseUrl: pg.url }), drop: pg.drop };
}
