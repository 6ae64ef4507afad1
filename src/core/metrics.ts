// What the service counts, as the runtime carries it: declared here, below the composition root
// that fills it in (src/metrics builds every instrument on one registry per runtime).
import type { Counter, Histogram, Registry } from 'prom-client';
import type { Transaction } from '../generated/prisma/client.js';

/** Where an HTTP request went, filled in by whoever matched it (route template, GraphQL operation); never an id. */
export interface HttpLabels {
  endpoint: string;
  operation: string;
}

export interface Metrics {
  registry: Registry;
  resubmissions: Counter<'relayer_id'>;
  nonceReconciliations: Counter<'relayer_id' | 'change'>;
  relayersDisabled: Counter<'relayer_id'>;
  deliveries: Counter<'outcome'>;
  rpcCalls: Counter<'network' | 'method' | 'outcome'>;
  rpcLatency: Histogram<'network' | 'method'>;
  signerCalls: Counter<'signer_type' | 'operation' | 'outcome'>;
  signerLatency: Histogram<'signer_type' | 'operation'>;
  /** ERC-4337 operations by outcome: accepted, included, reverted (included, its call failed), failed. */
  userOperations: Counter<'relayer_id' | 'outcome'>;
  /** Operations per handleOps transaction. */
  bundleSize: Histogram<'relayer_id'>;
  /** One answered HTTP request. */
  request(method: string, labels: HttpLabels, status: number, seconds: number): void;
  /** The label of a GraphQL operation name: anonymous, its name, or other once too many names were seen. */
  operation(name: string | undefined): string;
  /** One plugin call answered. */
  pluginCall(pluginId: string, outcome: string, seconds: number): void;
  /** Status changes as written (the outbox's events, in order). */
  statusChanged(rows: Transaction[]): void;
}
