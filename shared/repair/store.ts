/**
 * What the repair pass needs from the stores, and nothing more. `DynamoAllocationStore` and
 * `DynamoHostPortStore` provide it; tests may substitute their own.
 */

import type { AllocationStore } from '../allocation/store.js';
import type { HostPortStore } from '../hostports/store.js';
import type { Offset } from '../net/offset.js';

/** The exclusive-value store as repair uses it: the allocator's calls plus an atomic hand-over. */
export interface RepairAllocationStore
  extends Pick<
    AllocationStore,
    'getOwner' | 'putOwner' | 'deleteOwner' | 'listOwners' | 'scanBlocks' | 'claim' | 'release'
  > {
  /**
   * Moves a value from `fromId` to `toId` in one conditional write (no other writer can take it
   * in between); false when `fromId` no longer holds it.
   */
  transfer(range: string, offset: Offset, fromId: string, toId: string): Promise<boolean>;
}

/**
 * The host port store as repair uses it: the allocator's calls plus one correction of a use
 * count, conditional on the count read.
 */
export interface HostPortRepairStore
  extends Pick<
    HostPortStore,
    | 'readCounts'
    | 'listRecords'
    | 'putRecord'
    | 'addUses'
    | 'deleteRecord'
    | 'removeUses'
    | 'adjustNamespaceUse'
    | 'namespaceUse'
  > {
  /** Sets the use count of `port` in `range` to `to` if it is still `from`; false when it moved. */
  correctCount(range: string, port: number, from: number, to: number): Promise<boolean>;
  /** Marks a port as held by a pod berth never admitted (never handed out), or clears it. */
  markForeign(range: string, port: number, held: boolean): Promise<void>;
}
