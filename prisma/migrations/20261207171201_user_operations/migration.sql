-- CreateEnum
CREATE TYPE "UserOperationStatus" AS ENUM ('pending', 'submitted', 'included', 'failed');

-- CreateTable
CREATE TABLE "user_operations" (
    "id" TEXT NOT NULL,
    "relayer_id" TEXT NOT NULL,
    "chain_id" INTEGER NOT NULL,
    "entry_point" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "sender" TEXT NOT NULL,
    "nonce" TEXT NOT NULL,
    "operation" JSON NOT NULL,
    "status" "UserOperationStatus" NOT NULL DEFAULT 'pending',
    "status_reason" TEXT,
    "transaction_id" TEXT,
    "receipt" JSON,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "user_operations_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "user_operations_relayer_id_status_created_at_idx" ON "user_operations"("relayer_id", "status", "created_at");

-- CreateIndex
CREATE INDEX "user_operations_relayer_id_created_at_id_idx" ON "user_operations"("relayer_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "user_operations_transaction_id_idx" ON "user_operations"("transaction_id");

-- CreateIndex
CREATE UNIQUE INDEX "user_operations_chain_id_entry_point_hash_key" ON "user_operations"("chain_id", "entry_point", "hash");

-- AddForeignKey
ALTER TABLE "user_operations" ADD CONSTRAINT "user_operations_relayer_id_fkey" FOREIGN KEY ("relayer_id") REFERENCES "relayers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_operations" ADD CONSTRAINT "user_operations_transaction_id_fkey" FOREIGN KEY ("transaction_id") REFERENCES "transactions"("id") ON DELETE SET NULL ON UPDATE CASCADE;
