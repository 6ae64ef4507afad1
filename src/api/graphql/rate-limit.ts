import { createHash } from 'node:crypto';
import { rateLimitDirective } from 'graphql-rate-limit-directive';
import type { Context } from './context.js';
import { rateLimited } from './errors.js';

/**
 * Marks a field as drawing on the caller's request budget (spec 4.1-4.3). Every marked field
 * shares one token bucket per caller, on both surfaces; its size and refill rate are deployment
 * settings (RATE_LIMIT_BURST_SIZE, RATE_LIMIT_REQUESTS_PER_SECOND), not per-field arguments.
 */
export const RATE_LIMITED = { rateLimit: { limit: 1, duration: 1 } } as const;

export const callerKey = (token: string) => createHash('sha256').update(token).digest('base64url').slice(0, 22);

export function rateLimitTransformer() {
  // The directive only marks the fields and wraps their resolvers: the token is taken from the
  // request's own runtime (ctx.rt.rateLimit) in the points calculator, so one schema serves every
  // runtime in the process (tests run several) without a registry of buckets. Returning 0 points
  // leaves the directive's own limiter unused.
  return rateLimitDirective<Context>({
    pointsCalculator: async (_args, _source, _fieldArgs, ctx) => {
      const wait = await ctx.rt.rateLimit.take(ctx.caller);
      if (wait > 0) throw rateLimited(wait / 1000);
      return 0;
    },
  });
}
