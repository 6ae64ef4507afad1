import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEnv } from '../../src/config/env.js';
import { hookConfig } from '../support/notifications.js';
import { startReceiver, waitFor } from '../support/receiver.js';
import { parseMetrics, type Series } from '../support/metrics.js';
import { DEV_ADDRESS, type evmConfig, startTestService, type TestService } from '../support/service.js';

const RECEIVER = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8';

/** The samples of `name` whose labels include `labels`. */
const find = (all: Series[], name: string, labels: Record<string, string> = {}) =>
  all.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
const sum = (all: Series[], name: string, labels: Record<string, string> = {}) => find(all, name, labels).reduce((a, s) => a + s.value, 0);

describe('Prometheus metrics', () => {
  let service: TestService;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let metricsUrl: string;
  const scrape = async (path = '/metrics') => {
    const res = await fetch(metricsUrl + path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return parseMetrics(await res.text());
  };

  beforeAll(async () => {
    receiver = await startReceiver();
    service = await startTestService({
      anvil: true,
      config: (ctx) => {
        const c = hookConfig(receiver.url)(ctx) as ReturnType<typeof evmConfig>;
        // A relayer whose network answers nothing: its check disables it.
        c.networks.push({ ...c.networks[0], network: 'deadnet', rpc_urls: ['http://127.0.0.1:1'] });
        c.relayers.push({ ...c.relayers[0], id: 'dead-relayer', network: 'deadnet', notification_id: undefined } as never);
        return c;
      },
      env: { METRICS_ENABLED: 'true', METRICS_PORT: '0' },
    });
    expect(service.metricsPort).toBeGreaterThan(0);
    metricsUrl = `http://127.0.0.1:${service.metricsPort}`;
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it('after a relayed transaction and its webhooks, each metric has the right labels and values', async () => {
    const sent = await service.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 1000, speed: 'fast' });
    expect(sent.status).toBe(200);
    const id = (await sent.json()).data.id as string;
    await waitFor(
      async () => {
        const res = await service.request('GET', `/api/v1/relayers/evm-relayer/transactions/${id}`);
        return (await res.json()).data.status === 'confirmed';
      },
      'the transaction to be confirmed',
      60_000,
    );
    const named = await service.request('POST', '/graphql', { query: 'query Mine { relayers { items { id } } }' });
    expect(named.status).toBe(200);
    expect((await service.request('GET', '/api/v1/relayers/no-such-relayer')).status).toBe(404);
    // Every status change was delivered, and the outcome of the last one recorded.
    await waitFor(() => receiver.received.some((r) => r.body?.payload?.id === id && r.body.payload.status === 'confirmed'), 'the confirmed webhook', 30_000);
    const delivered = await waitFor(async () => {
      const pending = await service.rt.db.prisma.delivery.count({ where: { status: 'pending' } });
      return pending === 0 && (await service.rt.db.prisma.delivery.count({ where: { status: 'delivered' } }));
    }, 'every delivery recorded');
    await waitFor(async () => (await service.rt.db.prisma.relayer.findUnique({ where: { id: 'dead-relayer' } }))?.systemDisabled, 'the dead relayer disabled');

    const all = await scrape();

    // HTTP: route templates and operation names, never ids.
    const send = { endpoint: '/api/v1/relayers/{relayer_id}/transactions', method: 'POST', status: '200' };
    expect(sum(all, 'requests_total', send)).toBe(1);
    expect(sum(all, 'request_latency_seconds_count', send)).toBe(1);
    expect(find(all, 'requests_total', send)[0].labels.operation).toMatch(/^\w+$/);
    expect(
      sum(all, 'requests_total', { endpoint: '/api/v1/relayers/{relayer_id}/transactions/{transaction_id}', method: 'GET', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    expect(sum(all, 'requests_total', { endpoint: '/graphql', method: 'POST', status: '200', operation: 'Mine' })).toBe(1);
    const notFound = { endpoint: '/api/v1/relayers/{relayer_id}', method: 'GET', status: '404' };
    expect(sum(all, 'requests_total', notFound)).toBe(1);
    expect(sum(all, 'error_requests_total', notFound)).toBe(1);
    expect(sum(all, 'error_requests_total', send)).toBe(0);
    expect(all.some((s) => Object.values(s.labels).some((v) => v.includes(id) || v.includes('no-such-relayer')))).toBe(false);

    // Transactions: the gauge from the database, the status counters, the time histograms.
    const relayer = { relayer_id: 'evm-relayer' };
    expect(find(all, 'relayer_transactions', relayer).map((s) => [s.labels.status, s.value])).toEqual([['confirmed', 1]]);
    for (const status of ['sent', 'submitted', 'mined', 'confirmed']) {
      expect(sum(all, 'relayer_transaction_status_changes_total', { ...relayer, status, network_type: 'evm' }), status).toBe(1);
    }
    expect(sum(all, 'relayer_transaction_status_changes_total', { status: 'failed' })).toBe(0);
    expect(sum(all, 'relayer_transaction_accepted_to_sent_seconds_count', relayer)).toBe(1);
    expect(sum(all, 'relayer_transaction_accepted_to_confirmed_seconds_count', relayer)).toBe(1);
    expect(sum(all, 'relayer_transaction_accepted_to_confirmed_seconds_sum', relayer)).toBeGreaterThan(0);
    expect(sum(all, 'relayer_transactions_due')).toBe(0);
    expect(sum(all, 'relayer_transactions_oldest_due_age_seconds')).toBe(0);

    // Webhooks: one success per delivered event, nothing undelivered.
    expect(sum(all, 'relayer_webhook_deliveries_total', { outcome: 'success' })).toBe(delivered);
    expect(delivered).toBeGreaterThanOrEqual(5); // pending, sent, submitted, mined, confirmed
    expect(sum(all, 'relayer_webhook_deliveries_total', { outcome: 'failed' })).toBe(0);
    expect(sum(all, 'relayer_webhook_deliveries_pending')).toBe(0);
    expect(sum(all, 'relayer_webhook_oldest_pending_age_seconds')).toBe(0);

    // RPC: by configured network name, method and outcome.
    expect(sum(all, 'relayer_rpc_requests_total', { network: 'localnet', method: 'eth_chainId', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sum(all, 'relayer_rpc_request_duration_seconds_count', { network: 'localnet', method: 'eth_chainId' })).toBeGreaterThanOrEqual(1);
    expect(sum(all, 'relayer_rpc_requests_total', { network: 'deadnet', method: 'eth_chainId', outcome: 'unavailable' })).toBeGreaterThanOrEqual(1);

    // Relayers disabled, resubmissions and nonce corrections: none on a healthy chain but the dead one.
    expect(sum(all, 'relayer_relayers_disabled_total', { relayer_id: 'dead-relayer' })).toBe(1);
    expect(sum(all, 'relayer_relayers_disabled_total', relayer)).toBe(0);
    expect(sum(all, 'relayer_transaction_resubmissions_total')).toBe(0);
    expect(sum(all, 'relayer_nonce_reconciliations_total')).toBe(0);

    // The balance as the chain has it.
    const onChain = await rpc(service.anvil!.url, 'eth_getBalance', [DEV_ADDRESS, 'latest']);
    expect(sum(all, 'relayer_balance', { ...relayer, network: 'localnet' })).toBe(Number(BigInt(onChain)));
    expect(find(all, 'relayer_balance', { relayer_id: 'dead-relayer' })).toEqual([]);

    // Process metrics come along.
    expect(find(all, 'process_resident_memory_bytes').length).toBe(1);
  }, 120_000);

  it('the reference system scrape path serves the same; anything else on the metrics port is a 404, and the API port has no metrics', async () => {
    const again = await scrape('/debug/metrics/scrape');
    expect(find(again, 'requests_total').length).toBeGreaterThan(0);
    for (const path of ['/', '/metrics/x', '/graphql', '/api/v1/relayers', '/v1/health']) {
      const res = await fetch(metricsUrl + path);
      expect(res.status, path).toBe(404);
    }
    expect((await fetch(`${metricsUrl}/metrics`, { method: 'POST', body: 'x' })).status).toBe(404);
    for (const path of ['/metrics', '/debug/metrics/scrape']) {
      const res = await service.request('GET', path);
      expect(res.status, path).toBe(404);
      expect(await res.text()).not.toContain('requests_total');
    }
  });
});

async function rpc(url: string, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return (await res.json()).result;
}

describe('work waiting', () => {
  it('a transaction and a webhook no worker has taken show as due, with their age', async () => {
    const receiver = await startReceiver();
    // No workers: what is accepted stays due.
    const service = await startTestService({
      anvil: true,
      config: hookConfig(receiver.url),
      workers: false,
      env: { METRICS_ENABLED: 'true', METRICS_PORT: '0' },
    });
    try {
      const sent = await service.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 1 });
      expect(sent.status).toBe(200);
      await new Promise((r) => setTimeout(r, 1_500));
      const all = parseMetrics(await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text());
      expect(find(all, 'relayer_transactions').map((s) => [s.labels.relayer_id, s.labels.status, s.value])).toEqual([['evm-relayer', 'pending', 1]]);
      expect(sum(all, 'relayer_transactions_due')).toBe(1);
      expect(sum(all, 'relayer_transactions_oldest_due_age_seconds')).toBeGreaterThanOrEqual(1);
      expect(sum(all, 'relayer_webhook_deliveries_pending')).toBe(1);
      expect(sum(all, 'relayer_webhook_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(1);
      expect(receiver.received).toEqual([]);
    } finally {
      await service.stop();
      await receiver.close();
    }
  }, 60_000);
});

describe('chain trouble', () => {
  it('a chain that stops mining shows as resubmissions; a nonce used behind the relayer’s back as a nonce correction at the next start', async () => {
    let service = await startTestService({ anvil: true, env: { METRICS_ENABLED: 'true', METRICS_PORT: '0' } });
    try {
      const url = service.anvil!.url;
      const metrics = async () => parseMetrics(await (await fetch(`http://127.0.0.1:${service.metricsPort}/metrics`)).text());
      const relayer = { relayer_id: 'evm-relayer' };
      await waitFor(async () => (await service.rt.db.prisma.relayer.findUnique({ where: { id: 'evm-relayer' } }))?.nextNonce !== null, 'the relayer check');
      await rpc(url, 'evm_setAutomine', [false]);
      const sent = await service.request('POST', '/api/v1/relayers/evm-relayer/transactions', { to: RECEIVER, value: 2 });
      expect(sent.status).toBe(200);
      const id = (await sent.json()).data.id;
      await waitFor(async () => sum(await metrics(), 'relayer_transaction_resubmissions_total', relayer) >= 1, 'a resubmission', 30_000);
      await rpc(url, 'evm_setAutomine', [true]);
      await rpc(url, 'evm_mine', []);
      await waitFor(
        async () => (await (await service.request('GET', `/api/v1/relayers/evm-relayer/transactions/${id}`)).json()).data.status === 'confirmed',
        'confirmed',
        30_000,
      );
      expect(sum(await metrics(), 'relayer_nonce_reconciliations_total')).toBe(0);

      // Someone else uses the account's next nonce; the start-up check moves the counter up to the chain.
      await rpc(url, 'eth_sendTransaction', [{ from: DEV_ADDRESS, to: RECEIVER, value: '0x1' }]);
      service = await service.restart();
      await waitFor(
        async () => sum(await metrics(), 'relayer_nonce_reconciliations_total', { ...relayer, change: 'moved_up' }) === 1,
        'the nonce correction',
        30_000,
      );
      expect((await service.rt.db.prisma.relayer.findUnique({ where: { id: 'evm-relayer' } }))?.nextNonce).toBe(2n);
    } finally {
      await service.stop();
    }
  }, 120_000);
});

describe('settings', () => {
  it('metrics are off unless METRICS_ENABLED, on port 8081 by default; bad values are refused by name', () => {
    expect(parseEnv({}).metrics).toEqual({ enabled: false, port: 8081 });
    expect(parseEnv({}).shutdownTimeoutMs).toBe(10_000);
    expect(parseEnv({ METRICS_ENABLED: 'true', METRICS_PORT: '9100', SHUTDOWN_TIMEOUT_MS: '2500' })).toMatchObject({
      metrics: { enabled: true, port: 9100 },
      shutdownTimeoutMs: 2500,
    });
    expect(() => parseEnv({ METRICS_ENABLED: 'sometimes', METRICS_PORT: '70000', SHUTDOWN_TIMEOUT_MS: '-1' })).toThrow(
      /METRICS_ENABLED: must be true or false[\s\S]*METRICS_PORT[\s\S]*SHUTDOWN_TIMEOUT_MS/,
    );
  });
});
