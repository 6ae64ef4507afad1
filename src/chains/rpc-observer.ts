import type { Runtime } from '../core/runtime.js';

type Endpoint = string | { url: string };
const urlOf = (e: Endpoint) => (typeof e === 'string' ? e : e.url);

/**
 * The `observe` hook of a chain RPC client (chains/jsonrpc.ts): counts and times each call under
 * the name of the configured network whose endpoints these are ("custom" for a relayer's own).
 */
export function rpcObserver(rt: Pick<Runtime, 'config' | 'metrics'>, type: string, endpoints: Endpoint[]) {
  const urls = endpoints.map(urlOf).sort().join(' ');
  const network = [...rt.config.networks.values()].find((n) => n.type === type && n.rpcUrls.map(urlOf).sort().join(' ') === urls)?.name ?? 'custom';
  return (method: string, outcome: string, seconds: number) => {
    rt.metrics.rpcCalls.inc({ network, method, outcome });
    rt.metrics.rpcLatency.observe({ network, method }, seconds);
  };
}
