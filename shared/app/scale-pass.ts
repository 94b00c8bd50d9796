/** The node scale pass, wired once per process, and the scale function's body. */
import type { Context } from 'aws-lambda';
import type { ClusterSet } from '../clusters/cluster-set.js';
import { createNodePool } from '../node-pool/create.js';
import type { NodePool } from '../node-pool/node-pool.js';
import { runScalePass, type ScalePassOptions, type ScaleReport } from '../scale/pass.js';
import { DynamoScaleMemory } from '../store/dynamo-scale-memory.js';
import type { Observability } from './observability.js';
import { type PassContext, passLease, storeOptions } from './pass-context.js';
import { failWhenNothingWorked } from './pass-failure.js';
import type { PassInput } from './pass-input.js';
import { recordScalePass } from './pass-records.js';

/** Runs one scale pass; `holder` names the runner in the lease. */
export type ScaleRunner = (
  holder: string,
  options?: Partial<Omit<ScalePassOptions, 'dryRun'>> & { readonly dryRun?: boolean },
) => Promise<ScaleReport>;

/**
 * Wires the scale pass: the node pool's AWS clients are made once. `nodePool` replaces the
 * configured pool's adapter (the simulator's Auto Scaling group).
 */
export function scaleRunner(context: PassContext, nodePool?: NodePool): ScaleRunner {
  const { config, clusterApi } = context;
  const now = context.now ?? Date.now;
  const lease = passLease(context);
  const memory = new DynamoScaleMemory(storeOptions(context));
  const pool =
    nodePool ?? createNodePool(config.scale.nodePool, { eksClusterName: config.cluster });
  return (holder, options = {}) =>
    runScalePass({ cluster: clusterApi, pool, lease, now, holder, memory }, config.scale, {
      ...options,
      dryRun: options.dryRun ?? false,
    });
}

/** What a scale invocation answers. */
export interface ScaleInvocationResult {
  readonly cluster: string;
  readonly dryRun: boolean;
  readonly actions: ScaleReport['actions'];
  readonly failures: number;
}

/**
 * The scale function's body (functions/scale/handler.ts; the cost meter runs the same): the pass
 * of the cluster the schedule names (`dryRun` logs the plan only), recorded; a pass whose every
 * action failed fails the invocation.
 */
export function scaleInvocation(
  passes: ClusterSet<ScaleRunner>,
  observe: Observability,
): (
  input: PassInput & { readonly dryRun?: boolean | undefined },
  context: Pick<Context, 'awsRequestId'>,
) => Promise<ScaleInvocationResult> {
  return async (input, context) => {
    const { config, value: scale } = passes.get(input.cluster);
    observe.forCluster(config.cluster);
    const report = await scale(context.awsRequestId, { dryRun: input.dryRun ?? false });
    recordScalePass(observe, report);
    failWhenNothingWorked('scale', report.actions.length, report.failures);
    return {
      cluster: config.cluster,
      dryRun: report.dryRun,
      actions: report.actions,
      failures: report.failures.length,
    };
  };
}
