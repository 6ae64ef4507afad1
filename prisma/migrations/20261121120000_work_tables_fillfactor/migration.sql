-- Transactions and deliveries are work queues: each row is rewritten several times (leases, status
-- changes). Room left on every page lets a rewrite stay on the row's page: one that changes no
-- indexed column (a lease claim or release) then adds no index entries (a HOT update), and the
-- space of old versions is reclaimed as pages are read, also where no autovacuum runs (PGlite).
ALTER TABLE "transactions" SET (fillfactor = 50);
ALTER TABLE "deliveries" SET (fillfactor = 50);
