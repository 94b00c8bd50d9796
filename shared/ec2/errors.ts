/** Errors of berth's EC2 layer (the SDK's own errors pass through and are classified in `shared/aws/error-codes.ts`). */

/**
 * The account-wide rate budget has no token for this call within the allowed wait (any
 * service's family: EC2's, ELBv2's, Global Accelerator's).
 */
export class RateBudgetExhaustedError extends Error {
  readonly family: string;
  readonly retryAfterMs: number;
  /**
   * Attempts of the refused call already sent to the service: 0 when the budget refused the
   * first, so nothing of the call can have landed.
   */
  readonly attemptsSent: number;
  constructor(
    family: string,
    retryAfterMs: number,
    attemptsSent = 0,
    options?: { cause?: unknown; service?: string },
  ) {
    super(
      `${options?.service ?? 'Account'} rate budget "${family}" is spent; next token in ${Math.ceil(retryAfterMs)} ms`,
      options,
    );
    this.name = 'RateBudgetExhaustedError';
    this.family = family;
    this.retryAfterMs = retryAfterMs;
    this.attemptsSent = attemptsSent;
  }
}

/** The account-wide EC2 rate budget has no token for this call within the allowed wait. */
export class Ec2BudgetExhaustedError extends RateBudgetExhaustedError {
  constructor(
    family: string,
    retryAfterMs: number,
    attemptsSent = 0,
    options?: { cause?: unknown },
  ) {
    super(family, retryAfterMs, attemptsSent, { ...options, service: 'EC2' });
    this.name = 'Ec2BudgetExhaustedError';
  }
}
