/**
 * How admission hands owners to the settle step. Three ways, one interface:
 * - `QueueSettler` puts a task on a delay queue (SQS in AWS, timers in `berth serve`);
 * - `ImmediateSettler` frees given-back values at once, for a server without a cluster, where
 *   nothing can be read back (the server says so at start);
 * - tests use their own.
 */
import type { ExclusiveAllocator } from '../allocation/allocator.js';
import type { SettleQueue, SettleTask } from './task.js';

/** Takes owners whose values wait for the apiserver's commit. */
export interface Settler {
  /**
   * Hands over one owner. A queue that refuses the task does not fail the admission: the values
   * are marked in the store, so the repair pass finds them again. Store failures propagate.
   */
  track(task: SettleTask): Promise<void>;
}

/**
 * A deployment's one queue, for one of the clusters it serves: each task carries its cluster, so
 * the settle function looks the owner up in that cluster.
 */
export function taggedWithCluster(queue: SettleQueue, cluster: string): SettleQueue {
  return { submit: (task, delaySeconds) => queue.submit({ ...task, cluster }, delaySeconds) };
}

/** Tasks go on a delay queue, for a first look `delaySeconds` after the admission. */
export class QueueSettler implements Settler {
  readonly #queue: SettleQueue;
  readonly #delaySeconds: number;
  readonly #onLost: (task: SettleTask, error: unknown) => void;

  constructor(
    queue: SettleQueue,
    delaySeconds: number,
    onLost: (task: SettleTask, error: unknown) => void,
  ) {
    this.#queue = queue;
    this.#delaySeconds = delaySeconds;
    this.#onLost = onLost;
  }

  async track(task: SettleTask): Promise<void> {
    try {
      await this.#queue.submit(task, this.#delaySeconds);
    } catch (error) {
      this.#onLost(task, error);
    }
  }
}

/**
 * No cluster to read: what admission gave back is freed at once (the object is taken to carry
 * what the admitted change says), and values of a CREATE are kept. With `recordCreates`, a CREATE
 * that wrote no owner record (its id names its owner) gets one now: without a cluster, nothing
 * else could say whose its values are (`berth status --holder IP`, the web view).
 */
export class ImmediateSettler implements Settler {
  readonly #allocator: Pick<ExclusiveAllocator, 'holding' | 'settle' | 'recordCreated'>;
  readonly #recordCreates: boolean;

  constructor(
    allocator: Pick<ExclusiveAllocator, 'holding' | 'settle' | 'recordCreated'>,
    options: { readonly recordCreates?: boolean } = {},
  ) {
    this.#allocator = allocator;
    this.#recordCreates = options.recordCreates === true;
  }

  async track(task: SettleTask): Promise<void> {
    if (task.reason === 'create') {
      const created = task.unrecorded;
      if (this.#recordCreates && created) {
        await this.#allocator.recordCreated(
          task.id,
          { kind: 'Service', namespace: created.namespace, name: created.name },
          created.claims,
        );
      }
      return;
    }
    // Versioned like every settle: a concurrent admission of the owner means reading again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const record = await this.#allocator.holding(task.id);
      if (!record?.releasing?.length) return;
      if (await this.#allocator.settle(record, { free: record.releasing })) return;
    }
  }
}
