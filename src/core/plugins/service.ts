import { notFound } from '../domain-error.js';
import { paged, toPage } from '../page.js';
import type { Logger } from '../../lib/log.js';
import type { Runtime } from '../runtime.js';
import { type CallResult, ended, GET_REFUSED } from './outcome.js';
import { type CallContext, enter, leave, type PluginApi, runCall } from './pool.js';
import { applyUpdate, effective, type PluginConfig, type PluginSettings, type SettingsUpdate } from './settings.js';

// The plugins of the config file: read, changed (PATCH, stored so every instance agrees) and called.

export type PluginInfo = { id: string; path: string } & PluginSettings;

const pluginNotFound = (id: string) => notFound(`Plugin with id ${id} not found`);

function configOf(rt: Runtime, id: string): PluginConfig {
  const p = rt.plugins.byId.get(id);
  if (!p) throw pluginNotFound(id);
  return p.config;
}

const info = (c: PluginConfig, s: PluginSettings): PluginInfo => ({ id: c.id, path: c.path, ...s });

async function settingsOf(rt: Runtime, c: PluginConfig): Promise<PluginSettings> {
  const row = await rt.db.prisma.pluginSettings.findUnique({ where: { id: c.id } });
  return effective(c, row?.settings);
}

/** The plugins `shows` lets through, in the config file's order. */
export function listPlugins(rt: Runtime, shows: (id: string) => boolean, page?: number | null, perPage?: number | null) {
  const p = toPage(page, perPage);
  const all = [...rt.plugins.byId.values()].map((x) => x.config).filter((c) => shows(c.id));
  return paged(
    p,
    async () => {
      const slice = all.slice(p.skip, p.skip + p.perPage);
      const rows = await rt.db.prisma.pluginSettings.findMany({ where: { id: { in: slice.map((c) => c.id) } } });
      return slice.map((c) => info(c, effective(c, rows.find((r) => r.id === c.id)?.settings)));
    },
    async () => all.length,
  );
}

export async function getPlugin(rt: Runtime, id: string): Promise<PluginInfo> {
  const c = configOf(rt, id);
  return info(c, await settingsOf(rt, c));
}

/** Changes the fields named; stored, so every instance calls the plugin with them from its next call. */
export async function updatePlugin(rt: Runtime, id: string, update: SettingsUpdate): Promise<PluginInfo> {
  const c = configOf(rt, id);
  const next = applyUpdate(await settingsOf(rt, c), update);
  const settings = JSON.parse(JSON.stringify(next));
  await rt.db.prisma.pluginSettings.upsert({ where: { id }, create: { id, settings }, update: { settings } });
  return info(c, next);
}

/** Calls the plugin: its result, or how it failed, as the call answers it. */
export async function callPlugin(rt: Runtime, id: string, ctx: CallContext, api: PluginApi, log: Logger): Promise<CallResult> {
  const p = rt.plugins.byId.get(id);
  if (!p) throw pluginNotFound(id);
  const settings = await settingsOf(rt, p.config);
  const started = performance.now();
  let result: CallResult;
  if (ctx.method === 'GET' && !settings.allowGetInvocation) result = ended('refused', 405, GET_REFUSED);
  else if (!(await enter(rt.plugins, p))) {
    const { concurrency, queue } = rt.plugins.limits;
    result = { ...ended('busy', 429, `plugin ${id} is running ${concurrency} calls with ${queue} waiting; try again later`), retryAfter: 1 };
  } else {
    try {
      result = await runCall(rt, p, settings, ctx, api, log);
    } finally {
      leave(p);
    }
  }
  rt.metrics.pluginCall(id, result.outcome, (performance.now() - started) / 1000);
  return result;
}
