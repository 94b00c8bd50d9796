/**
 * When a scheduled pass counts as failed: it tried and nothing it tried worked (every EC2 or
 * Kubernetes call refused). Such a pass fails its function, so the Errors alarm fires; a pass
 * with some failures among successes reports them and succeeds, as its next run retries them.
 */

/** A pass whose every action failed. */
export class PassFailedError extends Error {
  constructor(
    readonly pass: string,
    readonly failures: number,
    firstFailure: unknown,
  ) {
    super(
      `the ${pass} pass failed: all ${failures} of its actions failed; first: ${describe(firstFailure)}`,
    );
    this.name = 'PassFailedError';
  }
}

function describe(failure: unknown): string {
  if (failure instanceof Error) return failure.message;
  if (typeof failure === 'object' && failure !== null && 'message' in failure)
    return String((failure as { message: unknown }).message);
  return JSON.stringify(failure) ?? String(failure);
}

/** Throws `PassFailedError` when the pass had failures and no success. */
export function failWhenNothingWorked(
  pass: string,
  succeeded: number,
  failures: readonly unknown[],
): void {
  if (failures.length > 0 && succeeded === 0) {
    throw new PassFailedError(pass, failures.length, failures[0]);
  }
}
