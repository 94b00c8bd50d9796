/**
 * Leases: one holder at a time for a named job (a scheduled pass), expiring on their own when the
 * holder dies. The DynamoDB adapter is `DynamoLease`; the scale and repair passes take this
 * interface.
 */

/** A lease held until `expiresAtMs` (epoch ms) unless renewed. */
export interface LeaseGrant {
  readonly name: string;
  readonly holder: string;
  readonly expiresAtMs: number;
}

/** The outcome of an acquisition: the lease, or who holds it and until when. */
export type LeaseAttempt =
  | { readonly acquired: true; readonly lease: LeaseGrant }
  | { readonly acquired: false; readonly holder: string; readonly expiresAtMs: number };

/** Named leases with expiry. */
export interface Lease {
  /**
   * Takes `name` for `ttlMs` when it is free, expired, or already `holder`'s (a retry after a
   * crash re-acquires its own lease).
   */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<LeaseAttempt>;
  /** Extends `holder`'s lease by `ttlMs` from now; throws `LeaseLostError` when it is not theirs. */
  renewLease(name: string, holder: string, ttlMs: number): Promise<LeaseGrant>;
  /** Gives the lease up; false when `holder` did not hold it (expired and taken, or released). */
  releaseLease(name: string, holder: string): Promise<boolean>;
}

/** What `withLease` ran, or who held the lease instead. */
export type LeasedRun<T> =
  | { readonly ran: true; readonly value: T }
  | { readonly ran: false; readonly holder: string; readonly expiresAtMs: number };

/**
 * Runs `work` under the lease `name` and releases it afterwards, also when `work` throws. When
 * another holder has it, `work` does not run. `work` gets a `renew` to call before a step that
 * must not run once the lease may have passed to someone else. The release is best-effort: its
 * failure never replaces `work`'s result or error, since the TTL frees the lease anyway.
 */
export async function withLease<T>(
  lease: Lease,
  request: { readonly name: string; readonly holder: string; readonly ttlMs: number },
  work: (renew: () => Promise<LeaseGrant>) => Promise<T>,
): Promise<LeasedRun<T>> {
  const { name, holder, ttlMs } = request;
  const attempt = await lease.acquireLease(name, holder, ttlMs);
  if (!attempt.acquired) {
    return { ran: false, holder: attempt.holder, expiresAtMs: attempt.expiresAtMs };
  }
  try {
    const value = await work(() => lease.renewLease(name, holder, ttlMs));
    return { ran: true, value };
  } finally {
    try {
      await lease.releaseLease(name, holder);
    } catch {
      // Best-effort: the TTL reclaims a lease whose release failed.
    }
  }
}
