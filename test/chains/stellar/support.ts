// Helpers for the Stellar and Solana end-to-end tests: keystores, a webhook receiver, polling.
import { createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import { encryptKeystore } from '../../../src/signers/keystore.js';
import type { TestService } from '../../support/service.js';
import { subscribe as subscribeOverSse } from '../../support/subscribe.js';

export const KEYSTORE_PASSPHRASE = 'test-passphrase';
export const SIGNING_KEY = 'webhook-signing-key-0123456789abcdef';

/** A folder of keystores (cheap scrypt) holding fresh 32-byte ed25519 seeds. */
export async function keystores() {
  const dir = await mkdtemp(path.join(tmpdir(), 'relayer-keys-'));
  return {
    dir,
    async create(name: string, seed: Uint8Array = randomBytes(32)) {
      const file = path.join(dir, `${name}.json`);
      await writeFile(file, JSON.stringify(await encryptKeystore(seed, KEYSTORE_PASSPHRASE, { n: 1024 })));
      return { file, seed };
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

export function localSigner(id: string, file: string) {
  return { id, type: 'local', config: { path: file, passphrase: { type: 'plain', value: KEYSTORE_PASSPHRASE } } };
}

export interface Received {
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: any;
}

/** A webhook receiver on 127.0.0.1 that records every POST and answers 200. */
export async function startReceiver() {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push({ headers: req.headers, raw, body: JSON.parse(raw) });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    /** Statuses of one transaction's transaction_update events, in arrival order. */
    statusesOf: (txId: string) =>
      received.filter((r) => r.body.event === 'transaction_update' && r.body.payload?.id === txId).map((r) => r.body.payload.status),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const xSignatureValid = (r: Received) =>
  r.headers['x-signature'] === createHmac('sha256', Buffer.from(SIGNING_KEY, 'utf8')).update(r.raw, 'utf8').digest('base64');

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** POST through the REST surface; returns the HTTP status and the envelope. */
export async function send(svc: TestService, relayerId: string, body: unknown) {
  const res = await svc.request('POST', `/api/v1/relayers/${relayerId}/transactions`, body);
  return { status: res.status, json: (await res.json()) as any };
}

export async function getRecord(svc: TestService, relayerId: string, id: string) {
  const res = await svc.request('GET', `/api/v1/relayers/${relayerId}/transactions/${id}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as any).data;
}

/** Polls the REST record until its status is one of `statuses`; fails naming the last status seen. */
export async function waitForStatus(svc: TestService, relayerId: string, id: string, statuses: string[], timeoutMs = 15_000) {
  let last: any;
  try {
    return await waitFor(
      `${statuses.join('|')}`,
      async () => {
        last = await getRecord(svc, relayerId, id);
        return statuses.includes(last.status) ? last : undefined;
      },
      timeoutMs,
    );
  } catch {
    throw new Error(`transaction ${id} did not reach ${statuses.join('|')}; last: ${last?.status} (${last?.status_reason ?? ''})`);
  }
}

/** A Bad Request answer whose detail matches `pattern`. */
export function expectBadRequest(r: { status: number; json: any }, pattern: RegExp) {
  expect(r.status, JSON.stringify(r.json)).toBe(400);
  expect(r.json).toMatchObject({ success: false, data: null, message: 'Bad Request' });
  expect(r.json.error).toMatch(pattern);
}

/** A GraphQL subscription over SSE through the app (no port): its `next` payloads, as they come. */
export function subscribe(svc: TestService, query: string, variables: object) {
  const { events, response, close } = subscribeOverSse(svc.app, query, variables, svc.apiKey);
  return { events, opened: response, close };
}
