import { builder } from './builder.js';
import { rateLimitTransformer } from './rate-limit.js';
import './relayers.js';
import './transactions.js';
import './notifications.js';
import './direct.js';
import './entities.js';

/** The executable schema: Pothos types with the rate-limit directive applied last. */
export const schema = rateLimitTransformer().rateLimitDirectiveTransformer(builder.toSchema({ sortSchema: true }));
