import { z } from 'zod';
import { NO_RPC_URLS, rpcEntries } from '../core/rpc-urls.js';
import type { FamilySpecs } from '../core/registry.js';
import type { NetworkType } from '../core/family-list.js';
import { urlText } from '../lib/validate.js';

// The config file format of OpenZeppelin Relayer, so a team moving from it keeps its file.

export const secret = z.union([
  z.object({ type: z.literal('plain'), value: z.string() }).strict(),
  z.object({ type: z.literal('env'), value: z.string().min(1) }).strict(),
]);
export type Secret = z.infer<typeof secret>;

const networkBase = {
  network: z.string().min(1),
  from: z.string().min(1).optional(),
  rpc_urls: rpcEntries.min(1, NO_RPC_URLS).optional(),
  explorer_urls: z.array(z.string()).optional(),
  average_blocktime_ms: z.number().int().positive().optional(),
  is_testnet: z.boolean().optional(),
  tags: z.array(z.string()).optional(),
};

/** A network entry of each family's type: the common fields and the family's own (its spec's network.fields). */
export const networkEntry = (families: FamilySpecs) =>
  z.discriminatedUnion(
    'type',
    // Typed by the common fields; the family's own are read by name (config/load.ts).
    families.list.map((f) => z.object({ type: z.literal(f.type), ...networkBase, ...f.network.fields }).passthrough()) as unknown as [
      z.ZodObject<{ type: z.ZodLiteral<NetworkType> } & typeof networkBase>,
    ],
  );
export type NetworkEntry = z.infer<ReturnType<typeof networkEntry>>;

export const localConfig = z.object({ path: z.string().min(1).optional(), passphrase: secret.optional() }).passthrough();

export const signerEntry = z
  .object({
    id: z.string().min(1),
    type: z.string().min(1),
    // `local`: { path, passphrase }; a custody type: its own config (checked by that type).
    config: z.record(z.string(), z.unknown()).optional(),
    path: z.string().min(1).optional(),
    passphrase: secret.optional(),
  })
  .passthrough();

export const notificationEntry = z
  .object({
    id: z.string().min(1),
    type: z.literal('webhook').default('webhook'),
    url: urlText.url(),
    signing_key: secret.nullish(),
  })
  .passthrough();

/** A plugin (the reference's fields); `path` is absolute or relative to the config file's folder. */
export const pluginEntry = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9._-]{1,128}$/, 'must be 1 to 128 letters, digits, ".", "_" or "-"'),
    path: z.string().min(1),
    timeout: z.number().int().positive().max(3600).default(300),
    emit_logs: z.boolean().default(false),
    emit_traces: z.boolean().default(false),
    forward_logs: z.boolean().default(false),
    raw_response: z.boolean().default(false),
    allow_get_invocation: z.boolean().default(false),
    config: z.record(z.string(), z.unknown()).nullish(),
  })
  .strict();

export const configFile = z
  .object({
    relayers: z.array(z.unknown()).default([]),
    signers: z.array(z.unknown()).default([]),
    notifications: z.array(z.unknown()).default([]),
    networks: z.union([z.string().min(1), z.array(z.unknown())]).default([]),
    plugins: z.array(z.unknown()).default([]),
  })
  .passthrough();
