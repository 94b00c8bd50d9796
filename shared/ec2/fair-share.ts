/**
 * One rate budget shared by every cluster of an account and Region, and no cluster starved by
 * another. EC2 and Elastic Load Balancing meter their APIs per account and Region (Global
 * Accelerator per account), whatever cluster calls them, so every berth cluster in a table draws
 * from the same buckets. Each bucket also remembers how much each
 * cluster drew lately (decaying with a one-minute half-life) and which clusters are waiting for
 * tokens now. A cluster alone in its need takes all the bucket has, as it would alone in the
 * account. Once the bucket is below half full and another cluster is waiting, the least-served
 * contender goes first (max-min fairness): a cluster whose 150 nodes arrive together (VPC CNI
 * #2730) cannot drain the bucket under a cluster that needs a few calls, and gets all the others
 * leave. Pure: the DynamoDB budget keeps the state.
 */
import { ownValueOf } from '../vocabulary/opaque.js';
import {
  type BudgetFamily,
  type BudgetSpecs,
  budgetSpecs,
  type RateBudget,
} from './rate-budget.js';
import {
  type BucketSpec,
  type BucketState,
  fullBucket,
  refill,
  type TakeOutcome,
  takeTokens,
} from './token-bucket.js';

/** A shared bucket: its level, each cluster's recent draws, and since when each waits. */
export interface SharedBucketState extends BucketState {
  readonly draws: Readonly<Record<string, number>>;
  readonly waiting: Readonly<Record<string, number>>;
}

/** Recent draws halve every minute: a cluster that stops drawing counts as gone within minutes. */
export const DRAW_HALF_LIFE_MS = 60_000;
/** Draws decayed below this are forgotten. */
const FORGOTTEN = 0.05;
/**
 * A refused cluster counts as waiting this long (its EC2 client retries within it); it is
 * re-announced, one write, when half of it has passed.
 */
export const WAITING_MS = 10_000;

/** A bucket never drawn from: full, nobody's draws, nobody waiting. */
export function freshSharedBucket(spec: BucketSpec, now: number): SharedBucketState {
  return { ...fullBucket(spec, now), draws: {}, waiting: {} };
}

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

/** The outcome of a fair take; `announced` when a refused cluster was newly recorded as waiting. */
export type FairTake = TakeOutcome & {
  readonly state: SharedBucketState;
  readonly announced: boolean;
};

/** Takes `count` tokens for `cluster`, least-served first while the bucket is contended. */
export function takeFairly(
  spec: BucketSpec,
  state: SharedBucketState,
  now: number,
  cluster: string,
  count = 1,
): FairTake {
  const draws = decayDraws(state.draws, state.updatedAt, now);
  const waiting = Object.fromEntries(
    Object.entries(state.waiting).filter(([, since]) => since > now - WAITING_MS),
  );
  const refuse = (retryAfterMs: number, current: BucketState): FairTake => {
    const last = ownValueOf(waiting, cluster);
    const announced = last === undefined || last <= now - WAITING_MS / 2;
    return {
      granted: false,
      state: { ...current, draws, waiting: announced ? { ...waiting, [cluster]: now } : waiting },
      retryAfterMs: Math.max(1, retryAfterMs),
      announced,
    };
  };
  const outcome = takeTokens(spec, state, now, count);
  if (!outcome.granted) return refuse(outcome.retryAfterMs, outcome.state);
  const contended = outcome.state.tokens + count < spec.capacity / 2;
  const mine = ownValueOf(draws, cluster) ?? 0;
  const lessServed = Object.keys(waiting).some(
    (other) => other !== cluster && (ownValueOf(draws, other) ?? 0) < mine,
  );
  if (contended && lessServed) {
    // A less-served cluster waits: it goes first; this one waits a refill's worth. The bucket
    // is kept as refilled to now, the instant its draws were decayed to: kept at its old
    // instant, the next take would decay the same draws over the same time again.
    return refuse(
      Math.ceil((1000 * count) / Math.max(spec.refillPerSecond, 0.001)),
      refill(spec, state, now),
    );
  }
  const { [cluster]: _, ...stillWaiting } = waiting;
  return {
    ...outcome,
    state: {
      ...outcome.state,
      draws: { ...draws, [cluster]: mine + count },
      waiting: stillWaiting,
    },
    announced: false,
  };
}

/**
 * The account's budget kept in one process (the benchmarks, tests), for one cluster or shared by
 * several with the DynamoDB budget's fair share. A cluster alone draws as from a plain token
 * bucket.
 */
export class InProcessSharedBudget {
  readonly #now: () => number;
  readonly #specs: Readonly<Record<BudgetFamily, BucketSpec>>;
  readonly #buckets = new Map<BudgetFamily, SharedBucketState>();

  /** `specs`: the buckets that differ from `DEFAULT_ACCOUNT_BUDGET`. */
  constructor(now: () => number, specs: BudgetSpecs = {}) {
    this.#now = now;
    this.#specs = budgetSpecs(specs);
  }

  /** `cluster`'s handle on the budget. */
  for(cluster: string): RateBudget {
    return {
      take: async (family, count = 1) => {
        const spec = this.#specs[family];
        const now = this.#now();
        const state = this.#buckets.get(family) ?? freshSharedBucket(spec, now);
        const outcome = takeFairly(spec, state, now, cluster, count);
        this.#buckets.set(family, outcome.state);
        return { granted: outcome.granted, retryAfterMs: outcome.retryAfterMs };
      },
    };
  }
}
