import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/client.js';
import { createTestDatabase, POSTGRES_ADMIN_URL, postgresReachable } from '../support/postgres.js';

// The server ending idle connections (a restart, an operator's pg_terminate_backend) must not be an
// uncaught exception in the service: the pool reports it and opens new connections.
describe.runIf(await postgresReachable())('the PostgreSQL pool', () => {
  it('survives the server ending its idle connections and answers again', async () => {
    const server = await createTestDatabase();
    const failures: string[] = [];
    const db = await openDatabase({ databaseUrl: server.url, onIdleError: (err) => failures.push(err.message) });
    try {
      await Promise.all([1, 2, 3].map(() => db.query('select pg_sleep(0.05)')));
      const name = new URL(server.url).pathname.slice(1);
      const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await admin.connect();
      const ended = await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [name]);
      await admin.end();
      const count = ended.rows.filter((r) => r.pg_terminate_backend).length;
      expect(count).toBeGreaterThan(0);
      // Every ended connection reported (on a loaded machine they come one by one), so none is handed out dead.
      for (let i = 0; i < 100 && failures.length < count; i++) await new Promise((r) => setTimeout(r, 50));
      expect(failures.length).toBe(count);
      expect(failures[0]).toMatch(/terminating connection/);
      expect(await db.query<{ one: number }>('select 1 as one')).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
      await server.drop();
    }
  });
});
