import type { Logger } from '../../lib/log.js';
import type { Runtime } from '../../core/runtime.js';
import type { Caller } from '../../core/access/keys.js';

export interface Context {
  rt: Runtime;
  log: Logger;
  requestId: string;
  /** Who is calling (its key's id, permissions and rate-limit bucket), never the key itself. */
  caller: Caller;
  /** Runs a REST request in process as `caller` (a plugin's ctx.api calls); absent where none is served. */
  local?: LocalCall;
}

export type LocalCall = (request: Request, caller: Caller, requestId: string) => Promise<Response>;

/** A request's context; its child logger is made only when something logs (pino's child costs more than a read). */
export function requestContext(rt: Runtime, requestId: string, caller: Caller, local?: LocalCall): Context {
  let log: Logger | undefined;
  return {
    rt,
    requestId,
    caller,
    local,
    get log() {
      return (log ??= rt.log.child({ requestId, key: caller.id }));
    },
  };
}
