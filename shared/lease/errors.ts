/** Lease failures. */

/** A holder renewed a lease that is no longer theirs: stop before acting on stale authority. */
export class LeaseLostError extends Error {
  readonly lease: string;
  readonly holder: string;
  constructor(lease: string, holder: string, options?: { cause?: unknown }) {
    super(`lease "${lease}" is no longer held by ${holder}`, options);
    this.name = 'LeaseLostError';
    this.lease = lease;
    this.holder = holder;
  }
}
