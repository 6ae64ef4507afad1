import type { Response } from '@whatwg-node/fetch';
import { z } from 'zod';
import {
  RestCallPluginDocument,
  type RestCallPluginMutation,
  RestGetPluginDocument,
  RestListPluginsDocument,
  type RestPluginFragment,
  RestUpdatePluginDocument,
} from '../../generated/graphql.js';
import { settingsUpdate } from '../../core/plugins/settings.js';
import { json } from './envelope.js';
import { paging, snakeShape } from './fields.js';
import { paginationRecord, type JsonSchema } from './records.js';
import { type Route, route } from './route.js';

// The reference's /api/v1/plugins routes. A call's answer is the envelope with the handler's
// result (or the bare result with raw_response), its status the plugin's own on failure.

const pluginId = { plugin_id: { gql: 'id', description: "The plugin's id." } };

const pluginRecord = (p: Omit<RestPluginFragment, '__typename'>) => ({
  id: p.id,
  path: p.path,
  timeout: p.timeout,
  emit_logs: p.emitLogs,
  emit_traces: p.emitTraces,
  forward_logs: p.forwardLogs,
  raw_response: p.rawResponse,
  allow_get_invocation: p.allowGetInvocation,
  config: p.config ?? null,
});

/** Headers a plugin never sees: the caller's credentials. */
const WITHHELD = new Set(['authorization', 'proxy-authorization', 'cookie']);

/** Name to values, as the reference gives headers and query parameters to the plugin. */
function multiMap(entries: Iterable<[string, string]>, skip?: Set<string>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of entries) if (!skip?.has(k)) (out[k] ??= []).push(v);
  return out;
}

/** The params of a call's body: its `params` when it has the field, else the whole body (as the reference takes it). */
export const paramsOf = (body: unknown) =>
  body && typeof body === 'object' && !Array.isArray(body) && 'params' in body ? (body as { params: unknown }).params : body;

/** The plugin's route: the path below …/call, else the `route` query parameter. */
export const routeOf = (tail: string, url: URL) => tail || (url.searchParams.get('route') ?? '');

function callVariables(method: 'GET' | 'POST') {
  return (request: Request, url: URL, _body: unknown, tail: string) => ({
    method,
    route: routeOf(tail, url),
    headers: multiMap(request.headers as unknown as Iterable<[string, string]>, WITHHELD),
    query: multiMap(url.searchParams),
    ...(method === 'GET' ? { params: {} } : {}),
  });
}

function callResponse(d: RestCallPluginMutation): Response {
  const r = d.callPlugin;
  const metadata = { logs: r.logs.map((l) => ({ level: l.level, message: l.message })), traces: (r.traces as unknown[]) ?? [] };
  if (r.success) return r.rawResponse ? json(200, r.data) : json(200, { success: true, data: r.data, error: null, metadata });
  const headers: Record<string, string> = r.retryAfter ? { 'retry-after': String(r.retryAfter) } : {};
  return json(r.status, { success: false, data: r.data, error: r.error, message: r.error, metadata }, headers);
}

const callDescription = (method: string) =>
  `Runs the plugin's handler as the caller: its relayer calls (ctx.api) need the caller's own permissions, answering 403 inside the plugin otherwise. A path below \`…/call\` (or the \`route\` query parameter) is ctx.route; the query parameters are ctx.query, the headers ctx.headers (without Authorization and Cookie). ${
    method === 'GET'
      ? 'ctx.params is {}. Refused with 405 unless the plugin has `allow_get_invocation`.'
      : 'The body is `{ "params": … }`, or the whole body is taken as params.'
  } The answer is the envelope with the handler's result in \`data\` (the bare result with \`raw_response\`), its logs and API calls in \`metadata\` with \`emit_logs\` / \`emit_traces\`. A failure answers the status of the plugin's error (a PluginError's \`status\`, else 500) with \`data\` { code, details }; 504 when it ran past its timeout, 429 when its queue is full.`;

const callRoute = (method: 'GET' | 'POST') =>
  route({
    id: method === 'GET' ? 'callPluginGet' : 'callPlugin',
    method,
    path: '/api/v1/plugins/{plugin_id}/call',
    tag: 'Plugins',
    summary: method === 'GET' ? 'Call a plugin (GET)' : 'Call a plugin',
    description: callDescription(method),
    document: RestCallPluginDocument,
    field: { type: 'Mutation', name: 'callPlugin' },
    pathParams: pluginId,
    query: z.object({ route: z.string().optional().meta({ description: 'The sub-route, when the path gives none.' }) }),
    tail: 'route',
    whole: callVariables(method),
    ...(method === 'POST'
      ? {
          body: {
            variable: 'params',
            description: '`{ "params": … }`, or the params themselves.',
            schema: z.object({}),
            example: { params: { destinationAddress: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8', amount: 1000 } },
            json: { type: ['object', 'array'], properties: { params: { description: "The handler's ctx.params." } } },
            map: paramsOf,
          },
        }
      : {}),
    status: 200,
    response: { schema: 'PluginCallResponse', list: false },
    errors: [404, 405, 504],
    respond: callResponse,
    result: () => ({ data: null }),
  });

export function pluginRoutes(): Route[] {
  return [
    route({
      id: 'listPlugins',
      method: 'GET',
      path: '/api/v1/plugins',
      tag: 'Plugins',
      summary: 'List plugins',
      description: 'The plugins this key may read, in the config file order.',
      document: RestListPluginsDocument,
      field: { type: 'Query', name: 'plugins' },
      pathParams: {},
      query: paging,
      status: 200,
      response: { schema: 'Plugin', list: true },
      errors: [],
      result: (d) => ({ data: d.plugins.items.map(pluginRecord), pagination: paginationRecord(d.plugins.pagination) }),
    }),
    route({
      id: 'getPlugin',
      method: 'GET',
      path: '/api/v1/plugins/{plugin_id}',
      tag: 'Plugins',
      summary: 'Get a plugin',
      document: RestGetPluginDocument,
      field: { type: 'Query', name: 'plugin' },
      pathParams: pluginId,
      status: 200,
      response: { schema: 'Plugin', list: false },
      errors: [404],
      result: (d) => ({ data: pluginRecord(d.plugin) }),
    }),
    route({
      id: 'updatePlugin',
      method: 'PATCH',
      path: '/api/v1/plugins/{plugin_id}',
      tag: 'Plugins',
      summary: 'Update a plugin',
      description:
        'Changes the settings named (the others keep theirs); stored, so every instance uses them from its next call. `config: null` removes the config.',
      document: RestUpdatePluginDocument,
      field: { type: 'Mutation', name: 'updatePlugin' },
      pathParams: pluginId,
      body: {
        variable: 'input',
        description: 'The settings to change.',
        schema: z.strictObject(snakeShape(settingsUpdate.shape)),
        example: { timeout: 60, emit_logs: true, allow_get_invocation: false, config: { threshold: 5 } },
      },
      status: 200,
      response: { schema: 'Plugin', list: false },
      errors: [404],
      result: (d) => ({ data: pluginRecord(d.updatePlugin) }),
    }),
    callRoute('POST'),
    callRoute('GET'),
  ];
}

export const pluginSchemas: Record<string, JsonSchema> = {
  Plugin: {
    type: 'object',
    required: ['id', 'path', 'timeout', 'emit_logs', 'emit_traces', 'forward_logs', 'raw_response', 'allow_get_invocation', 'config'],
    properties: {
      id: { type: 'string' },
      path: { type: 'string', description: 'The source file as the config file names it.' },
      timeout: { type: 'integer', description: 'Seconds a call may run.' },
      emit_logs: { type: 'boolean' },
      emit_traces: { type: 'boolean' },
      forward_logs: { type: 'boolean' },
      raw_response: { type: 'boolean' },
      allow_get_invocation: { type: 'boolean' },
      config: { type: ['object', 'null'] },
    },
  },
  PluginCallResponse: {
    description:
      "The envelope with the handler's result in `data` (on failure `data` is { code, details } and `error` the message); with raw_response, the result alone.",
    type: 'object',
    required: ['success', 'data', 'error', 'metadata'],
    properties: {
      success: { type: 'boolean' },
      data: {},
      error: { type: ['string', 'null'] },
      message: { type: 'string' },
      metadata: {
        type: 'object',
        properties: {
          logs: {
            type: 'array',
            items: { type: 'object', required: ['level', 'message'], properties: { level: { type: 'string' }, message: { type: 'string' } } },
          },
          traces: { type: 'array' },
        },
      },
    },
  },
};
