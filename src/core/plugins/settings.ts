import { z } from 'zod';

// A plugin's settings: from the config file, then as changed through the API (stored in
// plugin_settings, so every instance answers with the same). Pure.

export interface PluginSettings {
  /** Seconds a call may run before its process is stopped. */
  timeout: number;
  emitLogs: boolean;
  emitTraces: boolean;
  forwardLogs: boolean;
  rawResponse: boolean;
  allowGetInvocation: boolean;
  config: Record<string, unknown> | null;
}

export interface PluginConfig extends PluginSettings {
  id: string;
  /** The source file as the config file names it. */
  path: string;
  /** The same, absolute. */
  file: string;
  /** Where the entry is in the config file, for error messages. */
  where: string;
  /** Its process may use the network (all hosts: Node's permission model names none). */
  allowNetwork: boolean;
  /** A new process for each call rather than one from the pool. */
  freshProcess: boolean;
}

/** What PATCH /api/v1/plugins/{id} may change; absent fields keep their value, `config: null` removes it. */
export const settingsUpdate = z.strictObject({
  timeout: z.number().int().min(1).max(3600).optional().meta({ description: 'Seconds a call may run (1 to 3600).' }),
  emitLogs: z.boolean().optional(),
  emitTraces: z.boolean().optional(),
  forwardLogs: z.boolean().optional(),
  rawResponse: z.boolean().optional(),
  allowGetInvocation: z.boolean().optional(),
  config: z.record(z.string(), z.unknown()).nullish().meta({ description: "The plugin's own settings (ctx.config); null removes them." }),
});
export type SettingsUpdate = z.infer<typeof settingsUpdate>;

const stored = z.object({
  timeout: z.number(),
  emitLogs: z.boolean(),
  emitTraces: z.boolean(),
  forwardLogs: z.boolean(),
  rawResponse: z.boolean(),
  allowGetInvocation: z.boolean(),
  config: z.record(z.string(), z.unknown()).nullable(),
});

export const settingsOf = (p: PluginSettings): PluginSettings => ({
  timeout: p.timeout,
  emitLogs: p.emitLogs,
  emitTraces: p.emitTraces,
  forwardLogs: p.forwardLogs,
  rawResponse: p.rawResponse,
  allowGetInvocation: p.allowGetInvocation,
  config: p.config,
});

/** The settings in force: the stored row when there is a valid one, else the file's. */
export function effective(file: PluginSettings, row: unknown): PluginSettings {
  const r = stored.safeParse(row);
  return r.success ? r.data : settingsOf(file);
}

/** An update applied: only the fields it names change. */
export function applyUpdate(current: PluginSettings, update: SettingsUpdate): PluginSettings {
  const next = { ...current };
  for (const [k, v] of Object.entries(update) as [keyof PluginSettings, unknown][]) if (v !== undefined) (next as Record<string, unknown>)[k] = v;
  return next;
}
