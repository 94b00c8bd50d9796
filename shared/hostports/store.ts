/**
 * What host port allocation needs from persistence, and nothing more. The DynamoDB adapter lives
 * in `shared/store/dynamo-host-port-store.ts`; tests may substitute their own.
 */
import type { HostPortRange, PortProtocol } from './spec.js';

/** One port a pod holds: one use of `port` in `range`. */
export interface HeldPort {
  /** The spec port's name (a TCPUDP port once, under its own name). */
  readonly name: string;
  readonly range: string;
  readonly port: number;
  readonly protocol: PortProtocol;
}

/** Who holds the ports: the pod as the webhook saw it at CREATE (no uid exists yet then). */
export interface PodRef {
  readonly namespace: string;
  /** Empty when the pod is created with generateName and has no name yet. */
  readonly name: string;
  readonly generateName: string;
}

/** The owner record: everything one allocation id holds, written in the same transaction as its counts. */
export interface PodPortRecord {
  readonly id: string;
  readonly pod: PodRef;
  readonly ports: readonly HeldPort[];
  /** Epoch milliseconds. */
  readonly createdAt: number;
}

/** Use counts of every port of a range as read, by offset from `range.first`. */
export interface RangeCounts {
  readonly range: HostPortRange;
  readonly counts: readonly number[];
}

/** Persistence of host port use counts and pod owner records. */
export interface HostPortStore {
  /** Use counts of every port of the range, read strongly consistent; never-used ports are 0. */
  readCounts(range: HostPortRange): Promise<RangeCounts>;
  /** The owner record, read strongly consistent; undefined when absent. */
  getRecord(id: string): Promise<PodPortRecord | undefined>;
  /**
   * Writes the record and adds one use per held port, all or nothing, provided the record does
   * not exist yet and every touched count still has the value in `observed`. Throws
   * `HostPortConflictError` when a count moved (re-read and choose again) and
   * `AllocationIdTakenError` when the id is taken. `observed: undefined` adds the uses with no
   * count condition: for a caller that chose no ports (repair records what a pod already uses).
   */
  commit(
    record: PodPortRecord,
    observed: ReadonlyMap<string, RangeCounts> | undefined,
  ): Promise<void>;
  /**
   * Deletes the record stored under `id` for `namespace` and removes one use per held port, all
   * or nothing; undefined (and nothing changed) when no such record exists, so a repeated release
   * is a no-op.
   */
  release(id: string, namespace: string): Promise<PodPortRecord | undefined>;
  /** Every owner record of the cluster (for repair). */
  listRecords(): AsyncIterable<PodPortRecord>;
}
