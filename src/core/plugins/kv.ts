import type { Db } from '../../db/client.js';

// Plugins' key-value store and locks in the service's database (plugin_kv, plugin_locks), one
// namespace per plugin. Expiry is judged by the database's clock, so instances agree on it.

const KEY = /^[A-Za-z0-9:_-]{1,512}$/;
/** The largest value stored, as JSON text. */
export const MAX_VALUE_BYTES = 1 << 20;
const SWEEP_ODDS = 0.01;
/** The most keys listKeys answers. */
export const MAX_LIST = 10_000;

export const keyProblem = (key: unknown): string | undefined =>
  typeof key === 'string' && KEY.test(key) ? undefined : 'invalid key: 1 to 512 of A-Z a-z 0-9 : _ -';

/** A glob (`*` any run, `?` one character, `\` escapes) as a LIKE pattern with `\` as its escape. */
export function globToLike(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '\\' && i + 1 < glob.length) out += /[%_\\]/.test(glob[++i]) ? `\\${glob[i]}` : glob[i];
    else if (c === '*') out += '%';
    else if (c === '?') out += '_';
    else out += /[%_\\]/.test(c) ? `\\${c}` : c;
  }
  return out;
}

const LIVE = '(expires_at IS NULL OR expires_at > now())';
const ttl = (sec: number | undefined) => (sec && sec > 0 ? String(Math.floor(sec * 1000)) : null);

export function pluginKv(prisma: Db, namespace: string) {
  return {
    async get(key: string): Promise<string | null> {
      const rows = await prisma.$queryRawUnsafe<{ value: string }[]>(
        `SELECT value::text AS value FROM plugin_kv WHERE namespace = $1 AND key = $2 AND ${LIVE}`,
        namespace,
        key,
      );
      return rows[0]?.value ?? null;
    },
    /** `json` is the value's JSON text, checked by the caller. */
    async set(key: string, json: string, ttlSec?: number): Promise<boolean> {
      await prisma.$executeRawUnsafe(
        `INSERT INTO plugin_kv (namespace, key, value, expires_at, updated_at)
         VALUES ($1, $2, $3::jsonb, CASE WHEN $4::text IS NULL THEN NULL ELSE now() + ($4::text || ' milliseconds')::interval END, now())
         ON CONFLICT (namespace, key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at, updated_at = now()`,
        namespace,
        key,
        json,
        ttl(ttlSec),
      );
      // Expired keys are invisible at once and deleted now and then: about one set in a hundred
      // sweeps its namespace.
      if (Math.random() < SWEEP_ODDS) await prisma.$executeRawUnsafe('DELETE FROM plugin_kv WHERE namespace = $1 AND expires_at <= now()', namespace);
      return true;
    },
    async del(key: string): Promise<boolean> {
      const rows = await prisma.$queryRawUnsafe<{ live: boolean }[]>(
        `DELETE FROM plugin_kv WHERE namespace = $1 AND key = $2 RETURNING ${LIVE} AS live`,
        namespace,
        key,
      );
      return rows[0]?.live === true;
    },
    async exists(key: string): Promise<boolean> {
      const rows = await prisma.$queryRawUnsafe<unknown[]>(`SELECT 1 FROM plugin_kv WHERE namespace = $1 AND key = $2 AND ${LIVE}`, namespace, key);
      return rows.length > 0;
    },
    async listKeys(glob = '*'): Promise<string[]> {
      const rows = await prisma.$queryRawUnsafe<{ key: string }[]>(
        `SELECT key FROM plugin_kv WHERE namespace = $1 AND key LIKE $2 ESCAPE '\\' AND ${LIVE} ORDER BY key LIMIT ${MAX_LIST}`,
        namespace,
        globToLike(glob),
      );
      return rows.map((r) => r.key);
    },
    async clear(): Promise<number> {
      const rows = await prisma.$queryRawUnsafe<{ live: boolean }[]>(`DELETE FROM plugin_kv WHERE namespace = $1 RETURNING ${LIVE} AS live`, namespace);
      return rows.filter((r) => r.live).length;
    },
    /** Takes the lock when no one holds it or its holder's time ran out; true when taken. */
    async lock(key: string, owner: string, ttlSec: number): Promise<boolean> {
      const n = await prisma.$executeRawUnsafe(
        `INSERT INTO plugin_locks (namespace, key, owner, expires_at) VALUES ($1, $2, $3, now() + ($4::text || ' milliseconds')::interval)
         ON CONFLICT (namespace, key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at WHERE plugin_locks.expires_at <= now()`,
        namespace,
        key,
        owner,
        String(Math.max(1, Math.floor(ttlSec * 1000))),
      );
      return n > 0;
    },
    async unlock(key: string, owner: string): Promise<void> {
      await prisma.$executeRawUnsafe('DELETE FROM plugin_locks WHERE namespace = $1 AND key = $2 AND owner = $3', namespace, key, owner);
    },
  };
}

export type PluginKv = ReturnType<typeof pluginKv>;
