/**
 * A short-lived cache of Node reads for the binding webhook. A burst of game-server pods lands on
 * the same few nodes (the packing podAffinity), so one read serves many bindings; addresses
 * change rarely and a binding that sees a 10-second-old node picks the same address. Misses are
 * cached too, more briefly, so a binding storm for a node that does not exist yet does not
 * hammer the apiserver, while a node that just registered shows up within seconds.
 */
import type { V1Node } from '@kubernetes/client-node';
import type { ClusterApi } from './cluster-api.js';

/** How long a node read is reused. */
export const NODE_CACHE_TTL_MS = 10_000;
/** How long "no such node" is reused. */
export const NODE_CACHE_MISS_TTL_MS = 2_000;
/** Entries kept at most; the least recently used goes first. */
export const NODE_CACHE_MAX_ENTRIES = 1_000;

/** Where nodes come from and how long they are kept; the clock is injected. */
export interface NodeCacheOptions {
  readonly source: Pick<ClusterApi, 'getNode'>;
  /** Epoch ms. */
  readonly now: () => number;
  readonly ttlMs?: number;
  readonly missTtlMs?: number;
  readonly maxEntries?: number;
}

interface Entry {
  readonly node: V1Node | undefined;
  readonly expiresAt: number;
}

/** `getNode` through a bounded TTL cache; concurrent reads of one node share one request. */
export class NodeCache implements Pick<ClusterApi, 'getNode'> {
  readonly #source: Pick<ClusterApi, 'getNode'>;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #missTtlMs: number;
  readonly #maxEntries: number;
  /** Map order is recency order: a hit moves its entry to the end, eviction takes the front. */
  readonly #entries = new Map<string, Entry>();
  readonly #inFlight = new Map<string, Promise<V1Node | undefined>>();

  constructor(options: NodeCacheOptions) {
    this.#source = options.source;
    this.#now = options.now;
    this.#ttlMs = options.ttlMs ?? NODE_CACHE_TTL_MS;
    this.#missTtlMs = options.missTtlMs ?? NODE_CACHE_MISS_TTL_MS;
    this.#maxEntries = Math.max(1, options.maxEntries ?? NODE_CACHE_MAX_ENTRIES);
  }

  /** Entries held now, expired ones included until they are read or evicted. */
  get size(): number {
    return this.#entries.size;
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    const entry = this.#entries.get(name);
    if (entry) {
      this.#entries.delete(name);
      if (this.#now() < entry.expiresAt) {
        this.#entries.set(name, entry);
        return entry.node;
      }
    }
    const pending = this.#inFlight.get(name);
    if (pending) return pending;
    const read: Promise<V1Node | undefined> = this.#source.getNode(name).then(
      (node) => {
        // Only the current read fills the cache; one invalidated meanwhile may be stale.
        if (this.#inFlight.get(name) === read) {
          this.#inFlight.delete(name);
          this.#store(name, node);
        }
        return node;
      },
      (error: unknown) => {
        // Errors are not cached: the next binding asks again.
        if (this.#inFlight.get(name) === read) this.#inFlight.delete(name);
        throw error;
      },
    );
    this.#inFlight.set(name, read);
    return read;
  }

  /** Forgets one node, e.g. after berth changed it. */
  invalidate(name: string): void {
    this.#entries.delete(name);
    // A read already under way may predate the change: it still answers its callers but does
    // not fill the cache.
    this.#inFlight.delete(name);
  }

  #store(name: string, node: V1Node | undefined): void {
    const ttl = node === undefined ? this.#missTtlMs : this.#ttlMs;
    this.#entries.set(name, { node, expiresAt: this.#now() + ttl });
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }
}
