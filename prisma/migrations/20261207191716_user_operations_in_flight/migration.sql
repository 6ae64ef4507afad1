-- CreateIndex
CREATE INDEX "user_operations_status_relayer_id_entry_point_idx" ON "user_operations"("status", "relayer_id", "entry_point");
