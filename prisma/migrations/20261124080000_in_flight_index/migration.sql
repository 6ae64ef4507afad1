-- The rows still in flight (due_at set), by relayer and nonce: the mined-nonce watch claims those
-- below the chain's nonce, and without this it walked every final row of the relayer below it too.
-- Partial indexes are not expressible in schema.prisma, so this one is kept here by hand.
CREATE INDEX "transactions_in_flight_idx" ON "transactions" ("relayer_id", "nonce") WHERE "due_at" IS NOT NULL;
