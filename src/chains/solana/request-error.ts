/** The request is invalid as sent (maps to HTTP 400). The message names the field or policy rule and the reason. */
export class SolanaRequestError extends Error {
  override name = 'SolanaRequestError';
  constructor(
    message: string,
    /** `transaction` for malformed input, `policy.<rule>` for a policy violation. */
    readonly field?: string,
  ) {
    super(message);
  }
}
