// Plumbing shared by the non-EVM chain families (Stellar, Solana); the core (core/step-runner.ts) writes their rows.
import type { RpcEndpoint } from '../core/rpc-urls.js';
import type { Relayer } from '../generated/prisma/client.js';
import { RelayerCheckError } from '../core/domain-error.js';
import type { Runtime } from '../core/runtime.js';
import { slot } from '../core/state.js';
import { ExpiringMap } from '../lib/expiring.js';

/** For `checkRelayer`: the family's context, a failure to build it being the relayer's configuration error. */
export function contextForCheck<C>(build: () => C): C {
  try {
    return build();
  } catch (e) {
    throw new RelayerCheckError('ConfigurationError', (e as Error).message);
  }
}

/** The relayer's own RPC URLs when it has any, else its network's. */
export function endpointsOf(relayer: Pick<Relayer, 'customRpcUrls'>, networkUrls: RpcEndpoint[]): RpcEndpoint[] {
  // Kept as the RPC URL schema (core/rpc-urls.ts) gave them: every weight set.
  const custom = relayer.customRpcUrls as RpcEndpoint[] | null;
  return custom && custom.length > 0 ? custom : networkUrls;
}

const CLIENT_IDLE_MS = 10 * 60_000;

/**
 * One client per endpoint list in each runtime, so endpoint health (cooldowns) is shared by all its
 * users; a list unused for CLIENT_IDLE_MS (a changed custom_rpc_urls) is let go.
 */
export function clientCache<C>(name: string, create: (endpoints: RpcEndpoint[], rt: Runtime) => C): (rt: Runtime, endpoints: RpcEndpoint[]) => C {
  const clients = slot(name, () => new ExpiringMap<string, C>(CLIENT_IDLE_MS, { touch: true }));
  return (rt, endpoints) => rt.state(clients).getOrCreate(JSON.stringify(endpoints), () => create(endpoints, rt));
}

/** A 64-bit integer for JSON: a number while it is exact, else a decimal string (as the Long scalar). */
export const long = (n: bigint): number | string => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString());
