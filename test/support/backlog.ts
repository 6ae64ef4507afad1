import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServerAdapter } from '@whatwg-node/server';
import type { Runtime } from '../../src/core/runtime.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from './service.js';

// A webhook backlog to dead receivers, for test/core/notifications/backlog.test.ts and bench/webhooks.ts.

/**
 * Writes `transactions` transaction rows (kept off the chain workers) with `perTransaction` pending
 * deliveries each to `notificationId`, due in `dueInMs` (default now): one INSERT.
 */
export async function seedBacklog(
  rt: Pick<Runtime, 'db'>,
  o: {
    notificationId: string;
    relayerId?: string;
    transactions: number;
    perTransaction: number;
    dueInMs?: number;
    /** When the events after each transaction's first are due (default: as the first). */
    followersDueInMs?: number;
  },
): Promise<void> {
  await rt.db.prisma.$executeRawUnsafe(
    `WITH tx AS (
       INSERT INTO transactions (id, relayer_id, network_type, "from", value, request, due_at, updated_at)
       SELECT gen_random_uuid()::text, $1, 'evm', $2, '0', '{}'::jsonb, NULL, now() FROM generate_series(1, $3)
       RETURNING id)
     INSERT INTO deliveries (id, notification_id, relayer_id, transaction_id, event, body, due_at)
     SELECT gen_random_uuid()::text, $4, $1, tx.id, 'transaction_update', '{"event":"transaction_update"}',
       now() + ((CASE WHEN k = 1 THEN $6 ELSE $7 END) || ' milliseconds')::interval
     FROM tx CROSS JOIN generate_series(1, $5) AS k
     ORDER BY tx.id, k`,
    o.relayerId ?? 'evm-relayer',
    DEV_ADDRESS,
    o.transactions,
    o.notificationId,
    o.perTransaction,
    String(o.dueInMs ?? 0),
    String(o.followersDueInMs ?? o.dueInMs ?? 0),
  );
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : Number.NaN;
};

/**
 * The service on anvil with three webhook targets: "ok" (the relayer's, at `okUrl`), "dead503"
 * and "hang" (no relayer points at them; the backlog is seeded).
 */
export function startWithTargets(urls: { ok: string; dead503: string; hang: string }, env: Record<string, string> = {}): Promise<TestService> {
  const hook = (id: string, url: string) => ({ id, type: 'webhook', url });
  return startTestService({
    anvil: true,
    env,
    config: ({ rpcUrl }) =>
      evmConfig(rpcUrl, {
        relayer: { notification_id: 'ok' },
        notifications: [hook('ok', urls.ok), hook('dead503', urls.dead503), hook('hang', urls.hang)],
      }),
  });
}

export const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** The app over node:http on a free port (as main.ts serves it), so a stalled event loop shows in request times. */
export async function serveOverHttp(svc: TestService): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(createServerAdapter((request: Request) => svc.app.fetch(request)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface Latency {
  /** Medians, ms. */
  healthMs: number;
  sendMs: number;
  /** Every sample, ms. */
  health: number[];
  send: number[];
  sentIds: string[];
}

/** The ms `fn` takes. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/**
 * Latency of GET /v1/health and of a send through REST over HTTP, `n` of each taken in turns, so
 * the health samples spread over the sends' time instead of one burst of a few tens of ms.
 */
export async function serviceLatency(base: string, apiKey: string, n: number): Promise<Latency> {
  const sentIds: string[] = [];
  const health: number[] = [];
  const send: number[] = [];
  for (let i = 0; i < n; i++) {
    health.push(
      await timed(async () => {
        const res = await fetch(`${base}/v1/health`);
        if (res.status !== 200) throw new Error(`health answered ${res.status}`);
        await res.text();
      }),
    );
    send.push(
      await timed(async () => {
        const res = await fetch(`${base}/api/v1/relayers/evm-relayer/transactions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ to: RECEIVER, value: 1, gas_limit: 21000 }),
        });
        const body = (await res.json()) as { data?: { id: string }; error?: string };
        if (res.status !== 200 || !body.data) throw new Error(`send answered ${res.status}: ${body.error}`);
        sentIds.push(body.data.id);
      }),
    );
  }
  return { healthMs: median(health), sendMs: median(send), health, send, sentIds };
}
