-- DropIndex
DROP INDEX "deliveries_status_due_at_idx";

-- DropIndex
DROP INDEX "deliveries_transaction_id_seq_idx";

-- CreateIndex
CREATE INDEX "deliveries_notification_id_status_due_at_idx" ON "deliveries"("notification_id", "status", "due_at");

-- CreateIndex
CREATE INDEX "deliveries_notification_id_lease_until_idx" ON "deliveries"("notification_id", "lease_until");

-- CreateIndex
CREATE INDEX "deliveries_transaction_id_notification_id_status_seq_idx" ON "deliveries"("transaction_id", "notification_id", "status", "seq");

-- CreateIndex
CREATE INDEX "deliveries_relayer_id_transaction_id_notification_id_status_idx" ON "deliveries"("relayer_id", "transaction_id", "notification_id", "status", "seq");
