/**
 * One EC2 rate budget shared by every cluster of an account and Region, and no cluster starved
 * by another. EC2 meters its API per account and Region, whatever cluster calls it, so every
 * berth cluster in a table draws from the same buckets; each bucket also remembers how much each
 * cluster drew lately (decaying with a one-minute half-life). While the bucket is more than half
 * full there is no contention and anyone takes. Below half, a cluster takes only while its recent
 * draws stay within an equal share of everyone's: a cluster in a burst (150 nodes arriving at
 * once, VPC CNI #2730) cannot drain the bucket under the others, and gets all that the others
 * leave. Pure: the DynamoDB budget keeps the state.
 */
import { type BucketSpec, type BucketState, type TakeOutcome, takeTokens } from './token-bucket.js';

/** A shared bucket: its level, and each cluster's recent draws. */
export interface SharedBucketState extends BucketState {
  readonly draws: Readonly<Record<string, number>>;
}

/** Recent draws halve every minute: a cluster that stops drawing counts as gone within minutes. */
export const DRAW_HALF_LIFE_MS = 60_000;
/** Draws decayed below this are forgotten (the cluster is no longer active). */
const FORGOTTEN = 0.05;
/**
 * What a cluster refused for lack of tokens is recorded with, so it counts as active and the
 * others' shares shrink to make room for it, before it ever drew.
 */
const ASKING = 2 * FORGOTTEN;

/** Each cluster's draws decayed from `since` to `now`, the forgotten ones dropped. */
export function decayDraws(
  draws: Readonly<Record<string, number>>,
  since: number,
  now: number,
): Record<string, number> {
  const factor = 0.5 ** (Math.max(0, now - since) / DRAW_HALF_LIFE_MS);
  const out: Record<string, number> = {};
  for (const [cluster, drawn] of Object.entries(draws)) {
    const left = drawn * factor;
    if (left >= FORGOTTEN) out[cluster] = left;
  }
  return out;
}

/** The outcome of a fair take; `announced` when a refused cluster was newly recorded as asking. */
export type FairTake = TakeOutcome & {
  readonly state: SharedBucketState;
  readonly announced: boolean;
};

/** Takes `count` tokens for `cluster`, within its fair share while the bucket is contended. */
export function takeFairly(
  spec: BucketSpec,
  state: SharedBucketState,
  now: number,
  cluster: string,
  count = 1,
): FairTake {
  const draws = decayDraws(state.draws, state.updatedAt, now);
  const outcome = takeTokens(spec, state, now, count);
  if (!outcome.granted) {
    const announced = draws[cluster] === undefined;
    const asking = announced ? { ...draws, [cluster]: ASKING } : draws;
    return { ...outcome, state: { ...outcome.state, draws: asking }, announced };
  }
  const contended = outcome.state.tokens + count < spec.capacity / 2;
  const active = new Set([...Object.keys(draws), cluster]).size;
  const total = Object.values(draws).reduce((sum, drawn) => sum + drawn, 0) + count;
  const mine = (draws[cluster] ?? 0) + count;
  if (contended && active > 1 && mine > total / active) {
    // Over its share: wait for what its share of the refill brings.
    const shareRate = spec.refillPerSecond / active;
    const retryAfterMs = Math.ceil((1000 * (mine - total / active)) / Math.max(shareRate, 0.001));
    return {
      granted: false,
      state: { ...state, draws },
      retryAfterMs: Math.max(1, retryAfterMs),
      announced: false,
    };
  }
  return {
    ...outcome,
    state: { ...outcome.state, draws: { ...draws, [cluster]: mine } },
    announced: false,
  };
}
