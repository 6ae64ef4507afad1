import type { Runtime } from './runtime.js';

// What an instance holds of what the API can change (a loaded signer, a network's RPC URLs, a
// relayer's snapshot) is let go on every instance sharing the database as soon as it changes:
// the change is announced through PostgreSQL NOTIFY, in the same instant as its write commits.

export const CHANNEL = 'relayer_changes';

export type Change = { kind: 'signer' | 'network' | 'relayer' | 'api_key'; id: string };

/** Tells every instance on the database, this one included, that `change` was written. */
export async function announce(rt: Runtime, change: Change): Promise<void> {
  if (!rt.db.listen) return;
  await rt.db.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify(change)]).catch((err: Error) => rt.log.warn({ err, change }, 'change not announced'));
}
