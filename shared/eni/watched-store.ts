/**
 * The store, counting the writes made through it to pools and their nodes. A pool pass reads a
 * node once and reads it again only after it wrote to it: a reconcile or a plan that changed
 * nothing leaves the state it read as current as a second read would be, bar claims that assigns
 * made meanwhile, which every write of the pass is conditioned against anyway. On a steady fleet
 * most pools need nothing, so this takes two of a pass's three reads per pool away.
 */
import { type EniStore, forwarding } from './store.js';

/** A store and the number of pool and node writes made through it so far. */
export interface WatchedStore {
  readonly store: EniStore;
  writes(): number;
}

export function watchedStore(store: EniStore): WatchedStore {
  let writes = 0;
  const watched: EniStore = {
    ...forwarding(store),
    putPool: async (pool, expectedVersion) => {
      writes++;
      await store.putPool(pool, expectedVersion);
    },
    deletePool: async (node) => {
      writes++;
      await store.deletePool(node);
    },
    commit: async (node, nodeWrites) => {
      writes++;
      await store.commit(node, nodeWrites);
    },
  };
  return { store: watched, writes: () => writes };
}
