// Every Prometheus metric of the service, defined once, on one registry per runtime (tests run
// several runtimes in one process). Instrumentation elsewhere is a one-line call on rt.metrics.
// The HTTP metrics keep the reference system's names (requests_total, request_latency_seconds,
// error_requests_total) so its dashboards work; the others are prefixed relayer_.
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import type { Transaction } from '../generated/prisma/client.js';
import type { HttpLabels, Metrics } from '../core/metrics.js';

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100];
const LIFETIME = [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 8 * 3600];
/** GraphQL operation names come from clients: at most this many distinct ones get their own label. */
const MAX_OPERATIONS = 200;
const OPERATION_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/;

const secondsBetween = (from: Date, to: Date) => (new Date(to).getTime() - new Date(from).getTime()) / 1000;

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const http = ['endpoint', 'method', 'status', 'operation'] as const;
  const requests = new Counter({
    name: 'requests_total',
    help: 'HTTP requests by route template, method, status and GraphQL operation',
    labelNames: http,
    registers,
  });
  const latency = new Histogram({ name: 'request_latency_seconds', help: 'HTTP request latency in seconds', labelNames: http, buckets: SECONDS, registers });
  const errors = new Counter({ name: 'error_requests_total', help: 'HTTP requests answered with a 4xx or 5xx status', labelNames: http, registers });
  const statusChanges = new Counter({
    name: 'relayer_transaction_status_changes_total',
    help: 'Transactions that entered a status (submitted, confirmed, failed, expired, ...), by relayer',
    labelNames: ['relayer_id', 'network_type', 'status'],
    registers,
  });
  const toSent = new Histogram({
    name: 'relayer_transaction_accepted_to_sent_seconds',
    help: 'Time from a transaction being accepted to its status sent',
    labelNames: ['relayer_id'],
    buckets: LIFETIME,
    registers,
  });
  const toConfirmed = new Histogram({
    name: 'relayer_transaction_accepted_to_confirmed_seconds',
    help: 'Time from a transaction being accepted to its status confirmed',
    labelNames: ['relayer_id'],
    buckets: LIFETIME,
    registers,
  });
  const pluginCalls = new Counter({
    name: 'relayer_plugin_calls_total',
    help: 'Plugin calls by plugin and outcome (ok, plugin_error, timeout, memory, exited, busy, refused)',
    labelNames: ['plugin_id', 'outcome'],
    registers,
  });
  const pluginLatency = new Histogram({
    name: 'relayer_plugin_call_duration_seconds',
    help: 'Plugin call latency in seconds, from the request to the answer (queueing included)',
    labelNames: ['plugin_id', 'outcome'],
    buckets: SECONDS,
    registers,
  });
  const seen = new Set<string>();
  return {
    registry,
    resubmissions: new Counter({
      name: 'relayer_transaction_resubmissions_total',
      help: 'Transactions signed again (fee bump, new blockhash) because the chain had not taken them in time',
      labelNames: ['relayer_id'],
      registers,
    }),
    nonceReconciliations: new Counter({
      name: 'relayer_nonce_reconciliations_total',
      help: "Corrections of a relayer's nonce counter to the chain's (moved_up, moved_back, gaps_filled)",
      labelNames: ['relayer_id', 'change'],
      registers,
    }),
    relayersDisabled: new Counter({
      name: 'relayer_relayers_disabled_total',
      help: 'Relayers disabled by a failed check',
      labelNames: ['relayer_id'],
      registers,
    }),
    deliveries: new Counter({
      name: 'relayer_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (success, retry, failed)',
      labelNames: ['outcome'],
      registers,
    }),
    rpcCalls: new Counter({
      name: 'relayer_rpc_requests_total',
      help: 'Chain RPC calls by network, method and outcome (ok, error: the node refused it, unavailable: no endpoint answered)',
      labelNames: ['network', 'method', 'outcome'],
      registers,
    }),
    rpcLatency: new Histogram({
      name: 'relayer_rpc_request_duration_seconds',
      help: 'Chain RPC call latency in seconds, failovers included',
      labelNames: ['network', 'method'],
      buckets: SECONDS,
      registers,
    }),
    signerCalls: new Counter({
      name: 'relayer_signer_calls_total',
      help: 'Signer custody calls by signer type, operation (public_key, sign) and outcome (ok, or the fault: unavailable, timeout, denied, not_found, wrong_key, disabled, rejected)',
      labelNames: ['signer_type', 'operation', 'outcome'],
      registers,
    }),
    signerLatency: new Histogram({
      name: 'relayer_signer_call_duration_seconds',
      help: 'Signer custody call latency in seconds',
      labelNames: ['signer_type', 'operation'],
      buckets: SECONDS,
      registers,
    }),
    userOperations: new Counter({
      name: 'relayer_user_operations_total',
      help: 'ERC-4337 UserOperations by outcome: accepted, included, reverted (included, its call reverted), failed (dropped or never included)',
      labelNames: ['relayer_id', 'outcome'],
      registers,
    }),
    bundleSize: new Histogram({
      name: 'relayer_bundle_size',
      help: 'UserOperations per handleOps transaction a relayer sends',
      labelNames: ['relayer_id'],
      buckets: [1, 2, 4, 8, 16, 32, 64],
      registers,
    }),

    request(method: string, labels: HttpLabels, status: number, seconds: number) {
      const l = { ...labels, method, status: String(status) };
      requests.inc(l);
      latency.observe(l, seconds);
      if (status >= 400) errors.inc(l);
    },
    operation(name: string | undefined): string {
      if (!name) return 'anonymous';
      if (!OPERATION_NAME.test(name)) return 'other';
      if (!seen.has(name) && seen.size >= MAX_OPERATIONS) return 'other';
      seen.add(name);
      return name;
    },
    pluginCall(pluginId: string, outcome: string, seconds: number) {
      pluginCalls.inc({ plugin_id: pluginId, outcome });
      pluginLatency.observe({ plugin_id: pluginId, outcome }, seconds);
    },
    statusChanged(rows: Transaction[]) {
      for (const tx of rows) {
        statusChanges.inc({ relayer_id: tx.relayerId, network_type: tx.networkType, status: tx.status });
        if (tx.status === 'sent' && tx.sentAt) toSent.observe({ relayer_id: tx.relayerId }, secondsBetween(tx.createdAt, tx.sentAt));
        if (tx.status === 'confirmed') toConfirmed.observe({ relayer_id: tx.relayerId }, secondsBetween(tx.createdAt, tx.confirmedAt ?? new Date()));
      }
    },
  };
}
