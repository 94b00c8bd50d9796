/** Errors of berth's EC2 layer (the SDK's own errors pass through and are classified in `shared/aws/error-codes.ts`). */

/** The account-wide EC2 rate budget has no token for this call within the allowed wait. */
export class Ec2BudgetExhaustedError extends Error {
  readonly family: string;
  readonly retryAfterMs: number;
  constructor(family: string, retryAfterMs: number, options?: { cause?: unknown }) {
    super(
      `EC2 rate budget "${family}" is spent; next token in ${Math.ceil(retryAfterMs)} ms`,
      options,
    );
    this.name = 'Ec2BudgetExhaustedError';
    this.family = family;
    this.retryAfterMs = retryAfterMs;
  }
}
