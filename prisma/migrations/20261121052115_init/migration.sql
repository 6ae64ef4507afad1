-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "NetworkType" AS ENUM ('evm', 'solana', 'stellar');

-- CreateEnum
CREATE TYPE "TransactionStatus" AS ENUM ('pending', 'sent', 'submitted', 'mined', 'confirmed', 'failed', 'expired', 'canceled');

-- CreateEnum
CREATE TYPE "Speed" AS ENUM ('fastest', 'fast', 'average', 'safeLow');

-- CreateEnum
CREATE TYPE "NotificationType" AS ENUM ('webhook');

-- CreateEnum
CREATE TYPE "DeliveryStatus" AS ENUM ('pending', 'delivered', 'failed');

-- CreateTable
CREATE TABLE "relayers" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "network" TEXT NOT NULL,
    "network_type" "NetworkType" NOT NULL,
    "address" TEXT NOT NULL,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "system_disabled" BOOLEAN NOT NULL DEFAULT false,
    "disabled_reason" JSONB,
    "signer_id" TEXT NOT NULL,
    "notification_id" TEXT,
    "custom_rpc_urls" JSONB,
    "policies" JSONB NOT NULL DEFAULT '{}',
    "next_nonce" BIGINT,
    "check_at" TIMESTAMP(3),
    "check_attempts" INTEGER NOT NULL DEFAULT 0,
    "config_digest" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "relayers_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "transactions" (
    "id" TEXT NOT NULL,
    "relayer_id" TEXT NOT NULL,
    "network_type" "NetworkType" NOT NULL,
    "status" "TransactionStatus" NOT NULL DEFAULT 'pending',
    "status_reason" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,
    "sent_at" TIMESTAMP(3),
    "confirmed_at" TIMESTAMP(3),
    "hash" TEXT,
    "hashes" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "from" TEXT NOT NULL,
    "to" TEXT,
    "value" TEXT NOT NULL DEFAULT '0',
    "data" TEXT,
    "nonce" BIGINT,
    "gas_limit" BIGINT,
    "gas_price" TEXT,
    "max_fee_per_gas" TEXT,
    "max_priority_fee_per_gas" TEXT,
    "speed" "Speed",
    "valid_until" TIMESTAMP(3),
    "request" JSONB NOT NULL,
    "chain_state" JSONB,
    "signature" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "due_at" TIMESTAMP(3) DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_until" TIMESTAMP(3),
    "idempotency_key" TEXT,
    "request_digest" TEXT,

    CONSTRAINT "transactions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "notifications" (
    "id" TEXT NOT NULL,
    "type" "NotificationType" NOT NULL DEFAULT 'webhook',
    "url" TEXT NOT NULL,
    "signing_key" TEXT,
    "config_digest" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "notifications_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "deliveries" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "notification_id" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "relayer_id" TEXT,
    "transaction_id" TEXT,
    "body" TEXT NOT NULL,
    "status" "DeliveryStatus" NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "due_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lease_owner" TEXT,
    "lease_until" TIMESTAMP(3),
    "last_error" TEXT,
    "last_status_code" INTEGER,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMP(3),

    CONSTRAINT "deliveries_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "transactions_relayer_id_created_at_idx" ON "transactions"("relayer_id", "created_at");

-- CreateIndex
CREATE INDEX "transactions_relayer_id_status_idx" ON "transactions"("relayer_id", "status");

-- CreateIndex
CREATE INDEX "transactions_due_at_idx" ON "transactions"("due_at");

-- CreateIndex
CREATE UNIQUE INDEX "transactions_relayer_id_nonce_key" ON "transactions"("relayer_id", "nonce");

-- CreateIndex
CREATE UNIQUE INDEX "transactions_relayer_id_idempotency_key_key" ON "transactions"("relayer_id", "idempotency_key");

-- CreateIndex
CREATE UNIQUE INDEX "deliveries_seq_key" ON "deliveries"("seq");

-- CreateIndex
CREATE INDEX "deliveries_status_due_at_idx" ON "deliveries"("status", "due_at");

-- CreateIndex
CREATE INDEX "deliveries_notification_id_seq_idx" ON "deliveries"("notification_id", "seq");

-- CreateIndex
CREATE INDEX "deliveries_transaction_id_seq_idx" ON "deliveries"("transaction_id", "seq");

-- AddForeignKey
ALTER TABLE "relayers" ADD CONSTRAINT "relayers_notification_id_fkey" FOREIGN KEY ("notification_id") REFERENCES "notifications"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "transactions" ADD CONSTRAINT "transactions_relayer_id_fkey" FOREIGN KEY ("relayer_id") REFERENCES "relayers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_notification_id_fkey" FOREIGN KEY ("notification_id") REFERENCES "notifications"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_relayer_id_fkey" FOREIGN KEY ("relayer_id") REFERENCES "relayers"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_transaction_id_fkey" FOREIGN KEY ("transaction_id") REFERENCES "transactions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
