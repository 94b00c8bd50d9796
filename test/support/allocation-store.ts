import type { AllocationStore } from '../../shared/allocation/store.js';

/**
 * Every method of `store`, bound to it: a test's wrapper spreads this and replaces the methods it
 * changes (a class's methods are not own properties, and they reach its private fields through
 * `this`). The allocation stores' counterpart of the ENI stores' `forwarding`.
 */
export function forwardingAllocationStore(store: AllocationStore): AllocationStore {
  return {
    getOwner: (id) => store.getOwner(id),
    putOwner: (record, version) => store.putOwner(record, version),
    deleteOwner: (id, version) => store.deleteOwner(id, version),
    listOwners: () => store.listOwners(),
    scanBlocks: (key, from, to) => store.scanBlocks(key, from, to),
    claim: (key, offset, id, claimedAt) => store.claim(key, offset, id, claimedAt),
    release: (key, offset, id) => store.release(key, offset, id),
  };
}
