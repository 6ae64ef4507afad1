-- The network type becomes text, checked against the chain families the service lists
-- (src/chains/families.ts) when written, so a new family needs no migration. Written by hand
-- (the generated diff dropped and re-added the columns, losing their values): the values are kept.

-- AlterTable
ALTER TABLE "relayers" ALTER COLUMN "network_type" TYPE TEXT USING "network_type"::text;

-- AlterTable
ALTER TABLE "transactions" ALTER COLUMN "network_type" TYPE TEXT USING "network_type"::text;

-- DropEnum
DROP TYPE "NetworkType";
