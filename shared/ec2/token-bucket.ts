/**
 * Token-bucket arithmetic, the way EC2 meters its API (a bucket per action that refills every
 * second up to a maximum). Pure: the DynamoDB budget, the in-memory budget and the EC2 fake all
 * keep their state elsewhere and call these.
 */

/** Bucket size and refill rate. */
export interface BucketSpec {
  readonly capacity: number;
  readonly refillPerSecond: number;
}

/** A bucket's level at an instant (epoch ms). */
export interface BucketState {
  readonly tokens: number;
  readonly updatedAt: number;
}

/** The outcome of asking for tokens. */
export interface TakeOutcome {
  readonly granted: boolean;
  /** The bucket after the attempt (refilled; reduced when granted). */
  readonly state: BucketState;
  /** When not granted: how long until `count` tokens are there (0 when granted). */
  readonly retryAfterMs: number;
}

/** A full bucket, as a fresh account (or a never-used budget item) starts. */
export function fullBucket(spec: BucketSpec, now: number): BucketState {
  return { tokens: spec.capacity, updatedAt: now };
}

/** The bucket refilled up to `now`; a clock that went backwards refills nothing. */
export function refill(spec: BucketSpec, state: BucketState, now: number): BucketState {
  const elapsed = Math.max(0, now - state.updatedAt);
  const tokens = Math.min(spec.capacity, state.tokens + (elapsed / 1000) * spec.refillPerSecond);
  return { tokens, updatedAt: Math.max(now, state.updatedAt) };
}

/** Takes `count` tokens when the refilled bucket holds them. */
export function takeTokens(
  spec: BucketSpec,
  state: BucketState,
  now: number,
  count = 1,
): TakeOutcome {
  const current = refill(spec, state, now);
  if (current.tokens >= count) {
    return {
      granted: true,
      state: { ...current, tokens: current.tokens - count },
      retryAfterMs: 0,
    };
  }
  const missing = count - current.tokens;
  const retryAfterMs =
    spec.refillPerSecond > 0 ? Math.ceil((missing / spec.refillPerSecond) * 1000) : Infinity;
  return { granted: false, state: current, retryAfterMs };
}
