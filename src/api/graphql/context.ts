import type { Logger } from '../../lib/log.js';
import type { Runtime } from '../../core/runtime.js';
import type { Caller } from '../../core/access/keys.js';

export interface Context {
  rt: Runtime;
  log: Logger;
  requestId: string;
  /** Who is calling (its key's id, permissions and rate-limit bucket), never the key itself. */
  caller: Caller;
}

/** A request's context; its child logger is made only when something logs (pino's child costs more than a read). */
export function requestContext(rt: Runtime, requestId: string, caller: Caller): Context {
  let log: Logger | undefined;
  return {
    rt,
    requestId,
    caller,
    get log() {
      return (log ??= rt.log.child({ requestId, key: caller.id }));
    },
  };
}
