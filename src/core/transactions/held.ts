// Rows written free at intake that wait for the chain: their schedule, shared by the pipeline that
// decides it and the insert that writes it (pure, so chain families' decisions can use it).

/**
 * New rows of a relayer that wait before any work can be done on them (the chain lets them in
 * later): from nonce `from` on, each is due in `firstMs`, and `everyMs` later for every `per`
 * nonces further.
 */
export interface Held {
  from: bigint;
  per: number;
  firstMs: number;
  everyMs: number;
}

/** In how many ms the row at `nonce` (from `h.from` on) is due; the insert (store.ts, insertSql) computes the same in SQL. */
export const heldDueMs = (h: Held, nonce: bigint) => h.firstMs + Number((nonce - h.from) / BigInt(h.per)) * h.everyMs;
