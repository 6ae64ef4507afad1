import { expect } from 'vitest';
import { startTestService, evmConfig, type TestService } from './service.js';

export const SEND = `mutation Send($relayerId: ID!, $input: SendTransactionInput!, $key: String) {
  sendTransaction(relayerId: $relayerId, input: $input, idempotencyKey: $key) { id status nonce hash }
}`;
export const TX = `query Tx($id: ID!) { transaction(id: $id) {
  id status statusReason nonce hash hashes sentAt confirmedAt gasLimit gasPrice maxFeePerGas maxPriorityFeePerGas speed from to value data validUntil networkData
} }`;

export const RECEIVER = '0x000000000000000000000000000000000000dEaD';
export const RELAYER = 'evm-relayer';

/** A JSON-RPC call straight to the node (anvil test controls included). */
export async function rpc<T = any>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

export async function send(svc: TestService, input: Record<string, unknown>, key?: string) {
  const r = await svc.gql(SEND, { relayerId: RELAYER, input, key });
  return r;
}

export async function sendOk(svc: TestService, input: Record<string, unknown> = { to: RECEIVER, value: '1' }) {
  const r = await send(svc, input);
  expect(r.errors).toBeUndefined();
  return r.data.sendTransaction as { id: string; status: string; nonce: number; hash: string | null };
}

export async function getTx(svc: TestService, id: string) {
  const r = await svc.gql(TX, { id });
  expect(r.errors).toBeUndefined();
  return r.data.transaction;
}

/** Polls until `done(tx)`; fails with the last state after `ms`. */
export async function waitFor(svc: TestService, id: string, done: (tx: any) => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  let tx: any;
  while (Date.now() < deadline) {
    tx = await getTx(svc, id);
    if (done(tx)) return tx;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out; last state: ${JSON.stringify(tx)}`);
}

export const waitStatus = (svc: TestService, id: string, status: string, ms?: number) => waitFor(svc, id, (t) => t.status === status, ms);

export { startTestService, evmConfig };

/** Waits until one of the transaction's broadcasts that `match` (as the node shows it) is known to the node. */
export async function waitBroadcast(svc: TestService, url: string, id: string, match: (onChain: any) => boolean, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const tx = await getTx(svc, id);
    for (const h of [...tx.hashes].reverse()) {
      const onChain = await rpc(url, 'eth_getTransactionByHash', [h]);
      if (onChain && match(onChain)) return { tx, hash: h as string, onChain };
    }
    if (Date.now() > deadline) throw new Error(`no matching broadcast of ${id} reached the node: ${JSON.stringify(tx)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Anvil's unlocked dev account #1: sends "from elsewhere" without touching the relayer's account. */
export const OTHER_ACCOUNT = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

// Init code of a contract whose every call reverts with Error("nope").
const REVERTER_RUNTIME = `7f08c379a0${'00'.repeat(28)}600052602060045260046024527f6e6f7065${'00'.repeat(28)}60445260646000fd`;
export const REVERTER_INIT_CODE = `0x6057600c60003960576000f3${REVERTER_RUNTIME}`;

/** Deploys the always-reverting contract from OTHER_ACCOUNT; returns its address. */
export async function deployReverter(url: string): Promise<string> {
  const hash = await rpc<string>(url, 'eth_sendTransaction', [{ from: OTHER_ACCOUNT, data: REVERTER_INIT_CODE }]);
  for (;;) {
    const receipt = await rpc<any>(url, 'eth_getTransactionReceipt', [hash]);
    if (receipt) return receipt.contractAddress;
    await rpc(url, 'evm_mine');
  }
}

/** An HTTP proxy in front of a node that can be switched off (answers 503) and on again. */
export async function switchableProxy(target = '') {
  const { createServer } = await import('node:http');
  let up = true;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      if (!up) {
        res.writeHead(503).end('down');
        return;
      }
      try {
        const upstream = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        res.writeHead(upstream.status, { 'content-type': 'application/json' }).end(await upstream.text());
      } catch {
        res.writeHead(502).end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    set: (on: boolean) => void (up = on),
    target: (url: string) => void (target = url),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** The statuses reported by transaction_update webhooks for one transaction, in order. */
export async function reportedStatuses(svc: TestService, id: string): Promise<string[]> {
  const rows = await svc.rt.db.prisma.delivery.findMany({ where: { transactionId: id, event: 'transaction_update' }, orderBy: { seq: 'asc' } });
  return rows.map((r) => JSON.parse(r.body).payload.status);
}
