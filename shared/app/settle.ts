/**
 * The settle step, wired once per process: the local server runs it on in-process timers, the
 * settle function from SQS. Both look at owners exactly the same way.
 */
import { ExclusiveAllocator } from '../allocation/allocator.js';
import { clusterIpRange, nodePortRange } from '../allocation/range.js';
import { settleTiming } from '../settle/policy.js';
import { type SettleOutcome, settleStep } from '../settle/step.js';
import type { SettleTask } from '../settle/task.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';
import { type PassContext, storeOptions } from './pass-context.js';

/** One look at one owner. */
export type SettleRunner = (task: SettleTask) => Promise<SettleOutcome>;

/** Wires the settle step to the table and the cluster of `context`. */
export function settleRunner(context: PassContext): SettleRunner {
  const { config, clusterApi } = context;
  const now = context.now ?? Date.now;
  const deps = {
    allocator: new ExclusiveAllocator({
      store: new DynamoAllocationStore(storeOptions(context)),
      random: Math.random,
      now,
    }),
    cluster: clusterApi,
    ranges: {
      clusterIps: config.serviceCIDRs.map(clusterIpRange),
      nodePorts: nodePortRange(config.nodePortRange),
    },
    timing: settleTiming(config.settle.delaySeconds),
    now,
  };
  return (task) => settleStep(deps, task);
}
