/**
 * Growing one pool outside the pass: on the spot for a pod that found no ready IP, and ahead of
 * demand when an assign leaves the pool below its low watermark (`refillAheadDue`). The pass runs
 * once a minute; a matchmaking wave fills a node in seconds, so the assign path asks for the
 * top-up and the pool is grown before the wave drains it.
 */
import { type EniDeps, leaseHolder } from './deps.js';
import { PoolBusyError } from './errors.js';
import { mayGrowDespiteMark } from './exhaustion-probe.js';
import { heldFloor } from './group-use.js';
import { nodeView } from './handout/view.js';
import { intentAddresses, type NodeState, type PoolRecord } from './model.js';
import { type PoolPlan, planPool, surgeOf, usesPrefixes } from './policy.js';
import { applyPlan, type EniFailure, newTally } from './pool-actions.js';

/**
 * How a refill attempt ended: `grown`; `failed` (EC2 refused every call, see `failures`);
 * `not-needed` (the pool is within its bounds); `busy` (another writer holds the pool's lease);
 * `gone` (no pool, or it is draining).
 */
export type RefillOutcome = 'grown' | 'failed' | 'not-needed' | 'busy' | 'gone';

/** A refill attempt's outcome and the EC2 failures it met. */
export interface RefillResult {
  readonly outcome: RefillOutcome;
  readonly failures: readonly EniFailure[];
}

const UNTRIED = { failures: [] } as const;

/**
 * Requests for a background refill of one node's pool. `request` resolves once the request is
 * handed over (queued in process, or accepted by Lambda's async invoke) and never rejects: a lost
 * request costs only the head start, the pass and the on-demand refill still grow the pool.
 */
export interface RefillRequests {
  request(node: string): Promise<void>;
}

/**
 * Grows the pool to its surge-sized target (assign and create only, never a trim) under the
 * pool's lease. `waiting` counts pods blocked on this refill. Answers `busy` when another writer
 * holds the lease (it is growing or trimming the pool from fresher reads).
 */
export async function refillPool(
  deps: EniDeps,
  pool: PoolRecord,
  waiting: number,
): Promise<RefillResult> {
  const now = deps.now();
  const holder = leaseHolder(deps);
  if (!(await deps.store.tryLease(pool.node, holder, now, now + deps.leaseMs))) {
    return { outcome: 'busy', ...UNTRIED };
  }
  try {
    const state = await deps.store.loadNode(pool.node);
    const plan = await planStoredPool(deps, pool, state, now, waiting);
    if (plan.assign.length === 0 && plan.create.length === 0) {
      return { outcome: 'not-needed', ...UNTRIED };
    }
    const tally = newTally();
    await applyPlan(deps, pool, state, { ...plan, unassign: [], deleteEnis: [] }, tally);
    const budget = tally.failures.find((f) => f.code === 'BudgetExhausted');
    if (budget && tally.ipsAssigned + tally.ipsAdopted === 0) {
      throw new PoolBusyError(`node ${pool.node}: EC2 rate budget spent; retry shortly`, 1000);
    }
    const grown = tally.ipsAssigned + tally.ipsAdopted > 0 || tally.enisCreated > 0;
    return { outcome: grown ? 'grown' : 'failed', failures: tally.failures };
  } finally {
    await deps.store.endLease(pool.node, holder);
  }
}

/**
 * Plans a pool from its stored records: growth only while its subnet is not marked exhausted (or,
 * for a waiting pod, EC2 counts free addresses there again: `exhaustion-probe.ts`), by
 * prefixes in prefix mode on a Nitro node unless the subnet is marked short of free /28s (then by
 * single addresses until the mark lapses), both bounds raised by the surge plus `waiting` (pods
 * blocked on this plan). The pass and every refill plan through here, so none undoes what another
 * sized.
 */
export async function planStoredPool(
  deps: EniDeps,
  pool: PoolRecord,
  state: NodeState,
  now: number,
  waiting = 0,
): Promise<PoolPlan> {
  // Both marks at once: an on-demand refill plans while a pod waits.
  const [exhaustedUntil, prefixesShortUntil] = await Promise.all([
    deps.store.subnetShortUntil(pool.subnetId, 'addresses'),
    usesPrefixes(deps.policy.mode, pool)
      ? deps.store.subnetShortUntil(pool.subnetId, 'prefixes')
      : Promise.resolve(undefined),
  ]);
  const mayGrow =
    exhaustedUntil <= now || (await mayGrowDespiteMark(deps, pool, exhaustedUntil, now, waiting));
  // A pool its node hands out is sized from what the node reported it holds.
  const ips = nodeView(pool, state.ips);
  return planPool({
    limits: pool,
    enis: state.enis.filter((eni) => eni.state === 'attached'),
    pendingCreates: state.intents.map(intentAddresses),
    ips,
    policy: deps.policy,
    now,
    draining: pool.draining,
    mayGrow,
    growByPrefix: prefixesShortUntil !== undefined && prefixesShortUntil <= now,
    waiting: waiting + surgeOf(ips, now),
    floor: heldFloor(pool.floor, Math.max(exhaustedUntil, prefixesShortUntil ?? 0), now),
    ...(pool.opening ? { opening: pool.opening } : {}),
  });
}

/** The background refill itself (what a request leads to): the node's pool, grown ahead. */
export async function refillAhead(deps: EniDeps, node: string): Promise<RefillResult> {
  const pool = await deps.store.getPool(node);
  if (!pool || pool.draining) return { outcome: 'gone', ...UNTRIED };
  return refillPool(deps, pool, 0);
}

/**
 * Background refills inside one long-lived process (`berth serve`): at most one per node queued
 * or running, run off the request path.
 */
export class InProcessRefills implements RefillRequests {
  readonly #run: (node: string) => Promise<unknown>;
  readonly #onError: (node: string, error: unknown) => void;
  readonly #running = new Map<string, Promise<void>>();

  constructor(
    run: (node: string) => Promise<unknown>,
    onError: (node: string, error: unknown) => void,
  ) {
    this.#run = run;
    this.#onError = onError;
  }

  async request(node: string): Promise<void> {
    if (this.#running.has(node)) return;
    const done = Promise.resolve()
      .then(() => this.#run(node))
      .then(
        () => undefined,
        (error: unknown) => this.#onError(node, error),
      )
      .finally(() => this.#running.delete(node));
    this.#running.set(node, done);
  }

  /** Resolves when every refill requested so far has ended (shutdown, tests). */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running.values());
  }
}
