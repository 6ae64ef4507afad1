import { readdir, readFile } from 'node:fs/promises';
import { postJson } from '../lib/post.js';
import type { Network } from './settings.js';
import type { Runtime } from './runtime.js';
import { findNetwork } from './networks.js';
import { slot } from './state.js';

// Readiness (GET /api/v1/ready): the database, Redis when configured, and the RPC of every network a
// relayer uses. The body follows the reference's ReadinessResponse, with `database` and `networks`
// added; the verdict is cached a few seconds so a busy prober does not load the nodes.

export type ComponentStatus = 'healthy' | 'degraded' | 'unhealthy';

export interface Readiness {
  ready: boolean;
  status: ComponentStatus;
  reason?: string;
  timestamp: string;
  components: {
    system: { status: ComponentStatus; fd_count: number; fd_limit: number; fd_usage_percent: number; close_wait_count: number; error?: string };
    database: { status: ComponentStatus; kind: string; error?: string };
    redis: { status: ComponentStatus; configured: boolean; primary_pool: Pool; reader_pool: Pool; error?: string };
    queue: { status: ComponentStatus; error?: string };
    networks: { id: string; status: ComponentStatus; error?: string }[];
  };
}

interface Pool {
  connected: boolean;
  available: number;
  max_size: number;
  error?: string;
}

export const READY_CACHE_MS = 5_000;
const PROBE_TIMEOUT_MS = 3_000;
/** The last readiness verdict and when it was asked for. */
const VERDICT = slot('readiness', (): { at: number; verdict: Promise<Readiness> | undefined } => ({ at: 0, verdict: undefined }));

/** The readiness verdict, at most READY_CACHE_MS old. */
export function readiness(rt: Runtime, now = Date.now()): Promise<Readiness> {
  const cache = rt.state(VERDICT);
  if (!cache.verdict || now - cache.at >= READY_CACHE_MS) {
    cache.at = now;
    cache.verdict = checkReadiness(rt);
  }
  return cache.verdict;
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 200);

function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

function answerOf(text: string): { result?: unknown; error?: { message?: string } } | null {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** A network answers when one of its RPC URLs answers its family's probe `method`. */
async function probeNetwork(network: Network, method: string): Promise<void> {
  let last: unknown;
  for (const { url } of network.rpcUrls) {
    try {
      const res = await postJson(new URL(url), JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: [] }), PROBE_TIMEOUT_MS);
      const body = answerOf(res.text);
      if (res.ok && typeof body === 'object' && body && 'result' in body) return;
      last = new Error(body?.error?.message ?? `HTTP ${res.status}`);
    } catch (e) {
      last = e;
    }
  }
  throw last ?? new Error('no RPC URL');
}

async function fileDescriptors() {
  const count = await readdir('/proc/self/fd').then(
    (l) => l.length,
    () => 0,
  );
  const limits = await readFile('/proc/self/limits', 'utf8').catch(() => '');
  const limit = Number(/Max open files\s+(\d+)/.exec(limits)?.[1] ?? 0);
  return { fd_count: count, fd_limit: limit, fd_usage_percent: limit ? Math.round((count / limit) * 100) : 0 };
}

async function checkReadiness(rt: Runtime): Promise<Readiness> {
  const failures: string[] = [];
  const database: Readiness['components']['database'] = { status: 'healthy', kind: rt.db.kind };
  let networksUsed: { network: string; networkType: string }[] = [];
  try {
    await withTimeout(rt.db.prisma.$queryRawUnsafe('SELECT 1'), 'the database');
    networksUsed = await rt.db.prisma.relayer.findMany({ distinct: ['networkType', 'network'], select: { network: true, networkType: true } });
  } catch (e) {
    Object.assign(database, { status: 'unhealthy', error: messageOf(e) });
    failures.push(`database: ${database.error}`);
  }

  const pool = (connected: boolean, error?: string): Pool => ({
    connected,
    available: connected ? 1 : 0,
    max_size: rt.redisPing ? 1 : 0,
    ...(error ? { error } : {}),
  });
  let redis: Readiness['components']['redis'] = { status: 'healthy', configured: false, primary_pool: pool(false), reader_pool: pool(false) };
  if (rt.redisPing) {
    try {
      await withTimeout(rt.redisPing(), 'Redis');
      redis = { status: 'healthy', configured: true, primary_pool: pool(true), reader_pool: pool(true) };
    } catch (e) {
      const error = messageOf(e);
      redis = { status: 'unhealthy', configured: true, primary_pool: pool(false, error), reader_pool: pool(false, error), error };
      failures.push(`redis: ${error}`);
    }
  }

  const networks = await Promise.all(
    networksUsed.map(async ({ network, networkType }) => {
      const id = `${networkType}:${network}`;
      const found = findNetwork(rt, networkType, network);
      try {
        if (!found) throw new Error('not configured');
        await probeNetwork(found, rt.families.spec(found.type).network.probe);
        return { id, status: 'healthy' as const };
      } catch (e) {
        const error = messageOf(e);
        failures.push(`network ${id}: ${error}`);
        return { id, status: 'unhealthy' as const, error };
      }
    }),
  );

  const ready = failures.length === 0;
  return {
    ready,
    status: ready ? 'healthy' : 'unhealthy',
    ...(ready ? {} : { reason: failures.join('; ') }),
    timestamp: new Date().toISOString(),
    components: {
      system: { status: 'healthy', ...(await fileDescriptors()), close_wait_count: 0 /* not measured */ },
      database,
      redis,
      // The work queues are tables of the database.
      queue: database.status === 'healthy' ? { status: 'healthy' } : { status: 'unhealthy', error: 'the database is unavailable' },
      networks,
    },
  };
}
