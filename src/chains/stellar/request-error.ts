/** The request is invalid as sent (maps to HTTP 400). The message names the field and the reason. */
export class StellarRequestError extends Error {
  override name = 'StellarRequestError';
  constructor(
    message: string,
    /** Dotted path of the offending request field, or `policy.<rule>` for policy violations. */
    readonly field?: string,
  ) {
    super(message);
  }
}

export function fieldError(field: string, reason: string): StellarRequestError {
  return new StellarRequestError(`${field}: ${reason}`, field);
}

/** A request the relayer's policy refuses: the message and the field name the rule. */
export function policyError(rule: string, reason: string): StellarRequestError {
  return new StellarRequestError(`policy ${rule}: ${reason}`, `policy.${rule}`);
}
