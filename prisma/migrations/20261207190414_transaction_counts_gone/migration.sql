-- How many rows ever left each (relayer, status): `gone`, by a status change, a deletion or a move
-- to another relayer, and `removed`, those that left the relayer itself (deleted or moved). Both
-- only grow, so two reads that see the same `n` and `gone` of a (relayer, status) see the same rows
-- in it, and a larger `n` with the same `gone` means rows were only added to it; the same holds for
-- a relayer's whole list with the sums of `n` and `removed`. Pages check their marks with them
-- (core/transactions/pages.ts). Kept by the same statement triggers as `n`, in the same upsert of
-- the same counter rows, so a status change writes no more rows than before. Written by hand after
-- the generated ALTER TABLE. The counters of a deleted relayer are no longer deleted but set to 0,
-- their rows counted as gone and removed: a relayer made again under the same id never sees again
-- counts it had.
-- (No semicolons in these comments: the schema engine splits the script at each one.)

-- AlterTable
ALTER TABLE "transaction_counts" ADD COLUMN     "gone" BIGINT NOT NULL DEFAULT 0,
ADD COLUMN     "removed" BIGINT NOT NULL DEFAULT 0;

-- An old row left its (relayer, status) unless the statement's new version of it is there still
-- at the same place in the list (same id and created_at), and left its relayer unless that version
-- has the same relayer. A row whose id or created_at changed (by hand) counts as both: it left its
-- place. The counts of n are as before, and an UPDATE that moves no row writes no counter row.
CREATE OR REPLACE FUNCTION "transaction_counts_updated"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO transaction_counts AS c (relayer_id, status, n, gone, removed)
  SELECT relayer_id, status, sum(d), sum(g), sum(r) FROM (
    SELECT relayer_id, status, 1 AS d, 0 AS g, 0 AS r FROM new_rows
    UNION ALL
    SELECT o.relayer_id, o.status, -1,
      (w.id IS NULL OR w.relayer_id <> o.relayer_id OR w.status <> o.status)::int,
      (w.id IS NULL OR w.relayer_id <> o.relayer_id)::int
    FROM old_rows o LEFT JOIN new_rows w ON w.id = o.id AND w.created_at = o.created_at
  ) moved
  GROUP BY relayer_id, status HAVING sum(d) <> 0 OR sum(g) <> 0 ORDER BY relayer_id, status
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
