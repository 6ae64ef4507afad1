import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { PrismaClient } from '../generated/prisma/client.js';
import { applyMigrations } from './schema-engine.js';

export type Db = PrismaClient;
export type DbKind = 'pglite' | 'postgres';

export interface Database {
  prisma: PrismaClient;
  kind: DbKind;
  close(): Promise<void>;
}

/**
 * PostgreSQL when a URL is given, else PGlite (PostgreSQL in WebAssembly) under dataDir.
 * Migrations from prisma/migrations are applied before the client is handed out.
 */
export async function openDatabase(opts: { databaseUrl?: string; dataDir?: string; inMemory?: boolean }): Promise<Database> {
  if (opts.databaseUrl) {
    const factory = new PrismaPg({ connectionString: opts.databaseUrl, max: 10 });
    await applyMigrations(factory);
    const prisma = new PrismaClient({ adapter: factory });
    return { prisma, kind: 'postgres', close: () => prisma.$disconnect() };
  }
  let pglite: PGlite;
  if (opts.inMemory) {
    pglite = new PGlite();
  } else {
    const dir = path.join(opts.dataDir ?? './data', 'pglite');
    await mkdir(dir, { recursive: true });
    pglite = new PGlite(dir);
  }
  const factory = new PrismaPGlite(pglite);
  await applyMigrations(factory);
  const prisma = new PrismaClient({ adapter: factory });
  return {
    prisma,
    kind: 'pglite',
    close: async () => {
      await prisma.$disconnect();
      if (!pglite.closed) await pglite.close();
    },
  };
}
