/** The node scale pass, wired once per process. */
import { createNodePool } from '../node-pool/create.js';
import type { NodePool } from '../node-pool/node-pool.js';
import { runScalePass, type ScaleReport } from '../scale/pass.js';
import { DynamoScaleMemory } from '../store/dynamo-scale-memory.js';
import { type PassContext, passLease, storeOptions } from './pass-context.js';

/** Runs one scale pass; `holder` names the runner in the lease. */
export type ScaleRunner = (
  holder: string,
  options?: { readonly dryRun?: boolean },
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
      dryRun: options.dryRun ?? false,
    });
}
