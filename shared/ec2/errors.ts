/** Errors of berth's EC2 layer (the SDK's own errors pass through and are classified in `shared/aws/error-codes.ts`). */

/** The account-wide EC2 rate budget has no token for this call within the allowed wait. */
export class Ec2BudgetExhaustedError extends Error {
  readonly family: string;
  readonly retryAfterMs: number;
  /**
   * Attempts of the refused call already sent to EC2: 0 when the budget refused the first, so
   * nothing of the call can have landed.
   */
  readonly attemptsSent: number;
  constructor(
    family: string,
    retryAfterMs: number,
    attemptsSent = 0,
    options?: { cause?: unknown },
  ) {
    super(
      `EC2 rate budget "${family}" is spent; next token in ${Math.ceil(retryAfterMs)} ms`,
      options,
    );
    this.name = 'Ec2BudgetExhaustedError';
    this.family = family;
    this.retryAfterMs = retryAfterMs;
    this.attemptsSent = attemptsSent;
  }
}
