import { Response } from '@whatwg-node/fetch';
import { writeJson } from '../../lib/json.js';

// The spec's response envelope (2.1) and error messages (7).

export interface PaginationOut {
  current_page: number;
  per_page: number;
  total_items: number;
}

const metadata = () => ({ logs: [] as { level: string; message: string }[], traces: [] as unknown[] });

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(writeJson(body), { status, headers: { 'content-type': 'application/json', ...headers } });
}

export function ok(data: unknown, pagination?: PaginationOut, status = 200): Response {
  return json(status, { success: true, data, error: null, metadata: metadata(), ...(pagination ? { pagination } : {}) });
}

export function fail(status: number, message: string, detail?: string, headers?: Record<string, string>): Response {
  return json(status, { success: false, data: null, error: detail ?? message, message, metadata: metadata() }, headers);
}
