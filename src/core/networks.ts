import { z } from 'zod';
import { announce } from './changes.js';
import type { Network } from './settings.js';
import type { Prisma } from '../generated/prisma/client.js';
import { describeIssues } from '../lib/validate.js';
import { NO_RPC_URLS, rpcEntries, type RpcEndpoint } from './rpc-urls.js';
import { invalid, notFound } from './domain-error.js';
import type { Runtime } from './runtime.js';
import { paged, toPage } from './page.js';

// Networks come from the config file; the API may change their RPC URLs (as the reference allows),
// kept in network_overrides and applied over the file's at every start. Ids are "type:name".

/** A network's id: "type:name". */
export const networkKey = (type: string, name: string) => `${type}:${name}`;

export function findNetwork(rt: Pick<Runtime, 'config'>, type: string, name: string): Network | undefined {
  return rt.config.networks.get(networkKey(type, name));
}

export const networkNotFound = (id: string) => notFound(`Network with ID ${id} not found`);

export interface NetworkView extends Network {
  id: string;
}

const view = (n: Network): NetworkView => ({ ...n, id: networkKey(n.type, n.name) });

/** A page of networks; `shows` narrows them to those the caller may read. */
export function listNetworks(rt: Runtime, page?: number | null, perPage?: number | null, shows: (id: string) => boolean = () => true) {
  const p = toPage(page, perPage);
  const all = () =>
    [...rt.config.networks.values()]
      .map(view)
      .filter((n) => shows(n.id))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return paged(
    p,
    async () => all().slice(p.skip, p.skip + p.perPage),
    async () => all().length,
  );
}

export function getNetwork(rt: Runtime, id: string): NetworkView {
  const n = rt.config.networks.get(id);
  if (!n) throw networkNotFound(id);
  return view(n);
}

/** Shown without what may be a credential: an RPC URL's path and query often carry an API key. */
export function maskRpcUrl(url: string): string {
  try {
    const u = new URL(url);
    const hidden = (u.pathname !== '/' && u.pathname !== '') || u.search || u.username || u.password;
    return `${u.protocol}//${u.host}${hidden ? '/***' : ''}`;
  } catch {
    return '***';
  }
}

export const updateInput = z
  .object({ rpcUrls: rpcEntries.min(1, NO_RPC_URLS).nullish().meta({ description: 'URLs, or `{ url, weight }` objects.' }) })
  .strict();
export type UpdateNetworkInput = { rpcUrls?: unknown[] | null };

export async function updateNetwork(rt: Runtime, id: string, input: UpdateNetworkInput): Promise<NetworkView> {
  // Bad input is refused as such (400) whether or not the network exists.
  const parsed = updateInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error));
  const network = getNetwork(rt, id);
  const { rpcUrls } = parsed.data;
  if (!rpcUrls) return network;
  await rt.db.prisma.networkOverride.upsert({
    where: { id },
    create: { id, rpcUrls: rpcUrls as unknown as Prisma.InputJsonArray },
    update: { rpcUrls: rpcUrls as unknown as Prisma.InputJsonArray },
  });
  const updated = { ...rt.config.networks.get(id)!, rpcUrls };
  rt.config.networks.set(id, updated);
  await announce(rt, { kind: 'network', id });
  return view(updated);
}

/** Applies the RPC URLs changed through the API over the file's (at start-up). */
export async function applyNetworkOverrides(rt: Pick<Runtime, 'db' | 'config'>, id?: string): Promise<void> {
  for (const o of await rt.db.prisma.networkOverride.findMany(id ? { where: { id } } : undefined)) {
    const n = rt.config.networks.get(o.id);
    if (n) rt.config.networks.set(o.id, { ...n, rpcUrls: o.rpcUrls as unknown as RpcEndpoint[] });
  }
}
