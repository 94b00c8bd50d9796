/**
 * A what-if, not a baseline: the engine as it is, minus the owner-record read for an id the
 * caller has just minted (the admission handler knows when an id is new). Wraps the real
 * DynamoDB store and answers `getOwner` for such an id without a request; a fresh id has no
 * record, so the allocator behaves exactly as before with one round trip fewer. Bench-only.
 */
import type {
  AllocationStore,
  Block,
  ClaimOutcome,
  OwnerRecord,
} from '../../shared/allocation/store.js';

/** `AllocationStore` that skips the first read of ids registered with `mint`. */
export class FreshIdStore implements AllocationStore {
  readonly #inner: AllocationStore;
  readonly #fresh = new Set<string>();

  constructor(inner: AllocationStore) {
    this.#inner = inner;
  }

  /** Registers an id that cannot have a record yet. */
  mint(id: string): string {
    this.#fresh.add(id);
    return id;
  }

  async getOwner(id: string): Promise<OwnerRecord | undefined> {
    if (this.#fresh.delete(id)) return undefined;
    return this.#inner.getOwner(id);
  }

  putOwner(record: OwnerRecord, expectedVersion: number): Promise<void> {
    return this.#inner.putOwner(record, expectedVersion);
  }

  deleteOwner(id: string): Promise<void> {
    return this.#inner.deleteOwner(id);
  }

  listOwners(): AsyncIterable<OwnerRecord> {
    return this.#inner.listOwners();
  }

  scanBlocks(range: string, from: number, to: number): AsyncIterable<Block> {
    return this.#inner.scanBlocks(range, from, to);
  }

  claim(range: string, offset: number, ownerId: string): Promise<ClaimOutcome> {
    return this.#inner.claim(range, offset, ownerId);
  }

  release(range: string, offset: number, ownerId: string): Promise<boolean> {
    return this.#inner.release(range, offset, ownerId);
  }
}
