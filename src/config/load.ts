import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import { parseJson } from '../lib/json.js';
import { networkKey } from '../core/networks.js';
import { NO_RPC_URLS } from '../core/rpc-urls.js';
import type { FamilySpecs } from '../core/registry.js';
import { relayerEntry } from '../core/relayers/entry.js';
import { parsePolicies } from '../core/relayers/policies.js';
import type { Custodies } from '../signers/custody.js';
import type { Config, Network, NotificationConfig, RelayerConfig, SignerConfig } from '../core/settings.js';
import type { PluginConfig } from '../core/plugins/settings.js';
import { configFile, localConfig, networkEntry, notificationEntry, pluginEntry, signerEntry, type Secret } from './schema.js';

/** The `{ "type": "env" }` secrets in a parsed custody config, with where each is. */
function* envSecrets(value: unknown, at: string): Generator<{ name: string; at: string }> {
  if (!value || typeof value !== 'object') return;
  const v = value as Record<string, unknown>;
  if (v.type === 'env' && typeof v.value === 'string' && Object.keys(v).length === 2) yield { name: v.value, at };
  else for (const [k, inner] of Object.entries(v)) yield* envSecrets(inner, `${at}.${k}`);
}

export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`invalid config ${file}:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

const entryName = (section: string, i: number, raw: unknown) => {
  const id = raw && typeof raw === 'object' ? ((raw as { id?: unknown; network?: unknown }).id ?? (raw as { network?: unknown }).network) : undefined;
  return typeof id === 'string' ? `${section}[${i}] ("${id}")` : `${section}[${i}]`;
};

function issues(where: string, error: z.ZodError): string[] {
  return error.issues.map((i) => `${where}${i.path.length ? `.${i.path.join('.')}` : ''}: ${i.message}`);
}

/**
 * Reads and checks the whole file against the chain families offered; every problem is reported at
 * once, naming the entry and field.
 */
export async function loadConfig(
  file: string,
  families: FamilySpecs,
  env: Record<string, string | undefined> = process.env,
  custodies: Custodies = new Map(),
): Promise<Config> {
  const networkSchema = networkEntry(families);
  const relayerSchema = relayerEntry(families.types);
  const problems: string[] = [];
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ConfigError(file, [`cannot read the file: ${(e as NodeJS.ErrnoException).code ?? String(e)}`]);
  }
  let json: unknown;
  try {
    json = parseJson(text);
  } catch (e) {
    throw new ConfigError(file, [`not valid JSON: ${(e as Error).message}`]);
  }
  const top = configFile.safeParse(json);
  if (!top.success) throw new ConfigError(file, issues('(top level)', top.error));
  const base = path.dirname(file);

  const resolveSecret = (s: Secret, where: string): string | undefined => {
    if (s.type === 'plain') return s.value;
    const v = env[s.value];
    if (v === undefined || v === '') problems.push(`${where}: environment variable ${s.value} is not set`);
    return v;
  };

  // Networks: an inline array, or a directory (or file) of JSON files each holding { "networks": [...] }.
  const rawNetworks: { raw: unknown; where: string }[] = [];
  if (typeof top.data.networks === 'string') {
    const dir = path.resolve(base, top.data.networks);
    const files = existsSync(dir)
      ? ((await readdir(dir, { withFileTypes: true }).catch(() => null))
          ?.filter((f) => f.isFile() && f.name.endsWith('.json'))
          .map((f) => path.join(dir, f.name)) ?? [dir])
      : null;
    if (!files) problems.push(`networks: directory ${top.data.networks} not found (resolved to ${dir})`);
    for (const f of (files ?? []).sort()) {
      try {
        const content = parseJson(await readFile(f, 'utf8')) as { networks?: unknown };
        const list = Array.isArray(content) ? content : content?.networks;
        if (!Array.isArray(list)) problems.push(`${f}: expected { "networks": [...] }`);
        else list.forEach((raw, i) => rawNetworks.push({ raw, where: `${path.basename(f)}: networks[${i}]` }));
      } catch (e) {
        problems.push(`${f}: ${(e as Error).message}`);
      }
    }
  } else {
    top.data.networks.forEach((raw, i) => rawNetworks.push({ raw, where: entryName('networks', i, raw) }));
  }
  const parsedNetworks = new Map<string, { entry: z.infer<typeof networkSchema>; where: string }>();
  for (const { raw, where } of rawNetworks) {
    const r = networkSchema.safeParse(raw);
    if (!r.success) {
      problems.push(...issues(where, r.error));
      continue;
    }
    const key = networkKey(r.data.type, r.data.network);
    if (parsedNetworks.has(key)) problems.push(`${where}.network: duplicate network "${r.data.network}" of type ${r.data.type}`);
    else parsedNetworks.set(key, { entry: r.data, where });
  }
  const networks = new Map<string, Network>();
  const resolveNetwork = (key: string, seen: string[]): Record<string, unknown> | undefined => {
    const found = parsedNetworks.get(key);
    if (!found) return undefined;
    const { entry, where } = found;
    if (!entry.from) return entry;
    if (seen.includes(key)) {
      problems.push(`${where}.from: inheritance cycle ${[...seen, key].join(' -> ')}`);
      return entry;
    }
    const parent = resolveNetwork(networkKey(entry.type, entry.from), [...seen, key]);
    if (!parent) {
      problems.push(`${where}.from: unknown ${entry.type} network "${entry.from}"`);
      return entry;
    }
    return { ...parent, ...Object.fromEntries(Object.entries(entry).filter(([, v]) => v !== undefined)) };
  };
  for (const [key, { where }] of parsedNetworks) {
    const n = resolveNetwork(key, []) as z.infer<typeof networkSchema> & Record<string, unknown>;
    const rpcUrls = n.rpc_urls ?? [];
    if (rpcUrls.length === 0) problems.push(`${where}.rpc_urls: ${NO_RPC_URLS}`);
    for (const field of families.spec(n.type).network.required ?? []) {
      if (n[field] === undefined || n[field] === '') problems.push(`${where}.${field}: required for ${n.type} networks`);
    }
    networks.set(key, {
      type: n.type,
      name: n.network,
      chainId: n.chain_id as number | undefined,
      requiredConfirmations: (n.required_confirmations as number | undefined) ?? 1,
      symbol: n.symbol as string | undefined,
      rpcUrls,
      features: (n.features as string[] | undefined) ?? [],
      tags: n.tags ?? [],
      averageBlocktimeMs: n.average_blocktime_ms,
      isTestnet: n.is_testnet ?? false,
      passphrase: n.passphrase as string | undefined,
      fields: n,
    });
  }

  const seenIds = (section: string) => {
    const seen = new Set<string>();
    return (id: string, where: string) => {
      if (seen.has(id)) problems.push(`${where}.id: duplicate ${section} id "${id}"`);
      seen.add(id);
    };
  };

  const signers = new Map<string, SignerConfig>();
  const signerSeen = seenIds('signer');
  top.data.signers.forEach((raw, i) => {
    const where = entryName('signers', i, raw);
    const r = signerEntry.safeParse(raw);
    if (!r.success) return void problems.push(...issues(where, r.error));
    signerSeen(r.data.id, where);
    const custody = custodies.get(r.data.type);
    if (custody) {
      const c = custody.config.safeParse(r.data.config ?? {});
      if (!c.success) return void problems.push(...issues(`${where}.config`, c.error));
      for (const { name, at } of envSecrets(c.data, `${where}.config`)) {
        if (!env[name]) problems.push(`${at}: environment variable ${name} is not set`);
      }
      return void signers.set(r.data.id, { id: r.data.id, type: 'custody', custody: custody.type, config: c.data, baseDir: base, where });
    }
    if (r.data.type !== 'local') {
      const known = ['local', ...custodies.keys()].join(', ');
      return void problems.push(`${where}.type: signer type "${r.data.type}" is not supported (supported: ${known})`);
    }
    const local = localConfig.safeParse(r.data.config ?? {});
    if (!local.success) return void problems.push(...issues(`${where}.config`, local.error));
    const keyPath = local.data.path ?? r.data.path;
    const pass = local.data.passphrase ?? r.data.passphrase;
    const fieldBase = r.data.config ? `${where}.config` : where;
    if (!keyPath) return void problems.push(`${fieldBase}.path: required for local signers`);
    if (!pass) return void problems.push(`${fieldBase}.passphrase: required for local signers`);
    const passphrase = resolveSecret(pass, `${fieldBase}.passphrase`);
    // Relative keystore paths are taken from the working directory, as the reference system does,
    // falling back to the config file's folder.
    const candidates = [path.resolve(keyPath), path.resolve(base, keyPath)];
    const keystorePath = candidates.find((c) => existsSync(c));
    if (!keystorePath) return void problems.push(`${fieldBase}.path: keystore file ${keyPath} not found`);
    if (passphrase !== undefined) signers.set(r.data.id, { id: r.data.id, type: 'local', keystorePath, passphrase, where: fieldBase });
  });

  const notifications: NotificationConfig[] = [];
  const notificationSeen = seenIds('notification');
  top.data.notifications.forEach((raw, i) => {
    const where = entryName('notifications', i, raw);
    const r = notificationEntry.safeParse(raw);
    if (!r.success) return void problems.push(...issues(where, r.error));
    notificationSeen(r.data.id, where);
    if (!/^https?:\/\//i.test(r.data.url)) problems.push(`${where}.url: must be an http(s) URL`);
    const signingKey = r.data.signing_key ? resolveSecret(r.data.signing_key, `${where}.signing_key`) : null;
    notifications.push({ id: r.data.id, type: 'webhook', url: r.data.url, signingKey: signingKey || null });
  });

  const relayers: RelayerConfig[] = [];
  const relayerSeen = seenIds('relayer');
  top.data.relayers.forEach((raw, i) => {
    const where = entryName('relayers', i, raw);
    const r = relayerSchema.safeParse(raw);
    if (!r.success) return void problems.push(...issues(where, r.error));
    const e = r.data;
    relayerSeen(e.id, where);
    if (!networks.has(networkKey(e.network_type, e.network)) && !parsedNetworks.has(networkKey(e.network_type, e.network))) {
      problems.push(`${where}.network: unknown ${e.network_type} network "${e.network}"`);
    }
    if (!signers.has(e.signer_id) && !top.data.signers.some((s) => (s as { id?: unknown })?.id === e.signer_id)) {
      problems.push(`${where}.signer_id: unknown signer "${e.signer_id}"`);
    }
    if (
      e.notification_id &&
      !notifications.some((n) => n.id === e.notification_id) &&
      !top.data.notifications.some((n) => (n as { id?: unknown })?.id === e.notification_id)
    ) {
      problems.push(`${where}.notification_id: unknown notification "${e.notification_id}"`);
    }
    const policies = parsePolicies(families.spec(e.network_type), e.policies ?? {});
    if (!policies.ok) problems.push(...issues(`${where}.policies`, policies.error));
    relayers.push({
      id: e.id,
      name: e.name,
      network: e.network,
      networkType: e.network_type,
      paused: e.paused,
      signerId: e.signer_id,
      notificationId: e.notification_id ?? null,
      policies: policies.ok ? policies.value : {},
      customRpcUrls: e.custom_rpc_urls ?? null,
      where,
    });
  });

  const plugins: PluginConfig[] = [];
  const pluginSeen = seenIds('plugin');
  top.data.plugins.forEach((raw, i) => {
    const where = entryName('plugins', i, raw);
    const r = pluginEntry.safeParse(raw);
    if (!r.success) return void problems.push(...issues(where, r.error));
    const e = r.data;
    pluginSeen(e.id, where);
    const source = path.resolve(base, e.path);
    if (!existsSync(source)) return void problems.push(`${where}.path: file ${e.path} not found (resolved to ${source})`);
    plugins.push({
      id: e.id,
      path: e.path,
      file: source,
      timeout: e.timeout,
      emitLogs: e.emit_logs,
      emitTraces: e.emit_traces,
      forwardLogs: e.forward_logs,
      rawResponse: e.raw_response,
      allowGetInvocation: e.allow_get_invocation,
      config: e.config ?? null,
      where,
    });
  });

  if (problems.length) throw new ConfigError(file, problems);
  return { file, networks, signers, notifications, relayers, plugins };
}
