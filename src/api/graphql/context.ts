import type { Logger } from '../../lib/log.js';
import type { Runtime } from '../../core/runtime.js';

export interface Context {
  rt: Runtime;
  log: Logger;
  requestId: string;
  /** A digest of the caller's bearer token: the rate-limit budget key, never the token itself. */
  caller: string;
}

/** A request's context; its child logger is made only when something logs (pino's child costs more than a read). */
export function requestContext(rt: Runtime, requestId: string, caller: string): Context {
  let log: Logger | undefined;
  return {
    rt,
    requestId,
    caller,
    get log() {
      return (log ??= rt.log.child({ requestId }));
    },
  };
}
