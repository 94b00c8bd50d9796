/**
 * What the allocators need from persistence, and nothing more (Karpenter's narrow-interface
 * shape). The DynamoDB adapter lives in `shared/store/`; tests may substitute their own.
 */
import type { Offset } from '../net/offset.js';
import type { Owner } from '../vocabulary/owner.js';

/** The taken slots of one block of a range: slot (offset within the block) → allocation id. */
export interface Block {
  readonly index: Offset;
  readonly holders: ReadonlyMap<number, string>;
  /**
   * Slot → when its holder claimed it (epoch ms, to the second, rounded up), for the slots whose
   * claim said so. A slot without one was claimed before claims were stamped, or by repair.
   */
  readonly claimedAt?: ReadonlyMap<number, number>;
}

/** One value an owner holds: the range's store key and the value's offset in it. */
export interface Claim {
  readonly slot: string;
  readonly range: string;
  readonly offset: Offset;
  /**
   * Epoch ms of the admission that last added the value to its owner (allocated it, or took it
   * back from `releasing`). The write that admission let through may still be on its way to
   * etcd until its deadline, carrying the value: absent for values no such write can carry now.
   */
  readonly claimedAt?: number;
  /**
   * The resourceVersion of the stored object the UPDATE that added the value applied to (`*`
   * when unknown). That write can only commit while the object is still at that version.
   * Absent when a CREATE added it: once the object exists, that CREATE has committed.
   */
  readonly addedOn?: string;
}

/**
 * A value its owner gave back at admission (an UPDATE dropped it, or a DELETE). It stays held
 * until the settle step has read from the Kubernetes API that the object no longer carries it:
 * the apiserver may still refuse the write, and until then the value is the object's.
 */
export interface ReleasingClaim extends Claim {
  /** Epoch milliseconds of the admission that gave it back. */
  readonly since: number;
}

/**
 * The owner record: written before any value is claimed (an intent log), so a retry after a
 * crash finds the values it chose and a release knows exactly what to free.
 */
export interface OwnerRecord {
  readonly id: string;
  readonly owner: Owner;
  readonly claims: readonly Claim[];
  /** Values still held but given back, waiting for the settle step; absent when none. */
  readonly releasing?: readonly ReleasingClaim[];
  /** Optimistic-concurrency version; 1 on first write. */
  readonly version: number;
  /** Epoch milliseconds of the first write. */
  readonly createdAt: number;
}

/** The result of trying to take one value. */
export type ClaimOutcome =
  | {
      readonly taken: true;
      /** The block as the write left it, when the store returns it (DynamoDB does). */
      readonly block?: Block;
    }
  | {
      readonly taken: false;
      readonly holder: string;
      /** The block as the failed write saw it, when the store returns it (DynamoDB does). */
      readonly block?: Block;
    };

/** Persistence for exclusive values (cluster IPs, node ports) and owner records. */
export interface AllocationStore {
  /** The owner record, read strongly consistent; undefined when absent. */
  getOwner(id: string): Promise<OwnerRecord | undefined>;
  /** Writes the record when the stored version is `expectedVersion` (0: no record yet). */
  putOwner(record: OwnerRecord, expectedVersion: number): Promise<void>;
  /**
   * Deletes the record; deleting an absent record succeeds. With `expectedVersion`, only a record
   * still at that version goes: false (not an error) when it is absent or was rewritten.
   */
  deleteOwner(id: string, expectedVersion?: number): Promise<boolean>;
  /** Every owner record of the cluster. */
  listOwners(): AsyncIterable<OwnerRecord>;
  /** Blocks with index in `[from, to]`, ascending, strongly consistent; absent blocks are all free. */
  scanBlocks(range: string, from: Offset, to: Offset): AsyncIterable<Block>;
  /**
   * Takes the value for `ownerId` only when nobody holds it, the owner itself included: a value
   * an owner still holds but is giving back may have a release on its way, so it is never taken
   * again under the same id (an owner's retries check what they hold before claiming). With
   * `claimedAt` (epoch ms), the block remembers when, until the value is released: the repair
   * pass never suspects a value claimed less than the commit window ago.
   */
  claim(range: string, offset: Offset, ownerId: string, claimedAt?: number): Promise<ClaimOutcome>;
  /** Frees the value if `ownerId` holds it; false when it did not (already released). */
  release(range: string, offset: Offset, ownerId: string): Promise<boolean>;
}

/** Raised by `putOwner` when the record changed since it was read. */
export class OwnerVersionConflictError extends Error {
  readonly id: string;
  constructor(id: string, options?: { cause?: unknown }) {
    super(`owner record ${id} changed concurrently`, options);
    this.name = 'OwnerVersionConflictError';
    this.id = id;
  }
}
