// The one table from error codes (a GraphQL error's extensions.code) to HTTP: the status and, where
// the spec fixes one (section 7), the message. The REST adapter answers with it, and /graphql takes
// its status from it (app.ts passes it to the error masking) for the errors that change the HTTP
// status there (401, 429).

import type { ErrorCode } from '../graphql/app-error.js';

export type { ErrorCode };

export const httpOf: Record<ErrorCode, { status: number /** null: the error's own message (it names the resource). */; message: string | null }> = {
  BAD_REQUEST: { status: 400, message: 'Bad Request' },
  UNAUTHORIZED: { status: 401, message: 'Unauthorized' },
  FORBIDDEN: { status: 403, message: 'Forbidden' },
  NOT_FOUND: { status: 404, message: null },
  CONFLICT: { status: 409, message: null },
  RATE_LIMITED: { status: 429, message: 'Too Many Requests' },
  INTERNAL: { status: 500, message: 'Internal Server Error' },
};

export const isErrorCode = (code: unknown): code is ErrorCode => typeof code === 'string' && Object.hasOwn(httpOf, code);
