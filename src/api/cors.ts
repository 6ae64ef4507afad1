import { Response } from '@whatwg-node/fetch';
import type { Caller } from '../core/access/keys.js';

// CORS for browsers. A preflight carries no key, so it is answered for any origin; the request that
// follows carries its key, and is refused (403, nothing run) when its key does not allow the origin.

export const allowOrigin = (caller: Caller, origin: string) => caller.origins.includes('*') || caller.origins.includes(origin);

const ALLOW_HEADERS = 'authorization, content-type, x-request-id, idempotency-key';

export function preflight(request: Request): Response {
  const origin = request.headers.get('origin');
  if (!origin) return new Response(null, { status: 204 });
  return new Response(null, {
    status: 204,
    headers: {
      'access-control-allow-origin': origin,
      'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE',
      'access-control-allow-headers': request.headers.get('access-control-request-headers') ?? ALLOW_HEADERS,
      'access-control-max-age': '600',
      vary: 'Origin',
    },
  });
}
