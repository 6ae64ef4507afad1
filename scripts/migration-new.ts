// Writes prisma/migrations/<timestamp>_<name>/migration.sql with the SQL that brings the migration
// history up to prisma/schema.prisma, using the in-process schema engine against a throwaway PGlite.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { noFilter, openSchemaEngine, prismaDir, readMigrations } from '../src/db/schema-engine.js';

const name = (process.argv[2] ?? '').replace(/[^a-z0-9_]/gi, '_');
if (!name) {
  console.error('usage: npm run migration:new -- <name>');
  process.exit(2);
}
const engine = await openSchemaEngine(new PrismaPGlite(new PGlite()));
const migrationsList = await readMigrations();
const { stdout } = await engine.diff({
  from: migrationsList.migrationDirectories.length ? { tag: 'migrations', ...migrationsList } : { tag: 'empty' },
  to: {
    tag: 'schemaDatamodel',
    files: [{ path: path.join(prismaDir, 'schema.prisma'), content: (await import('node:fs')).readFileSync(path.join(prismaDir, 'schema.prisma'), 'utf8') }],
  },
  script: true,
  exitCode: null,
  filters: noFilter,
});
if (!stdout || /^-- This is an empty migration/.test(stdout.trim())) {
  console.log('schema and migrations agree: nothing to write');
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const dir = path.join(prismaDir, 'migrations', `${stamp}_${name}`);
await mkdir(dir, { recursive: true });
await writeFile(path.join(dir, 'migration.sql'), stdout);
await writeFile(path.join(prismaDir, 'migrations', 'migration_lock.toml'), 'provider = "postgresql"\n');
console.log(`wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
