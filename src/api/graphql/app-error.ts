import { GraphQLError } from 'graphql';
import { DomainError, type ErrorKind, unavailable } from '../../core/domain-error.js';
import { CustodyError } from '../../signers/custody.js';
import type { Logger } from '../../lib/log.js';

/** The codes of typed errors (extensions.code); src/api/rest/status.ts gives each its HTTP status. */
export type ErrorCode = 'BAD_REQUEST' | 'UNAUTHORIZED' | 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT' | 'RATE_LIMITED' | 'INTERNAL';

/** Codes that set the HTTP status of a /graphql response too (other errors are ordinary GraphQL errors there). */
const HTTP_CODES: readonly ErrorCode[] = ['UNAUTHORIZED', 'RATE_LIMITED'];

/**
 * A typed error: `message` is what users see (the spec's exact strings where the spec has one),
 * `detail` the specific reason (which field, why).
 */
export class AppError extends GraphQLError {
  constructor(code: ErrorCode, message: string, detail?: string, headers?: Record<string, string>) {
    // The HTTP status, for the codes that have one on /graphql, is set by maskError.
    super(message, { extensions: { code, ...(detail ? { detail } : {}), ...(headers ? { http: { headers } } : {}) } });
  }
  get code(): ErrorCode {
    return this.extensions.code as ErrorCode;
  }
}

// Errors of the GraphQL layer itself (rate limit, masking); domain errors are mapped below.
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError('RATE_LIMITED', 'Too Many Requests', undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
export const internal = () => new AppError('INTERNAL', 'Internal Server Error');

/**
 * Domain error kinds as GraphQL error codes: the one place they are mapped. `headline` replaces the
 * message (which then becomes the detail) where the code has a fixed one.
 */
const CODE_OF: Record<ErrorKind, { code: ErrorCode; headline?: string }> = {
  invalid: { code: 'BAD_REQUEST', headline: 'Bad Request' },
  // Answered as a bad request, as before the kind existed: the client may try again.
  unavailable: { code: 'BAD_REQUEST', headline: 'Bad Request' },
  'not-found': { code: 'NOT_FOUND' },
  conflict: { code: 'CONFLICT' },
  forbidden: { code: 'FORBIDDEN', headline: 'Forbidden' },
};

export function fromDomainError(e: DomainError): AppError {
  const { code, headline } = CODE_OF[e.kind];
  return headline ? new AppError(code, headline, e.detail ? `${e.message}: ${e.detail}` : e.message) : new AppError(code, e.message, e.detail);
}

/**
 * The error masking of both surfaces: typed errors pass (domain errors as their GraphQL code), any
 * other is logged and hidden. `httpStatus` (the REST adapter's table) gives the status of the codes
 * that set the HTTP status of a /graphql response.
 */
export function maskError(log: Logger, httpStatus: (code: ErrorCode) => number) {
  const withStatus = (e: AppError) => {
    if (HTTP_CODES.includes(e.code)) {
      const http = (e.extensions.http ?? {}) as Record<string, unknown>;
      (e.extensions as Record<string, unknown>).http = { status: httpStatus(e.code), ...http };
    }
    return e;
  };
  return (error: unknown): Error => {
    const original = error instanceof GraphQLError && error.originalError ? error.originalError : error;
    if (original instanceof DomainError) return withStatus(fromDomainError(original));
    // A signer's custody away or refusing (its message names the signer, never a secret).
    if (original instanceof CustodyError) return withStatus(fromDomainError(unavailable(original.message)));
    if (original instanceof AppError) return withStatus(original);
    if (error instanceof GraphQLError && !error.originalError) return error;
    if (error instanceof GraphQLError && (error.originalError as GraphQLError | undefined)?.extensions?.code === 'BAD_REQUEST') return error;
    // A variable a built-in scalar refuses (no path: not from a resolver) is the caller's mistake.
    if (error instanceof GraphQLError && !error.path && error.originalError instanceof GraphQLError) return error;
    log.error({ err: original }, 'unexpected error in a resolver');
    return withStatus(internal());
  };
}
