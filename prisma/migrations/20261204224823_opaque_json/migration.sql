-- A transaction's request, chain state and signature are written and read whole, never looked into
-- by SQL: json keeps them as written (validated only), where jsonb parsed each into a tree at every
-- write. bench/writes.ts measures the difference. The statement rewrites the table once and holds
-- it locked meanwhile: 2.8 s for 100,000 rows on PostgreSQL on the machine of docs/benchmarks.md.
-- (No semicolons in these comments: the schema engine splits the script at each one.)

-- AlterTable
ALTER TABLE "transactions" ALTER COLUMN "request" SET DATA TYPE JSON,
ALTER COLUMN "chain_state" SET DATA TYPE JSON,
ALTER COLUMN "signature" SET DATA TYPE JSON;
