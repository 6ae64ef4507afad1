import { z } from 'zod';
import { announce } from './changes.js';
import type { Network, RpcEndpoint } from './settings.js';
import type { Prisma } from '../generated/prisma/client.js';
import { describeIssues, urlText } from '../lib/validate.js';
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

/** An RPC URL as the config file and the API take it: a URL, or a URL with its weight. */
export const rpcUrl = z.union([urlText.url(), z.object({ url: urlText.url(), weight: z.number().int().min(0).max(100).default(100) }).strict()]);

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
  .object({ rpcUrls: z.array(rpcUrl).min(1, 'must list at least one URL').max(20).nullish().meta({ description: 'URLs, or `{ url, weight }` objects.' }) })
  .strict();
export type UpdateNetworkInput = { rpcUrls?: unknown[] | null };

export async function updateNetwork(rt: Runtime, id: string, input: UpdateNetworkInput): Promise<NetworkView> {
  // Bad input is refused as such (400) whether or not the network exists.
  const parsed = updateInput.safeParse(input);
  if (!parsed.success) throw invalid(describeIssues(parsed.error).replace(/^rpcUrls/, 'rpc_urls'));
  for (const [i, u] of (parsed.data.rpcUrls ?? []).entries()) {
    const url = typeof u === 'string' ? u : u.url;
    if (!/^https?:\/\//i.test(url)) throw invalid(`rpc_urls[${i}]: must be an http(s) URL`);
  }
  const network = getNetwork(rt, id);
  if (!parsed.data.rpcUrls) return network;
  const rpcUrls: RpcEndpoint[] = parsed.data.rpcUrls.map((u) => (typeof u === 'string' ? { url: u, weight: 100 } : { url: u.url, weight: u.weight }));
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
