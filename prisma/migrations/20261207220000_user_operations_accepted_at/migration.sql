-- AlterTable
ALTER TABLE "user_operations" ADD COLUMN     "accepted_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;
UPDATE "user_operations" SET "accepted_at" = "created_at";

-- CreateIndex
CREATE INDEX "user_operations_relayer_id_sender_accepted_at_idx" ON "user_operations"("relayer_id", "sender", "accepted_at");
