import type { Network } from '../../core/settings.js';
import type { RpcEndpoint } from '../../core/rpc-urls.js';
import { endpointsOf } from '../plumbing.js';
import { signerKey } from '../../core/signers.js';
import type { Relayer } from '../../generated/prisma/client.js';
import { readEvmPolicy, type EvmPolicy } from './request.js';
import type { Runtime } from '../../core/runtime.js';
import { findNetwork } from '../../core/networks.js';
import type { EvmSigner } from '../../signers/index.js';
import { createEvmRpc, type EvmRpc } from './rpc-client.js';
import { slot } from '../../core/state.js';
import { ExpiringMap } from '../../lib/expiring.js';
import { rpcObserver } from '../rpc-observer.js';

/** Everything the pipeline needs to act for one EVM relayer, resolved from its row and the config. */
export interface EvmContext {
  relayer: Relayer;
  network: Network;
  chainId: number;
  rpc: EvmRpc;
  policy: EvmPolicy;
  /** EIP-1559 pricing: the network has the feature and the policy does not turn it off. */
  eip1559: boolean;
  blocktimeMs: number;
  requiredConfirmations: number;
  signer: EvmSigner | undefined;
}

const DEFAULT_BLOCKTIME_MS = 12_000;

export class EvmSetupError extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

// One client per distinct endpoint list in a runtime, so endpoint health (cooldowns) is shared by
// every relayer and every request that uses it. Only a cache: nothing about a transaction lives
// here; a list unused for CLIENT_IDLE_MS (a changed custom_rpc_urls) is let go.
const CLIENT_IDLE_MS = 10 * 60_000;
const CLIENTS = slot('evm rpc clients', () => new ExpiringMap<string, EvmRpc>(CLIENT_IDLE_MS, { touch: true }));

export const rpcEndpoints = (_rt: Pick<Runtime, 'config'>, relayer: Relayer, network: Network): RpcEndpoint[] => endpointsOf(relayer, network.rpcUrls);

export function rpcFor(rt: Runtime, endpoints: RpcEndpoint[], key = JSON.stringify(endpoints)): EvmRpc {
  return rt.state(CLIENTS).getOrCreate(key, () =>
    createEvmRpc(endpoints, {
      timeoutMs: 8_000,
      retries: Math.max(2, endpoints.length),
      cooldownMs: 15_000,
      logger: rt.log,
      observe: rpcObserver(rt, 'evm', endpoints),
    }),
  );
}

// What a context reads from a relayer row and its network, worked out once per row as read (the
// API's and the worker's snapshots are kept until the row changes) and network: every send and
// every step builds a context.
const PARTS = slot('evm context parts', () => new WeakMap<Relayer, { network: Network; policy: EvmPolicy; endpoints: RpcEndpoint[]; key: string }>());

function partsOf(rt: Runtime, relayer: Relayer, network: Network) {
  const memo = rt.state(PARTS);
  let parts = memo.get(relayer);
  if (parts?.network !== network) {
    const endpoints = rpcEndpoints(rt, relayer, network);
    parts = { network, policy: readEvmPolicy(relayer.policies), endpoints, key: JSON.stringify(endpoints) };
    memo.set(relayer, parts);
  }
  return parts;
}

export function evmContext(rt: Runtime, relayer: Relayer): EvmContext {
  const network = findNetwork(rt, 'evm', relayer.network);
  if (!network) throw new EvmSetupError('NetworkNotFound', `network "${relayer.network}" is not in the configuration`);
  if (network.chainId === undefined) throw new EvmSetupError('NetworkNotFound', `network "${relayer.network}" has no chain_id`);
  const { policy, endpoints, key } = partsOf(rt, relayer, network);
  const signer = rt.signers.loaded.get(signerKey(relayer.signerId, 'evm'));
  return {
    relayer,
    network,
    chainId: network.chainId,
    rpc: rpcFor(rt, endpoints, key),
    policy,
    eip1559: network.features.includes('eip1559') && policy.eip1559_pricing !== false,
    blocktimeMs: network.averageBlocktimeMs ?? DEFAULT_BLOCKTIME_MS,
    requiredConfirmations: Math.max(1, network.requiredConfirmations),
    signer: signer?.kind === 'evm' && signer.address.toLowerCase() === relayer.address.toLowerCase() ? signer : undefined,
  };
}
