// The one error type domain and chain code throws. It knows nothing of GraphQL or HTTP: the
// GraphQL layer maps `kind` to extensions.code (src/api/graphql/app-error.ts) and the REST adapter maps
// those codes to HTTP statuses and the spec's messages (src/api/rest/status.ts).

export type ErrorKind =
  /** The request is wrong: a field, a rule of the relayer's policies, the state of the resource. */
  | 'invalid'
  | 'not-found'
  /** The request clashes with what exists (an id taken, an idempotency key reused, a busy row). */
  | 'conflict'
  /** Something the request needs cannot be reached right now (a chain's RPC); trying again may work. */
  | 'unavailable'
  /** The caller's API key lacks the permission the request needs. */
  | 'forbidden';

export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    /** What went wrong, for users: for `invalid` and `unavailable` the specific reason (field: why). */
    message: string,
    /** More about it, when the message is a fixed headline (the spec's not-found and conflict messages). */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export const invalid = (reason: string) => new DomainError('invalid', reason);
export const unavailable = (reason: string) => new DomainError('unavailable', reason);
export const notFound = (message: string) => new DomainError('not-found', message);
export const conflict = (message: string, detail?: string) => new DomainError('conflict', message, detail);
export const forbidden = (reason: string) => new DomainError('forbidden', reason);

// The spec's not-found messages (section 7).
export const relayerNotFound = (id: string) => notFound(`Relayer with ID ${id} not found`);
export const notificationNotFound = () => notFound('Notification not found');
export const transactionNotFound = (id: string) => notFound(`Transaction with ID ${id} not found`);

export const isDomainError = (e: unknown, ...kinds: ErrorKind[]): e is DomainError =>
  e instanceof DomainError && (kinds.length === 0 || kinds.includes(e.kind));

/**
 * A failed start-up check of a relayer (a chain family's checkRelayer): `type` and `details`
 * become the relayer's disabled_reason. Not a request error: it disables the relayer.
 */
export class RelayerCheckError extends Error {
  constructor(
    readonly type: string,
    readonly details: string,
  ) {
    super(`${type}: ${details}`);
  }
}
