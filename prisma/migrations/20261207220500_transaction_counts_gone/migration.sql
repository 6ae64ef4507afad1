-- How many rows ever left each (relayer, status): `gone`, by a status change, a deletion or a move
-- to another relayer, and `removed`, those that left the relayer itself (deleted or moved). Both
-- only grow, so two reads that see the same `n` and `gone` of a (relayer, status) see the same rows
-- in it, and a larger `n` with the same `gone` means rows were only added to it. The same holds for
-- a relayer's whole list with the sums of `n` and `removed`. Pages check their marks with them
-- (core/transactions/pages.ts). Kept by the same statement triggers as `n`, in the same upsert of
-- the same counter rows, so a status change writes no more rows than before. Written by hand after
-- the generated ALTER TABLE. The counters of a deleted relayer are no longer deleted but set to 0,
-- their rows counted as gone and removed: a relayer made again under the same id never sees again
-- counts it had.
-- (No semicolons in these comments: the schema engine splits the script at each one.)

-- AlterTable
ALTER TABLE "transaction_counts" ADD COLUMN IF NOT EXISTS "gone" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN IF NOT EXISTS "removed" BIGINT NOT NULL DEFAULT 0;

-- A row left its (relayer, status) when the statement's new version of it is not there at the
-- same place in the list with the same status, and left its relayer when it is not there at the
-- same place at all: a row whose id, created_at or relayer changed (by hand) counts as both. The
-- old and new versions of the statement's rows are grouped by place (id, created_at, relayer_id)
-- in one pass, and only places whose status differs go on to the counters. No join of old_rows
-- with new_rows: its plan, made once for a statement of few rows, compared every pair of rows of
-- later larger ones (a 200-row save paid 10 ms on PGlite, bench/count-triggers.ts). The counts of
-- n are as before, and an UPDATE that moves no row writes no counter row.
CREATE OR REPLACE FUNCTION "transaction_counts_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO transaction_counts AS c (relayer_id, status, n, gone, removed)
  SELECT k.relayer_id, k.status, sum(k.d), sum(k.g), sum(k.r) FROM (
    SELECT relayer_id, min(status) FILTER (WHERE before) AS was, min(status) FILTER (WHERE NOT before) AS became FROM (
      SELECT id, created_at, relayer_id, status, false AS before FROM new_rows
      UNION ALL
      SELECT id, created_at, relayer_id, status, true FROM old_rows
    ) v GROUP BY id, created_at, relayer_id
  ) p, LATERAL (VALUES (p.relayer_id, p.was, -1, 1, (p.became IS NULL)::int), (p.relayer_id, p.became, 1, 0, 0)) k(relayer_id, status, d, g, r)
  WHERE p.was IS DISTINCT FROM p.became AND k.status IS NOT NULL
  GROUP BY k.relayer_id, k.status ORDER BY k.relayer_id, k.status
  ON CONFLICT (relayer_id, status) DO UPDATE SET n = c.n + excluded.n, gone = c.gone + excluded.gone, removed = c.removed + excluded.removed;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "transaction_counts_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO transaction_counts AS c (relayer_id, status, n, gone, removed)
  SELECT relayer_id, status, -count(*), count(*), count(*) FROM old_rows o
  WHERE EXISTS (SELECT 1 FROM relayers r WHERE r.id = o.relayer_id)
  GROUP BY relayer_id, status ORDER BY relayer_id, status
  ON CONFLICT (relayer_id, status) DO UPDATE SET n = c.n + excluded.n, gone = c.gone + excluded.gone, removed = c.removed + excluded.removed;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION "transaction_counts_truncated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE transaction_counts SET gone = gone + n, removed = removed + n, n = 0 WHERE n <> 0;
  RETURN NULL;
END $$;

-- A deleted relayer's rows went with it: its counters fall to 0 and count them as gone and removed.
CREATE OR REPLACE FUNCTION "transaction_counts_relayers_deleted"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE transaction_counts c SET gone = c.gone + c.n, removed = c.removed + c.n, n = 0 FROM old_rows r WHERE c.relayer_id = r.id AND c.n <> 0;
  RETURN NULL;
END $$;
