/**
 * Settle recovery, wired for the local server (shared/settle/recovery.ts): on start, the owners
 * the store says still wait go to the cluster's settle queue again (freed at once without a
 * cluster, as the server then frees everything), and the holders without a record get their one
 * look once the commit window has closed.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ExclusiveAllocator } from '../allocation/allocator.js';
import type { BerthConfig } from '../config/schema.js';
import type { ClusterApi } from '../k8s/cluster-api.js';
import { clusterIpRange, nodePortRange } from '../net/value-range.js';
import { settleTiming } from '../settle/policy.js';
import { freeNeverStored, recoverSettleTasks } from '../settle/recovery.js';
import { ImmediateSettler, QueueSettler } from '../settle/settler.js';
import type { SettleQueue } from '../settle/task.js';
import { DynamoAllocationStore } from '../store/dynamo-allocation-store.js';

/** What one served cluster's recovery runs against. */
export interface SettleRecoveryInput {
  readonly config: BerthConfig;
  readonly dynamo: DynamoDBClient;
  readonly tableName: string;
  /** The cluster to read back; absent: values are freed at once. */
  readonly clusterApi?: ClusterApi;
  /** The cluster's settle queue (present with a cluster). */
  readonly queue?: SettleQueue;
  /** Where recovery says what it did, and what failed. */
  readonly log: { info(line: string): void; warn(line: string): void };
}

/** A recovery under way; `stop` drops the look still waiting (the server is going down). */
export interface RunningRecovery {
  stop(): void;
}

/** Starts recovery in the background: serving does not wait for it. */
export function recoverLocalSettles(input: SettleRecoveryInput): RunningRecovery {
  const { config, log } = input;
  const store = new DynamoAllocationStore({
    client: input.dynamo,
    tableName: input.tableName,
    cluster: config.cluster,
  });
  const allocator = new ExclusiveAllocator({ store, random: Math.random, now: Date.now });
  const ranges = {
    clusterIps: config.serviceCIDRs.map(clusterIpRange),
    nodePorts: nodePortRange(config.nodePortRange),
  };
  const timing = settleTiming(config.settle.delaySeconds);
  const settler = input.queue
    ? new QueueSettler(input.queue, timing.delaySeconds, (task, error) =>
        log.warn(`settle ${task.id} not queued again after the restart: ${String(error)}`),
      )
    : new ImmediateSettler(allocator);
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const lookAtUnrecorded = (
    cluster: ClusterApi,
    unrecorded: Parameters<typeof freeNeverStored>[1],
  ) => {
    timer = setTimeout(() => {
      freeNeverStored({ cluster, allocator, ranges }, unrecorded).then(
        (freed) => {
          if (freed > 0)
            log.info(`settle after the restart: freed ${freed} value(s) no stored Service carries`);
        },
        (error: unknown) =>
          log.warn(
            `settle after the restart: the look at values without a record failed (the repair pass frees them): ${String(error)}`,
          ),
      );
    }, timing.commitWindowSeconds * 1000);
    // A server going down does not wait for it: the repair pass finds the same values.
    timer.unref();
  };
  recoverSettleTasks({ store, ranges, settler }).then(
    ({ releases, creates, unrecorded }) => {
      if (releases + creates > 0) {
        log.info(
          `settle after the restart: ${releases} owner(s) giving values back and ${creates} created with generateName handed to the settle step again`,
        );
      }
      if (input.clusterApi && unrecorded.size > 0 && !stopped)
        lookAtUnrecorded(input.clusterApi, unrecorded);
    },
    (error: unknown) =>
      log.warn(
        `settle after the restart: reading the store failed (the repair pass frees what waits): ${String(error)}`,
      ),
  );
  return {
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
