/**
 * What host port allocation needs from persistence, and nothing more. The DynamoDB adapter lives
 * in `shared/store/dynamo-host-port-store.ts`; tests may substitute their own.
 */
import type { Owner } from '../vocabulary/owner.js';
import type { HostPortRange, PortProtocol } from './model.js';

/** One count item as a write answered it: the uses of each of its ports, absent ones 0. */
export interface BlockCounts {
  readonly range: string;
  /** The first port of the block and how many ports it covers. */
  readonly firstPort: number;
  readonly ports: number;
  /** Port number → uses; a port the item has no count for has 0. */
  readonly counts: ReadonlyMap<number, number>;
  /** When a use was last added to the item (epoch ms), if a writer recorded it. */
  readonly writtenAt?: number;
  /** Port numbers of the item held by pods berth never admitted. */
  readonly foreign?: ReadonlySet<number>;
}

/** One port a pod holds: one use of `port` in `range`. */
export interface HeldPort {
  /** The spec port's name (a TCPUDP port once, under its own name). */
  readonly name: string;
  readonly range: string;
  readonly port: number;
  readonly protocol: PortProtocol;
}

/**
 * The owner record: everything one allocation id holds. Written beside its uses, not in one
 * transaction with them: the record is what makes a release happen exactly once (whoever deletes
 * it removes its uses), and the repair pass corrects any count a crash left between the two.
 */
export interface PodPortRecord {
  readonly id: string;
  /** Who holds the ports: the pod as the webhook saw it at CREATE (no uid exists yet then). */
  readonly pod: Owner;
  readonly ports: readonly HeldPort[];
  /** Epoch milliseconds. */
  readonly createdAt: number;
  /**
   * The allocation that wrote it: the same allocation may rewrite its own record after choosing
   * again, no other may. Absent on records the repair pass wrote.
   */
  readonly token?: string;
  /**
   * Host ports this record holds of its namespace's `hostPortQuotas` count: taken by its first
   * write and given back by its delete, each in one transaction with the record, so the count is
   * always the sum over the namespace's records. 0 when the namespace had no quota at the CREATE
   * (and on records the repair pass wrote); absent on records written before records carried it
   * (0.2.0), whose ports were taken apart from the record: `releaseQuota` gives those back.
   */
  readonly quotaUnits?: number;
}

/**
 * Whether `record` is `pod`'s as a release must find it: its namespace, and its name (or, for a
 * record written before the apiserver named the pod, its `generateName`), and, when given,
 * written with `token`. An unnamed `pod` that names its CREATE request is that request's only:
 * a release decided on the record as read loses to a re-invocation that took it over since.
 */
export function isRecordOf(record: PodPortRecord, pod: Owner, token?: string): boolean {
  if (record.pod.namespace !== pod.namespace) return false;
  const unnamed =
    !!pod.generateName && record.pod.name === '' && record.pod.generateName === pod.generateName;
  if (record.pod.name !== pod.name && !unnamed) return false;
  if (unnamedRequestOf(pod) !== undefined && record.pod.request !== pod.request) return false;
  return token === undefined || record.token === token;
}

/** The CREATE request an unnamed owner is known by, which a release of its record checks. */
export function unnamedRequestOf(pod: Owner): string | undefined {
  return pod.name === '' && pod.generateName ? pod.request : undefined;
}

/** Use counts of every port of a range as read, by offset from `range.first`. */
export interface RangeCounts {
  readonly range: HostPortRange;
  readonly counts: readonly number[];
  /** Offsets a write of this process is on right now (their counts include it): chosen last. */
  readonly busy?: ReadonlySet<number>;
  /**
   * Consecutive port numbers, aligned to multiples of it, whose counts share one stored item:
   * a pod's ports in one item cost one write.
   */
  readonly portsPerItem?: number;
  /**
   * Offsets held by pods berth never admitted (DaemonSets, hostNetwork pods), as the repair pass
   * recorded them: never handed out.
   */
  readonly foreign?: ReadonlySet<number>;
}

/** How fresh a whole read of a range's counts must be. */
export type CountsRead = 'strong' | 'eventual';

/**
 * Persistence of host port use counts and pod owner records. Each call is one conditional write
 * (or an unconditional count change), but for the record writes that take or give back quota
 * units: those are one transaction with the namespace's count.
 */
export interface HostPortStore {
  /**
   * Use counts of every port of the range, never-used ports 0: read strongly consistent unless
   * `read` is `eventual`, which costs half and may miss the last second's writes (for a view
   * that every count write re-checks).
   */
  readCounts(range: HostPortRange, read?: CountsRead): Promise<RangeCounts>;
  /** The owner record, read strongly consistent; undefined when absent. */
  getRecord(id: string): Promise<PodPortRecord | undefined>;
  /**
   * Writes the record when none is stored under its id, or the stored one has the same token.
   * Throws `AllocationIdTakenError` otherwise. With `quota` (the namespace's `hostPortQuotas`), a
   * first write takes the record's `quotaUnits` from its namespace's count in one transaction,
   * only while the count stays at most `quota`: `NamespaceQuotaFullError`, and nothing written,
   * when it would not. A rewrite takes nothing again.
   */
  putRecord(record: PodPortRecord, quota?: number): Promise<void>;
  /**
   * Deletes the record stored under `id` for `pod` (`isRecordOf`) and answers it; undefined, and
   * nothing changed, when there is no such record. A pod that only carries another's id releases
   * nothing. The record's `quotaUnits` go back to its namespace's count in the same transaction:
   * a retried, repeated or concurrent delete gives back nothing more.
   */
  deleteRecord(id: string, pod: Owner, token?: string): Promise<PodPortRecord | undefined>;
  /**
   * Hands the unnamed record under `id`, as read for `recorded`, to `request`, a re-invocation of
   * its CREATE: only while it is still unnamed and `recorded.request`'s (or already `request`'s:
   * a retry of a hand-over that landed is one). False when it is not (gone, named, taken over by
   * another request meanwhile): nothing changed. A release of the record as read then
   * finds it another request's, so no release decided before the hand-over frees what the
   * re-invoked pod is told it holds.
   */
  handOver(id: string, recorded: Owner, request: string): Promise<boolean>;
  /**
   * Adds one use per held port, one write per count item, all in parallel. With `levels`
   * (`<range>#<port>` → the condition the choice set), a port's use is added only while its
   * count meets it; if any item refuses, the uses added to the others are taken back and
   * `HostPortConflictError` is thrown with the items as found. A conditioned use is also refused
   * on a port recorded as held by a pod berth never admitted. With `writtenAt` (epoch ms) each
   * item written records it as its last add, for `UseLevel.concurrentSince`. Answers the items
   * as left.
   */
  addUses(
    ports: readonly HeldPort[],
    levels?: ReadonlyMap<string, UseLevel>,
    writtenAt?: number,
  ): Promise<readonly BlockCounts[]>;
  /** Removes one use per held port; answers the count items as left. */
  removeUses(ports: readonly HeldPort[]): Promise<readonly BlockCounts[]>;
  /** Every owner record of the cluster (for repair). */
  listRecords(): AsyncIterable<PodPortRecord>;
  /**
   * Adds `delta` to the host ports `namespace` holds (`hostPortQuotas`), conditioned, when
   * `limit` is given, on the result staying at most `limit`, and a taking-back never going below
   * zero. Answers whether it applied and the use as left or found.
   */
  adjustNamespaceUse(
    namespace: string,
    delta: number,
    limit?: number,
  ): Promise<{ readonly applied: boolean; readonly used: number }>;
  /** The host ports `namespace` holds as counted for its quota (strongly consistent). */
  namespaceUse(namespace: string): Promise<number>;
}

/**
 * The condition on one port's use: its count at most `level`, or at most `level + 1` when its
 * count item had a use added after `concurrentSince` (epoch ms, the allocation's start): the use
 * the choice missed is then a concurrent allocation's, not one finished before it began. A level
 * of `ANY_COUNT` takes the use at whatever count (still never on a port held outside berth).
 */
export interface UseLevel {
  readonly level: number;
  readonly concurrentSince?: number;
}

/**
 * The level of a use no count can refuse: a pick no other pick could better, such as the one
 * port of a range (`levelsOf` in allocator.ts). Written as an atomic ADD that never conflicts.
 */
export const ANY_COUNT = Number.POSITIVE_INFINITY;

/** Where the record of a pod created with generateName learns the name the apiserver gave it. */
export interface PodNameStore extends Pick<HostPortStore, 'getRecord'> {
  /**
   * Writes the name the apiserver gave a pod recorded without one: only while the record under
   * `id` is unnamed, of `pod.namespace` and `pod.generateName`. False when it is not (already
   * named, another pod's, gone): nothing changed.
   */
  learnName(id: string, pod: Owner): Promise<boolean>;
}

/** The `levels` key of one port. */
export function levelKey(range: string, port: number): string {
  return `${range}#${port}`;
}
