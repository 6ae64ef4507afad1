-- CreateTable
CREATE TABLE "plugin_kv" (
    "namespace" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "value" JSONB NOT NULL,
    "expires_at" TIMESTAMP(3),
    "updated_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "plugin_kv_pkey" PRIMARY KEY ("namespace","key")
);

-- CreateTable
CREATE TABLE "plugin_locks" (
    "namespace" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "plugin_locks_pkey" PRIMARY KEY ("namespace","key")
);

-- CreateTable
CREATE TABLE "plugin_settings" (
    "id" TEXT NOT NULL,
    "settings" JSONB NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "plugin_settings_pkey" PRIMARY KEY ("id")
);
