// What a plugin call answers, decided from what the plugin's process reported. Pure.

export interface LogEntry {
  level: string;
  message: string;
}

/** How a call ended, the metrics' `outcome` label. */
export type Outcome = 'ok' | 'plugin_error' | 'timeout' | 'memory' | 'exited' | 'busy' | 'refused' | 'denied';

export interface CallResult {
  outcome: Outcome;
  /** The HTTP status the call answers with. */
  status: number;
  /** The handler's result (success), or `{ code, details }` (failure), as the reference answers. */
  data: unknown;
  /** The message of a failure; null on success. */
  error: string | null;
  logs: LogEntry[];
  traces: unknown[];
  /** The bare result is the answer (raw_response), on success only. */
  raw: boolean;
  /** Seconds before trying again (a full queue). */
  retryAfter?: number;
}

/** What the plugin's process reports of a thrown value (core/plugins/child.mjs). */
export interface Thrown {
  message: string;
  name?: string;
  status?: number;
  code?: string;
  details?: unknown;
}

/** A permission Node's permission model refused the plugin's process (the child names it). */
export interface Denied {
  permission: string;
  resource: string | null;
}

/** The refused permission a reported error carries, if any. */
export function deniedOf(error: unknown): Denied | undefined {
  const d = (error as { denied?: { permission?: unknown; resource?: unknown } } | null)?.denied;
  if (!d || typeof d.permission !== 'string') return undefined;
  return { permission: d.permission.slice(0, 64), resource: typeof d.resource === 'string' ? d.resource.slice(0, 1024) : null };
}

/** A call failed on a refused permission: 403, naming the permission and what it was refused for. */
export function deniedResult(id: string, d: Denied, message: string, logs: LogEntry[], traces: unknown[]): CallResult {
  const what = d.resource ? ` for ${d.resource}` : '';
  return {
    ...ended('denied', 403, `plugin ${id} was refused the ${d.permission} permission${what}: ${message}`, logs, traces),
    data: { code: 'PERMISSION_DENIED', details: { permission: d.permission, resource: d.resource } },
  };
}

/** At most this many log lines and traces are kept per call, each line at most MAX_LINE characters. */
export const MAX_ENTRIES = 500;
export const MAX_LINE = 8192;

export const GET_REFUSED = "GET requests are not enabled for this plugin. Set 'allow_get_invocation: true' in plugin configuration to enable.";

/** The status of a thrown error: its own when it is an error status, else 500. */
export const statusOf = (t: Thrown) => (t.status !== undefined && Number.isInteger(t.status) && t.status >= 400 && t.status <= 599 ? t.status : 500);

export function succeeded(data: unknown, logs: LogEntry[], traces: unknown[], raw: boolean): CallResult {
  return { outcome: 'ok', status: 200, data, error: null, logs, traces, raw };
}

/** A thrown error as the answer: its status, message, code and details (an empty message: the last error logged, else a fixed one). */
export function threw(t: Thrown, logs: LogEntry[], traces: unknown[]): CallResult {
  const lastError = [...logs].reverse().find((l) => l.level === 'error')?.message;
  const message = t.message || lastError || 'the plugin failed without a message';
  return {
    outcome: 'plugin_error',
    status: statusOf(t),
    data: { code: t.code ?? null, details: t.details ?? null },
    error: message,
    logs,
    traces,
    raw: false,
  };
}

/** A call the service ended or refused: a fixed status and message. */
export function ended(
  outcome: Exclude<Outcome, 'ok' | 'plugin_error'>,
  status: number,
  message: string,
  logs: LogEntry[] = [],
  traces: unknown[] = [],
): CallResult {
  return { outcome, status, data: { code: outcome.toUpperCase(), details: null }, error: message, logs, traces, raw: false };
}

/** Appends a log line within the bounds; false once the call's lines are full. */
export function keepLine(logs: LogEntry[], level: unknown, message: unknown): boolean {
  if (logs.length >= MAX_ENTRIES) return false;
  const text = typeof message === 'string' ? message : String(message);
  logs.push({ level: typeof level === 'string' ? level.slice(0, 16) : 'log', message: text.length > MAX_LINE ? `${text.slice(0, MAX_LINE)}…` : text });
  return true;
}

/** The statuses a transaction wait ends on (the reference's: mined counts as done). */
export const WAIT_DONE = new Set(['mined', 'confirmed', 'failed', 'expired', 'canceled']);
