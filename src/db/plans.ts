/**
 * Named statements are parsed once but planned at every run, against the tables as they are then.
 * A plan cached while a table was small (a new database) scans the whole table, and stays cached
 * until statistics are next gathered (never, on a server without autovacuum; up to ten minutes of
 * load on PGlite): the batch save planned so took 32 ms at 100,000 rows instead of 0.6.
 */
export const PLAN_CACHE_MODE = 'force_custom_plan';

/**
 * The intake's insert reads no table whose size changes its plan (its rows come from parameters,
 * its guard locks relayers by id), yet it was the costliest statement to plan: 0.4-0.7 ms a run
 * on PostgreSQL, 19-25 µs of the server's time a relayed transfer in a flood (`bench/statements.ts`);
 * on PGlite, planned once, a lone send is answered 0.9 ms sooner (about 4.4 ms instead of 5.3,
 * `bench/latency.ts`). A database transaction asking to be planned once
 * (`planOnce`) starts with this, so its named statements keep the generic plan their first run
 * made on the connection. It holds for that transaction only, whatever runs on the connection
 * next (a pooler in transaction mode included). The plan lasts as long as the connection or until
 * the relayers' statistics change: one made while the relayers were a handful may scan them all,
 * and keeps doing so at every batch if they grow to thousands and no one gathers statistics.
 */
export const PLAN_ONCE = 'SET LOCAL plan_cache_mode = force_generic_plan';

/**
 * A FROM item for an INSERT whose rows each have foreign keys: the database looks up each key's
 * row with a query of its own, which the session's PLAN_CACHE_MODE had planned again for every
 * row. It sets the mode back to PostgreSQL's default until the database transaction ends: the
 * statement is planned already, and its lookups (run as its rows are written) are planned once per
 * connection and cached. Server instructions a transaction (insert and three saves,
 * `bench/writes.ts`): 8% fewer; with four webhook deliveries a transaction (three keys a row), 34%.
 * Later statements in the transaction are planned by the default too, so it goes only in
 * statements that end their transaction or are followed by such statements alone.
 */
export const CACHED_LOOKUPS = `(SELECT set_config('plan_cache_mode', 'auto', true)) AS cached_lookups`;
