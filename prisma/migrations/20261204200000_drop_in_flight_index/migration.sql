-- The mined-nonce claim reads each relayer's range of nonces the chain just passed, bounded below
-- and above, so the unique (relayer_id, nonce) index serves it: the range holds few final rows.
-- The partial index of rows in flight on the same columns was one more entry to write at every
-- insert and at every save that moves a row in flight (nearly all of them): about 9 per cent of
-- PGlite's CPU for a transaction's insert and three saves (bench/writes.ts). The claim keeps the
-- planner on the unique index whatever the statistics say (core/transactions/store.ts).
-- (No semicolons in these comments: the schema engine splits the script at each one.)
DROP INDEX "transactions_in_flight_idx";
