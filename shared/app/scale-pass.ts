/** The node scale pass, wired once per process, and the scale function's body. */
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { scaleFigures } from '../capacity/figures.js';
import type { ClusterCapacity } from '../capacity/view.js';
import type { ClusterSet } from '../clusters/cluster-set.js';
import { servingSeatsByNode } from '../fronts/slots/store.js';
import { createNodePool } from '../node-pool/create.js';
import type { NodePool } from '../node-pool/node-pool.js';
import { runScalePass, type ScalePassOptions, type ScaleReport } from '../scale/pass.js';
import { scalePolicy } from '../scale/policy.js';
import { admissionsTrigger, slackOf, TRIGGER_DEBOUNCE_MS } from '../scale/trigger.js';
import { DynamoCapacityLedger } from '../store/dynamo-capacity-ledger.js';
import { DynamoScaleMemory } from '../store/dynamo-scale-memory.js';
import { DynamoScaleTrigger } from '../store/dynamo-scale-trigger.js';
import { DynamoSlotChainStore } from '../store/dynamo-slot-chain-store.js';
import type { Observability } from './observability.js';
import { type PassContext, passLease, storeOptions } from './pass-context.js';
import { failWhenNothingWorked } from './pass-failure.js';
import { passInput } from './pass-input.js';
import { recordCapacity, recordScalePass } from './pass-records.js';

/** Runs one scale pass; `holder` names the runner in the lease. */
export type ScaleRunner = (
  holder: string,
  options?: Partial<Omit<ScalePassOptions, 'dryRun'>> & { readonly dryRun?: boolean },
) => Promise<ScaleReport>;

/** How a host runs its scale pass. */
export interface ScaleRunnerOptions {
  /** Replaces the configured pool's adapter (the simulator's Auto Scaling group). */
  readonly nodePool?: NodePool;
  /**
   * Whether this host's admissions trigger scale-up passes (shared/scale/admission-trigger.ts)
   * while the pass runs on a timer: so in AWS and on `berth serve`, not in `berth sim`. The
   * demand buffer then covers a triggered pass's reaction, not the schedule's.
   */
  readonly triggers?: boolean;
}

/**
 * Wires the scale pass: the node pool's AWS clients are made once. Where admissions trigger
 * passes, every pass that acts records the slack it left in the cluster's trigger store, where
 * they count against it.
 */
export function scaleRunner(context: PassContext, options: ScaleRunnerOptions = {}): ScaleRunner {
  const { config, clusterApi } = context;
  const now = context.now ?? Date.now;
  const lease = passLease(context);
  const memory = new DynamoScaleMemory(storeOptions(context));
  const pool =
    options.nodePool ?? createNodePool(config.scale.nodePool, { eksClusterName: config.cluster });
  // Where no admission counts against it, no pass records its slack.
  const trigger =
    options.triggers !== false && admissionsTrigger(config.scale)
      ? new DynamoScaleTrigger(storeOptions(context))
      : undefined;
  const policy = scalePolicy(config.scale, trigger ? { reactionMs: TRIGGER_DEBOUNCE_MS } : {});
  // NLB slots mode: only slots whose chain serves are ready capacity.
  const chains =
    config.fronts.nlb?.mode === 'slots'
      ? new DynamoSlotChainStore(storeOptions(context))
      : undefined;
  const servingFrontSeats = chains && (async () => servingSeatsByNode(await chains.listChains()));
  const capacity = new DynamoCapacityLedger(storeOptions(context));
  return async (holder, passOptions = {}) => {
    let recorded: Promise<unknown> = Promise.resolve();
    const report = await runScalePass(
      {
        cluster: clusterApi,
        pool,
        lease,
        now,
        holder,
        memory,
        ...(servingFrontSeats ? { servingFrontSeats } : {}),
      },
      config.scale,
      {
        policy,
        ...passOptions,
        dryRun: passOptions.dryRun ?? false,
        onPlanned: (tally, at, snapshot) => {
          passOptions.onPlanned?.(tally, at, snapshot);
          // Written at the plan's time, not the pass's end: admissions during its actions count.
          recorded = Promise.all([
            trigger?.passed(slackOf(tally), at),
            capacity.record(config.cluster, scaleFigures(tally, snapshot, at)),
          ]);
        },
      },
    );
    try {
      await recorded;
      return report;
    } catch (error) {
      // The pass acted; only the trigger's count and the capacity figures wait for the next.
      const reason = `the trigger's slack or the capacity figures were not recorded: ${(error as Error).message}`;
      return { ...report, notes: [...report.notes, { reason }] };
    }
  };
}

/**
 * What the scale function is invoked with: the schedule's input, `"dryRun": true` to log the plan
 * only, and `"triggered": true` from an admission that found the slack used up (./scale-ask.ts),
 * for a scale-up-only pass.
 */
export const scaleInput = passInput.extend({
  dryRun: z.boolean().optional(),
  triggered: z.boolean().optional(),
});

/** A parsed `scaleInput`. */
export type ScaleInput = z.infer<typeof scaleInput>;

/** What a scale invocation answers. */
export interface ScaleInvocationResult {
  readonly cluster: string;
  readonly dryRun: boolean;
  readonly actions: ScaleReport['actions'];
  readonly failures: number;
}

/**
 * The scale function's body (functions/scale/handler.ts; the cost meter runs the same): the pass
 * of the cluster the schedule names (`dryRun` logs the plan only), recorded, with the cluster's
 * capacity view where `capacity` reads it; a pass whose every action failed fails the invocation.
 */
export function scaleInvocation(
  passes: ClusterSet<ScaleRunner>,
  observe: Observability,
  capacity?: ClusterSet<() => Promise<ClusterCapacity>>,
): (input: ScaleInput, context: Pick<Context, 'awsRequestId'>) => Promise<ScaleInvocationResult> {
  return async (input, context) => {
    const { config, value: scale } = passes.get(input.cluster);
    observe.forCluster(config.cluster);
    const report = await scale(context.awsRequestId, {
      dryRun: input.dryRun ?? false,
      triggered: input.triggered ?? false,
    });
    recordScalePass(observe, report);
    // Once a minute per cluster: the whole capacity view, every pass's figures, to CloudWatch.
    if (capacity && !report.dryRun) {
      const view = await capacity.get(config.cluster).value();
      recordCapacity(observe, view, config.capacity.cloudWatchMetrics);
    }
    failWhenNothingWorked('scale', report.actions.length, report.failures);
    return {
      cluster: config.cluster,
      dryRun: report.dryRun,
      actions: report.actions,
      failures: report.failures.length,
    };
  };
}
