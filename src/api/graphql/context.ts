import type { Logger } from '../../lib/log.js';
import type { Runtime } from '../../core/runtime.js';

export interface Context {
  rt: Runtime;
  log: Logger;
  requestId: string;
  /** A digest of the caller's bearer token: the rate-limit budget key, never the token itself. */
  caller: string;
}
