-- AlterTable
ALTER TABLE "user_operations" ADD COLUMN     "valid_until" TIMESTAMP(3);
