import { createHmac } from 'node:crypto';
import type { Transaction, TransactionStatus } from '../../src/generated/prisma/client.js';
import { emitTransactionUpdate } from '../../src/modules/notifications/events.js';
import { publishTransaction, updateTransaction } from '../../src/modules/transactions/store.js';
import type { Runtime } from '../../src/runtime.js';
import { API_KEY, DEV_ADDRESS, evmConfig } from '../support/service.js';
import type { Received } from './receiver.js';

export const SIGNING_KEY = 'hook-signing-key-do-not-leak';

/** The EVM test config with notification "hook" (signed with SIGNING_KEY unless `key` is null) on the relayer. */
export function hookConfig(url: string, key: string | null = SIGNING_KEY) {
  return ({ rpcUrl }: { rpcUrl: string }) =>
    evmConfig(rpcUrl, {
      relayer: { notification_id: 'hook' },
      notifications: [{ id: 'hook', type: 'webhook', url, ...(key ? { signing_key: { type: 'plain', value: key } } : {}) }],
    });
}

/**
 * A transaction row as if just accepted: written with its first webhook event in one database
 * transaction, then published (as sendTransaction does). dueAt null keeps chain workers off it; the
 * tests move it on through updateTransaction, the pipeline's own way of changing a transaction.
 */
export async function acceptTransaction(rt: Runtime, relayerId = 'evm-relayer'): Promise<Transaction> {
  const relayer = await rt.prisma.relayer.findUniqueOrThrow({ where: { id: relayerId } });
  const tx = await rt.prisma.$transaction(async (db) => {
    const row = await db.transaction.create({
      data: { relayerId, networkType: 'evm', from: DEV_ADDRESS, to: '0x000000000000000000000000000000000000dEaD', value: '1', request: {}, dueAt: null },
    });
    await emitTransactionUpdate(db, relayer, row);
    return row;
  });
  publishTransaction(rt, tx);
  rt.wake();
  return tx;
}

export const LIFECYCLE: TransactionStatus[] = ['sent', 'submitted', 'mined', 'confirmed'];

export async function walk(rt: Runtime, id: string, statuses: TransactionStatus[] = LIFECYCLE) {
  for (const status of statuses) {
    const hash = `0x${'ab'.repeat(32)}`;
    await updateTransaction(rt, id, { status, hash, ...(status === 'sent' ? { sentAt: new Date() } : {}), ...(status === 'confirmed' ? { confirmedAt: new Date() } : {}) });
  }
}

/** What a receiver written for the reference system checks, plus our timestamped header. */
export function signaturesOf(r: Received, key = SIGNING_KEY) {
  const xSignature = createHmac('sha256', key).update(r.raw).digest('base64');
  const header = String(r.headers['x-relayer-signature'] ?? '');
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header);
  return {
    xSignatureValid: r.headers['x-signature'] === xSignature,
    timestampedValid: !!m && m[2] === createHmac('sha256', key).update(`${m[1]}.${r.raw}`).digest('hex'),
    skewSeconds: m ? Math.abs(Date.now() / 1000 - Number(m[1])) : Infinity,
  };
}

/** Statuses a receiver saw for one transaction, in arrival order. */
export const statusesFor = (received: Received[], txId: string) =>
  received.filter((r) => r.body?.event === 'transaction_update' && r.body.payload.id === txId).map((r) => r.body.payload.status as string);

/**
 * Opens a GraphQL subscription over SSE through the app (no port) and collects its `next` payloads.
 * `ready` resolves once the stream is open.
 */
export function subscribe(app: { fetch(r: Request): Promise<Response> }, query: string, variables: object, token: string | null = API_KEY) {
  const events: any[] = [];
  const controller = new AbortController();
  const response = app.fetch(
    new Request('http://relayer.test/graphql', {
      method: 'POST',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify({ query, variables }),
      signal: controller.signal,
    }),
  );
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const decoder = new TextDecoder();
  const done = (async () => {
    const res = await response;
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) return;
    reader = res.body.getReader();
    let buffer = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = block
            .split('\n')
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          if (event === 'next' && data) events.push(JSON.parse(data));
        }
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    response,
    events,
    /** Resolves when the server ends the stream (or close() is called). */
    ended: done,
    async close() {
      controller.abort();
      await reader?.cancel().catch(() => {});
      await done;
    },
  };
}
