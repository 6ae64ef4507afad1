import { GraphQLError } from 'graphql';

export type ErrorCode = 'BAD_REQUEST' | 'UNAUTHORIZED' | 'NOT_FOUND' | 'CONFLICT' | 'RATE_LIMITED' | 'INTERNAL';

export const statusOf: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  INTERNAL: 500,
};

/**
 * A typed error: `message` is what users see (the spec's exact strings where the spec has one),
 * `detail` the specific reason (which field, why).
 */
export class AppError extends GraphQLError {
  constructor(code: ErrorCode, message: string, detail?: string, headers?: Record<string, string>) {
    // Only these change the HTTP status on /graphql; other errors are ordinary GraphQL errors there.
    const http = code === 'UNAUTHORIZED' || code === 'RATE_LIMITED' ? { http: { status: statusOf[code], ...(headers ? { headers } : {}) } } : {};
    super(message, { extensions: { code, ...(detail ? { detail } : {}), ...http } });
  }
  get code(): ErrorCode {
    return this.extensions.code as ErrorCode;
  }
}

export const badRequest = (detail: string) => new AppError('BAD_REQUEST', 'Bad Request', detail);
export const unauthorized = () => new AppError('UNAUTHORIZED', 'Unauthorized');
export const relayerNotFound = (id: string) => new AppError('NOT_FOUND', `Relayer with ID ${id} not found`);
export const notificationNotFound = () => new AppError('NOT_FOUND', 'Notification not found');
export const transactionNotFound = (id: string) => new AppError('NOT_FOUND', `Transaction with ID ${id} not found`);
export const conflict = (message: string, detail?: string) => new AppError('CONFLICT', message, detail);
export const rateLimited = (retryAfterSeconds: number) =>
  new AppError('RATE_LIMITED', 'Too Many Requests', undefined, { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
export const internal = () => new AppError('INTERNAL', 'Internal Server Error');
