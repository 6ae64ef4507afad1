import { z } from 'zod';
import { invalid } from '../../core/domain-error.js';
import type { CallResult, LogEntry } from '../../core/plugins/outcome.js';
import { callPlugin, getPlugin, listPlugins, type PluginInfo, updatePlugin } from '../../core/plugins/service.js';
import { settingsUpdate } from '../../core/plugins/settings.js';
import { pluginApi } from '../plugin-api.js';
import { listTest, needs, needsSome, readNeed } from './access.js';
import type { SchemaParts } from './parts.js';
import { RATE_LIMITED } from './rate-limit.js';

const multi = z.record(z.string(), z.array(z.string()));

/** Headers or query values as the plugin gets them (name to values), or a 400 naming the argument. */
function multiMap(name: string, value: unknown): Record<string, string[]> {
  if (value === null || value === undefined) return {};
  const r = multi.safeParse(value);
  if (!r.success) throw invalid(`${name}: must be an object of string arrays`);
  return r.data;
}

/** Plugins: their settings (read, changed) and calls, on the same resolvers for both surfaces. */
export function pluginTypes({ builder, pageArgs, pageOf }: SchemaParts) {
  const Plugin = builder.objectRef<PluginInfo>('Plugin').implement({
    extensions: readNeed<PluginInfo>('plugin', (p) => p.id),
    description: 'A plugin of the config file, with its settings as in force (changes through the API included).',
    fields: (t) => ({
      id: t.exposeID('id'),
      path: t.exposeString('path', { description: 'The source file as the config file names it.' }),
      timeout: t.exposeInt('timeout', { description: 'Seconds a call may run before it is stopped.' }),
      emitLogs: t.exposeBoolean('emitLogs'),
      emitTraces: t.exposeBoolean('emitTraces'),
      forwardLogs: t.exposeBoolean('forwardLogs'),
      rawResponse: t.exposeBoolean('rawResponse'),
      allowGetInvocation: t.exposeBoolean('allowGetInvocation'),
      config: t.field({ type: 'JSON', nullable: true, resolve: (p) => p.config }),
    }),
  });

  const PluginLog = builder.objectRef<LogEntry>('PluginLog').implement({
    fields: (t) => ({ level: t.exposeString('level'), message: t.exposeString('message') }),
  });

  const PluginCallResult = builder.objectRef<CallResult>('PluginCallResult').implement({
    description: "A call's answer: the handler's result, or how it failed (the plugin's own error, a timeout, memory, a full queue).",
    fields: (t) => ({
      status: t.exposeInt('status', { description: 'The HTTP status REST answers with.' }),
      success: t.boolean({ resolve: (r) => r.outcome === 'ok' }),
      outcome: t.exposeString('outcome', {
        description: 'ok, plugin_error, timeout, memory, exited, busy, refused or denied (a permission the plugin may not use).',
      }),
      data: t.field({ type: 'JSON', nullable: true, description: 'The result; on failure { code, details }.', resolve: (r) => r.data }),
      error: t.exposeString('error', { nullable: true }),
      logs: t.field({ type: [PluginLog], description: 'Its console output, when emit_logs.', resolve: (r) => r.logs }),
      traces: t.field({ type: 'JSON', description: 'Its relayer API calls, when emit_traces.', resolve: (r) => r.traces }),
      rawResponse: t.exposeBoolean('raw'),
      retryAfter: t.exposeInt('retryAfter', { nullable: true }),
    }),
  });

  const PluginMethod = builder.enumType('PluginMethod', { values: ['GET', 'POST'] as const });

  const UpdatePluginInput = builder.inputType('UpdatePluginInput', {
    fields: (t) => ({
      timeout: t.int({ required: false, description: 'Seconds a call may run (1 to 3600).' }),
      emitLogs: t.boolean({ required: false }),
      emitTraces: t.boolean({ required: false }),
      forwardLogs: t.boolean({ required: false }),
      rawResponse: t.boolean({ required: false }),
      allowGetInvocation: t.boolean({ required: false }),
      config: t.field({ type: 'JSON', required: false, description: "The plugin's own settings (ctx.config); null removes them." }),
    }),
  });

  const PluginPage = pageOf('PluginPage', Plugin);

  builder.queryFields((t) => ({
    plugins: t.field({
      type: PluginPage,
      args: { ...pageArgs },
      authScopes: (_, __, ctx) => needsSome(ctx, 'plugin'),
      resolve: (_, a, ctx) => listPlugins(ctx.rt, ctx.caller.admin ? () => true : listTest(ctx.caller, 'plugin'), a.page, a.perPage),
    }),
    plugin: t.field({
      type: Plugin,
      args: { id: t.arg.id({ required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'plugin', String(a.id), 'read'),
      resolve: (_, a, ctx) => getPlugin(ctx.rt, String(a.id)),
    }),
  }));

  builder.mutationFields((t) => ({
    updatePlugin: t.field({
      type: Plugin,
      description: 'Changes the settings named; every instance uses them from its next call.',
      directives: RATE_LIMITED,
      args: { id: t.arg.id({ required: true }), input: t.arg({ type: UpdatePluginInput, required: true }) },
      authScopes: (_, a, ctx) => needs(ctx, 'plugin', String(a.id), 'manage'),
      resolve: (_, a, ctx) => {
        const r = settingsUpdate.safeParse(Object.fromEntries(Object.entries(a.input).filter(([k, v]) => v !== null || k === 'config')));
        if (!r.success) throw invalid(r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
        return updatePlugin(ctx.rt, String(a.id), r.data);
      },
    }),
    callPlugin: t.field({
      type: PluginCallResult,
      description:
        "Runs the plugin's handler with these params, as the caller: its relayer calls need the caller's own permissions. GET is refused (405) unless the plugin allows it.",
      directives: RATE_LIMITED,
      args: {
        id: t.arg.id({ required: true }),
        params: t.arg({ type: 'JSON', required: false }),
        route: t.arg.string({ required: false, description: 'The sub-route (ctx.route), e.g. "/verify".' }),
        method: t.arg({ type: PluginMethod, required: false, description: 'ctx.method (default POST).' }),
        headers: t.arg({ type: 'JSON', required: false, description: 'ctx.headers: header name to values.' }),
        query: t.arg({ type: 'JSON', required: false, description: 'ctx.query: name to values.' }),
      },
      authScopes: (_, a, ctx) => needs(ctx, 'plugin', String(a.id), 'execute'),
      resolve: (_, a, ctx) => {
        if (!ctx.local) throw invalid('plugins cannot be called here');
        const context = {
          params: a.params ?? {},
          route: a.route ?? '',
          method: a.method ?? 'POST',
          headers: multiMap('headers', a.headers),
          query: multiMap('query', a.query),
        };
        return callPlugin(ctx.rt, String(a.id), context, pluginApi(ctx.local, ctx.caller, ctx.requestId), ctx.log);
      },
    }),
  }));
}
