import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { conflict, invalid, notFound, unavailable } from '../../src/core/domain-error.js';
import { fromDomainError, maskError, rateLimited } from '../../src/api/graphql/app-error.js';
import { createLogger } from '../../src/lib/log.js';
import { httpOf } from '../../src/api/rest/status.js';

describe('domain errors', () => {
  it('map to GraphQL codes in one place, and codes to HTTP statuses in one table', () => {
    expect(fromDomainError(invalid('to: bad')).extensions).toEqual({ code: 'BAD_REQUEST', detail: 'to: bad' });
    expect(fromDomainError(invalid('to: bad')).message).toBe('Bad Request');
    expect(fromDomainError(unavailable('try again')).extensions.code).toBe('BAD_REQUEST');
    expect(fromDomainError(notFound('Relayer with ID r not found')).message).toBe('Relayer with ID r not found');
    const c = fromDomainError(conflict('Notification with this ID already exists', 'id: "n" is taken'));
    expect([c.message, c.extensions]).toEqual(['Notification with this ID already exists', { code: 'CONFLICT', detail: 'id: "n" is taken' }]);
    expect(Object.fromEntries(Object.entries(httpOf).map(([k, v]) => [k, v.status]))).toEqual({
      BAD_REQUEST: 400,
      UNAUTHORIZED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      CONFLICT: 409,
      RATE_LIMITED: 429,
      INTERNAL: 500,
    });
  });

  it('masking gives rate-limit errors their /graphql HTTP status and hides unexpected errors', () => {
    const mask = maskError(createLogger('silent'), (code) => httpOf[code].status);
    const limited = mask(new GraphQLError('x', { originalError: rateLimited(2) })) as GraphQLError;
    expect(limited.extensions).toEqual({ code: 'RATE_LIMITED', http: { status: 429, headers: { 'Retry-After': '2' } } });
    const domain = mask(new GraphQLError('x', { originalError: invalid('page: bad'), path: ['a'] })) as GraphQLError;
    expect(domain.extensions).toEqual({ code: 'BAD_REQUEST', detail: 'page: bad' });
    const hidden = mask(new GraphQLError('x', { originalError: new Error('secret'), path: ['a'] })) as GraphQLError;
    expect([hidden.message, hidden.extensions.code]).toEqual(['Internal Server Error', 'INTERNAL']);
  });
});
