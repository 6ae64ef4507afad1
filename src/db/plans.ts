/**
 * Named statements are parsed once but planned at every run, against the tables as they are then.
 * A plan cached while a table was small (a new database) scans the whole table, and stays cached
 * until statistics are next gathered (never, on a server without autovacuum; up to ten minutes of
 * load on PGlite): the batch save planned so took 32 ms at 100,000 rows instead of 0.6.
 */
export const PLAN_CACHE_MODE = 'force_custom_plan';

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
