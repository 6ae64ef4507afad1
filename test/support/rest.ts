import { expect } from 'vitest';
import type { Prisma } from '../../src/generated/prisma/client.js';
import type { Runtime } from '../../src/core/runtime.js';
import { DEV_ADDRESS, evmConfig, startTestService, type TestService } from './service.js';
import { checkResponses } from './openapi-check.js';

export const SOLANA_RELAYER = 'solana-relayer';
export const STELLAR_RELAYER = 'stellar-relayer';
export const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/**
 * The whole service without workers or a chain: the EVM relayer of evmConfig, and a Solana and a
 * Stellar relayer on the same dev key (their RPC URLs lead nowhere; the REST tests never get that far).
 * Every response it gives is checked against its OpenAPI document (openapi-check.ts).
 */
export async function startRestService(opts: Parameters<typeof startTestService>[0] = {}): Promise<TestService> {
  const svc = await startTestService({
    workers: false,
    config: ({ rpcUrl }) => {
      const c = evmConfig(rpcUrl);
      return {
        ...c,
        relayers: [
          ...c.relayers,
          { id: SOLANA_RELAYER, name: 'Solana relayer', network: 'devnet', network_type: 'solana', signer_id: 'dev-signer', policies: {} },
          { id: STELLAR_RELAYER, name: 'Stellar relayer', network: 'testnet', network_type: 'stellar', signer_id: 'dev-signer', policies: {} },
        ],
        networks: [
          ...c.networks,
          { type: 'solana', network: 'devnet', rpc_urls: ['http://127.0.0.1:1'], is_testnet: true },
          { type: 'stellar', network: 'testnet', rpc_urls: ['http://127.0.0.1:1'], passphrase: 'Test SDF Network ; September 2015', is_testnet: true },
        ],
      };
    },
    ...opts,
  });
  await checkResponses(svc.app);
  return svc;
}

let seq = 0;

/** Writes a transaction row directly, as the pipeline would have left it. */
export async function seedTransaction(rt: Runtime, data: Partial<Prisma.TransactionUncheckedCreateInput> = {}) {
  seq += 1;
  return rt.db.prisma.transaction.create({
    data: {
      relayerId: 'evm-relayer',
      networkType: 'evm',
      from: DEV_ADDRESS,
      to: RECEIVER,
      value: '1000000000000000000',
      data: '0x',
      nonce: BigInt(seq),
      gasLimit: 21000n,
      maxFeePerGas: '30000000000',
      maxPriorityFeePerGas: '1500000000',
      speed: 'fast',
      request: {},
      createdAt: new Date(Date.UTC(2030, 0, 1, 0, 0, seq)),
      validUntil: new Date(Date.UTC(2030, 0, 1, 8)),
      ...data,
    },
  });
}

/** Everything the REST routes can change, to show a refused request changed nothing. */
export async function dbState(rt: Runtime): Promise<string> {
  const [relayers, transactions, notifications, deliveries] = await Promise.all([
    rt.db.prisma.relayer.findMany({ orderBy: { id: 'asc' } }),
    rt.db.prisma.transaction.findMany({ orderBy: { id: 'asc' } }),
    rt.db.prisma.notification.findMany({ orderBy: { id: 'asc' } }),
    rt.db.prisma.delivery.findMany({ orderBy: { id: 'asc' } }),
  ]);
  return JSON.stringify({ relayers, transactions, notifications, deliveries }, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
}

export interface Envelope {
  success: boolean;
  data: any;
  error: string | null;
  message?: string;
  metadata: { logs: unknown[]; traces: unknown[] };
  pagination?: { current_page: number; per_page: number; total_items: number };
}

/** The response body, checked to be the spec's envelope (2.1) in the success or error form. */
export async function envelope(res: Response): Promise<Envelope> {
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = (await res.json()) as Envelope;
  expect(body.metadata).toEqual({ logs: [], traces: [] });
  if (res.status < 400) {
    expect(body.success).toBe(true);
    expect(body.error).toBeNull();
  } else {
    expect(body).toMatchObject({ success: false, data: null });
    expect(typeof body.message).toBe('string');
    expect(typeof body.error).toBe('string');
  }
  return body;
}

/** Status and envelope of an error response. */
export async function expectError(res: Response, status: number, message: string, error?: string | RegExp) {
  const body = await envelope(res);
  expect({ status: res.status, message: body.message }).toEqual({ status, message });
  if (error !== undefined) expect(body.error).toMatch(error);
  return body;
}
