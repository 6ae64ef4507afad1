import pg from 'pg';

export const POSTGRES_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

let reachable: Promise<boolean> | undefined;

/** Whether the PostgreSQL server of this machine answers (tests against it are skipped otherwise). */
export function postgresReachable(): Promise<boolean> {
  reachable ??= (async () => {
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      await client.query('select 1');
      return true;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  return reachable;
}

/** Set by the global setup: a database with every migration applied, which createTestDatabase copies. */
export const PG_TEMPLATE_ENV = 'RELAYER_TEST_POSTGRES_TEMPLATE';

/**
 * A fresh database for one test service; drop() removes it. In a test run it is a copy of the
 * migrated template (a service opening it has no migration left to apply), unless `empty`.
 */
export async function createTestDatabase(opts: { empty?: boolean } = {}): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `relayer_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  const template = opts.empty ? undefined : process.env[PG_TEMPLATE_ENV];
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ''}`);
  await admin.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** The database kinds to run a suite against: always PGlite, PostgreSQL when reachable. */
export async function databaseKinds(): Promise<('pglite' | 'postgres')[]> {
  return (await postgresReachable()) ? ['pglite', 'postgres'] : ['pglite'];
}
