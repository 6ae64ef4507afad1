-- DropIndex
DROP INDEX "transactions_relayer_id_created_at_idx";

-- DropIndex
DROP INDEX "transactions_relayer_id_status_idx";

-- CreateIndex
CREATE INDEX "transactions_relayer_id_created_at_id_idx" ON "transactions"("relayer_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "transactions_relayer_id_status_created_at_id_idx" ON "transactions"("relayer_id", "status", "created_at", "id");
