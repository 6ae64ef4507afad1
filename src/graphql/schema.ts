import { builder } from './builder.js';
import { rateLimitTransformer } from './rate-limit.js';
import '../modules/relayers/schema.js';
import '../modules/transactions/schema.js';
import '../modules/notifications/schema.js';

/** The executable schema: Pothos types with the rate-limit directive applied last. */
export const schema = rateLimitTransformer().rateLimitDirectiveTransformer(builder.toSchema({ sortSchema: true }));
