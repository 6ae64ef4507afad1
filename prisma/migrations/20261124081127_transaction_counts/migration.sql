-- How many transactions each relayer has in each status, kept exact by the database itself:
-- statement triggers on transactions add up each statement's changes per (relayer, status), so
-- every write (intake, the pipeline's saves, hand-written SQL, a relayer's deletion) is counted
-- in one place. The list's total and the metrics read this instead of counting rows. Written by
-- hand after the generated CREATE TABLE; the script runs as one transaction on both databases
-- (src/db/schema-engine.ts), so the backfill and the triggers see the same rows: CREATE TRIGGER
-- holds off writers until the backfill has committed.

-- CreateTable
CREATE TABLE "transaction_counts" (
    "relayer_id" TEXT NOT NULL,
    "status" "TransactionStatus" NOT NULL,
    "n" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "transaction_counts_pkey" PRIMARY KEY ("relayer_id","status")
);

-- Each trigger adds its statement's changes in one upsert, keys in sorted order: two statements
-- changing the same counters lock them in the same order, so they cannot deadlock on them. A
-- count that falls to 0 keeps its row. An UPDATE that moves no row between (relayer, status)
-- keys (leases, saves without a status change) writes no counter row.
CREATE FUNCTION "transaction_counts_inserted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO transaction_counts AS c (relayer_id, status, n)
  SELECT relayer_id, status, count(*) FROM new_rows GROUP BY relayer_id, status ORDER BY relayer_id, status
  ON CONFLICT (relayer_id, status) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;

CREATE FUNCTION "transaction_counts_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO transaction_counts AS c (relayer_id, status, n)
  SELECT relayer_id, status, sum(d) FROM (
    SELECT relayer_id, status, 1 AS d FROM new_rows
    UNION ALL
    SELECT relayer_id, status, -1 AS d FROM old_rows
  ) moved
  GROUP BY relayer_id, status HAVING sum(d) <> 0 ORDER BY relayer_id, status
  ON CONFLICT (relayer_id, status) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;

-- Rows deleted with their relayer (the foreign key's cascade) are not counted here: the relayer's
-- counters are removed with it (below). The cascade's trigger and the relayers' trigger fire in
-- an order of the database's choosing (the relayers' one first, here), so neither relies on it.
CREATE FUNCTION "transaction_counts_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO transaction_counts AS c (relayer_id, status, n)
  SELECT relayer_id, status, -count(*) FROM old_rows o
  WHERE EXISTS (SELECT 1 FROM relayers r WHERE r.id = o.relayer_id)
  GROUP BY relayer_id, status ORDER BY relayer_id, status
  ON CONFLICT (relayer_id, status) DO UPDATE SET n = c.n + excluded.n;
  RETURN NULL;
END $$;

CREATE FUNCTION "transaction_counts_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM transaction_counts;
  RETURN NULL;
END $$;

-- A deleted relayer's counters go with it (its rows went with it too).
CREATE FUNCTION "transaction_counts_relayers_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM transaction_counts c USING old_rows r WHERE c.relayer_id = r.id;
  RETURN NULL;
END $$;

CREATE TRIGGER "transaction_counts_insert" AFTER INSERT ON "transactions"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "transaction_counts_inserted"();
CREATE TRIGGER "transaction_counts_update" AFTER UPDATE ON "transactions"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION "transaction_counts_updated"();
CREATE TRIGGER "transaction_counts_delete" AFTER DELETE ON "transactions"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "transaction_counts_deleted"();
CREATE TRIGGER "transaction_counts_truncate" AFTER TRUNCATE ON "transactions"
  FOR EACH STATEMENT EXECUTE FUNCTION "transaction_counts_truncated"();
CREATE TRIGGER "transaction_counts_relayers_delete" AFTER DELETE ON "relayers"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION "transaction_counts_relayers_deleted"();

-- Backfill: the rows already there.
INSERT INTO "transaction_counts" (relayer_id, status, n)
SELECT relayer_id, status, count(*) FROM "transactions" GROUP BY relayer_id, status;
