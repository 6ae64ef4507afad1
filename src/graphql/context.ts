import type { Logger } from '../log.js';
import type { Runtime } from '../runtime.js';

export interface Context {
  rt: Runtime;
  log: Logger;
  requestId: string;
  /** A digest of the caller's bearer token: the rate-limit budget key, never the token itself. */
  caller: string;
}
