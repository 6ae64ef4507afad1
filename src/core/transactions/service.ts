import { createHash } from 'node:crypto';
import type { Relayer, Transaction, TransactionStatus } from '../../generated/prisma/client.js';
import { conflict, invalid, isDomainError, notFound, transactionNotFound } from '../domain-error.js';
import type { Runtime } from '../runtime.js';
import type { NetworkType } from '../family-list.js';
import { getRelayer, relayerSnapshot } from '../relayers/service.js';
import { canonicalJson } from '../../lib/json.js';
import { listPage, type PageAsk, type PageInfo, type Paged } from '../page.js';
import { insertAccepted } from './intake.js';
import { parseShape } from './shapes.js';
import { readPage } from './pages.js';
import { countTransactions, publishTransaction, readAfter, readTransaction } from './store.js';
import { isUniqueViolation } from '../../db/unique-violation.js';

export const FINAL_STATUSES: TransactionStatus[] = ['confirmed', 'failed', 'expired', 'canceled'];

export type { PageInfo } from '../page.js';

/**
 * A page of a relayer's transactions, by number (page, perPage) or by cursor (first, after). Whichever
 * read the request asks for first (its rows, else its total) also shows that the relayer exists,
 * since its transactions name it: the relayer is read only when that answer is empty (or never,
 * when the caller already holds it).
 */
export function listTransactions(
  rt: Runtime,
  relayerId: string,
  opts: { page?: number | null; perPage?: number | null; status?: TransactionStatus | null; first?: number | null; after?: string | null },
  ask: PageAsk = { items: true, total: true },
  relayerKnown = false,
): Promise<Paged<Transaction> & { pageInfo: () => Promise<PageInfo> }> {
  return listPage(
    opts,
    {
      total: () => countTransactions(rt, relayerId, opts.status),
      page: (skip, take) => readPage(rt, relayerId, opts.status, skip, take),
      after: (after, take) => readAfter(rt, relayerId, opts.status, after, take),
      ...(relayerKnown ? {} : { parent: () => getRelayer(rt, relayerId) }),
    },
    ask,
  );
}

export async function getTransaction(rt: Runtime, id: string, relayerId?: string | null): Promise<Transaction> {
  const tx = await readTransaction(rt, id).catch(() => null);
  if (!tx || (relayerId && tx.relayerId !== relayerId)) {
    if (relayerId) await getRelayer(rt, relayerId);
    throw transactionNotFound(id);
  }
  return tx;
}

export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** A stable digest of what the client sent, to tell a retry from a different request. */
function requestDigest(input: Record<string, unknown>): string {
  return createHash('sha256').update(canonicalJson(input)).digest('hex');
}

async function replay(rt: Runtime, relayerId: string, key: string, digest: string, once = false): Promise<Transaction | null> {
  const existing = await rt.db.prisma.transaction.findUnique({ where: { relayerId_idempotencyKey: { relayerId, idempotencyKey: key } } });
  if (!existing) return null;
  if (existing.requestDigest !== digest) {
    throw conflict(
      'Conflict',
      once
        ? `this request's authorization was already sent as transaction ${existing.id}`
        : `Idempotency-Key "${key}" was already used with a different request`,
    );
  }
  return existing;
}

/**
 * Accepts a transaction: validates it for the relayer's chain family, allocates its nonce in the
 * same database transaction that writes the row, and queues its first webhook event. Checks run
 * against a snapshot of the relayer; the insert refuses it if the relayer changed meanwhile, and a
 * refusal is only given on the relayer as it is now.
 */
export async function sendTransaction(rt: Runtime, relayerId: string, input: Record<string, unknown>, idempotencyKey?: string | null): Promise<Transaction> {
  let relayer = await relayerSnapshot(rt, relayerId);
  for (let fresh = false, attempts = 0; ; fresh = true, attempts++) {
    if (attempts === MAX_ATTEMPTS) throw new Error(`relayer ${relayerId} kept changing while a transaction was being accepted`);
    try {
      const outcome = await sendAs(rt, relayer, input, idempotencyKey);
      if (outcome !== 'stale') return outcome;
    } catch (e) {
      if (fresh || !isDomainError(e, 'invalid', 'unavailable')) throw e;
    }
    relayer = await relayerSnapshot(rt, relayerId, true);
  }
}

const MAX_ATTEMPTS = 5;

async function sendAs(rt: Runtime, relayer: Relayer, input: Record<string, unknown>, idempotencyKey?: string | null): Promise<Transaction | 'stale'> {
  const relayerId = relayer.id;
  if (idempotencyKey != null && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
    throw invalid('Idempotency-Key: must be 1 to 255 visible ASCII characters');
  }
  const type = relayer.networkType as NetworkType;
  const request = parseShape(rt.families, type, input);
  // Only a request with a key can be retried as the same one: without, no digest is kept.
  const digest = idempotencyKey ? requestDigest(input) : null;
  if (idempotencyKey && digest) {
    const previous = await replay(rt, relayerId, idempotencyKey, digest);
    if (previous) return previous;
  }
  if (relayer.paused) throw invalid(`relayer ${relayerId} is paused`);
  if (relayer.systemDisabled) {
    const reason = relayer.disabledReason as { type?: string; details?: string } | null;
    throw invalid(`relayer ${relayerId} is disabled${reason?.details ? `: ${reason.details}` : ''}`);
  }
  const family = rt.families.pipeline(type);
  if (!family) throw invalid(`${type} relayers cannot send transactions on this service`);
  const accepted = await family.accept(rt, relayer, request as never);
  const { onceKey } = accepted;
  const key = onceKey ?? idempotencyKey ?? null;
  const keyDigest = onceKey ? requestDigest(input) : digest;
  if (onceKey) {
    const previous = await replay(rt, relayerId, onceKey, keyDigest!, true);
    if (previous) return previous;
  }

  let tx: Awaited<ReturnType<typeof insertAccepted>>;
  try {
    tx = await insertAccepted(rt, { relayer, type, accepted, idempotencyKey: key, digest: keyDigest });
  } catch (e) {
    if (key && keyDigest && isUniqueViolation(e)) {
      const previous = await replay(rt, relayerId, key, keyDigest, !!onceKey);
      if (previous) return previous;
    }
    throw e;
  }
  if (tx === 'no-nonce') {
    // First transaction since start-up or a signer change: take the nonce from the chain (this
    // changes the relayer, so the request is checked again).
    const next = await family.chainNonce(rt, relayer);
    await rt.db.prisma.relayer.updateMany({ where: { id: relayerId, nextNonce: null }, data: { nextNonce: next } });
    return 'stale';
  }
  if (tx === 'stale') return tx;
  publishTransaction(rt, tx);
  return tx;
}

/** The relayer's transaction at a nonce (EVM) or sequence number (Stellar). */
export async function getTransactionByNonce(rt: Runtime, relayerId: string, nonce: bigint): Promise<Transaction> {
  const tx = await rt.db.prisma.transaction.findUnique({ where: { relayerId_nonce: { relayerId, nonce } } });
  if (!tx) {
    await getRelayer(rt, relayerId);
    throw notFound(`Transaction with nonce ${nonce} not found`);
  }
  return tx;
}
