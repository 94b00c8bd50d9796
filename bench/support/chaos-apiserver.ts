/**
 * The apiserver of the chaos run: what happens to a write after the webhook allowed it. It is
 * stored at once, or later (the request is still on its way to etcd), or refused (a stale
 * resourceVersion, a name taken meanwhile, a later webhook's denial); a Service DELETE may wait
 * behind a finalizer. Either way it is stored by the request's deadline (the apiserver's 60 s
 * request timeout, counted from the webhook call whose answer it applies), or never: the
 * guarantee berth's commit window relies on. Objects live in a `FakeClusterApi`, which the
 * settle step and the repair pass read.
 */
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import type { ClusterApi } from '../../shared/k8s/cluster-api.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';

/** How the apiserver treats writes admission allowed. */
export interface ApiServerBehaviour {
  /** A write refused after admission allowed it. */
  readonly refuse: number;
  /** A write stored later, by its deadline. */
  readonly delay: number;
  /** A Service DELETE held by a finalizer for 10–120 s. */
  readonly finalizer: number;
}

type Resource = 'services' | 'pods';
type Stored = V1Service | V1Pod;

/** What became of one write admission allowed. */
export type WriteFate = 'stored' | 'delayed' | 'refused';

/** A write waiting to be stored. */
interface PendingWrite {
  readonly due: number;
  apply(): void;
}

/** The request timeout the apiserver gives a write, from the webhook call it applies. */
export const REQUEST_TIMEOUT_MS = 60_000;

/** The simulated apiserver. */
export class SimulatedApiServer {
  readonly api = new FakeClusterApi();
  readonly #random: () => number;
  readonly #behaviour: ApiServerBehaviour;
  readonly #now: () => number;
  readonly #count: (kind: string) => void;
  readonly #pending: PendingWrite[] = [];
  readonly #finalizers: { readonly due: number; readonly key: string }[] = [];
  /** Per stored object, when the webhook call behind its last write started and when it was stored. */
  readonly #history = new Map<string, { readonly admitted: number; readonly stored: number }>();
  #resourceVersion = 0;

  readonly #onStored: ((object: Stored) => void) | undefined;

  constructor(
    random: () => number,
    behaviour: ApiServerBehaviour,
    now: () => number,
    count: (kind: string) => void,
    /** Told of every write as it is stored (a run's trace). */
    onStored?: (object: Stored) => void,
  ) {
    this.#random = random;
    this.#behaviour = behaviour;
    this.#now = now;
    this.#count = count;
    this.#onStored = onStored;
  }

  /** Stored Services and Pods that are not being deleted. */
  live<R extends Resource>(resource: R): (R extends 'services' ? V1Service : V1Pod)[] {
    return [...this.#map(resource).values()].filter(
      (o) => !o.metadata?.deletionTimestamp,
    ) as (R extends 'services' ? V1Service : V1Pod)[];
  }

  /**
   * A CREATE admission allowed in a webhook call that started at `admitted`: stored unless the
   * name is taken by then.
   */
  create(resource: Resource, given: Stored, admitted: number): WriteFate {
    const object = this.#named(given);
    const key = keyOf(object);
    return this.#write(key, admitted, () => {
      if (this.#map(resource).has(key)) {
        this.#count('refused by the apiserver (AlreadyExists)');
        return false;
      }
      this.#map(resource).set(key, this.#stored(object));
      return true;
    });
  }

  /**
   * A pod created where berth's webhook never saw it (it asked for no ports at its CREATE), stored
   * at once; undefined when the name is taken.
   */
  createNow(resource: Resource, given: Stored): Stored | undefined {
    const object = this.#named(given);
    const key = keyOf(object);
    if (this.#map(resource).has(key)) return undefined;
    const stored = this.#stored(object);
    this.#map(resource).set(key, stored);
    return structuredClone(stored);
  }

  /** An UPDATE admission allowed, from `read`: refused when the object changed since. */
  update(read: V1Service, next: V1Service, admitted: number): WriteFate {
    const key = keyOf(read);
    return this.#write(key, admitted, () => {
      const stored = this.api.services.get(key);
      if (
        stored?.metadata?.resourceVersion !== read.metadata?.resourceVersion ||
        stored?.metadata?.deletionTimestamp
      ) {
        this.#count('refused by the apiserver (conflict)');
        return false;
      }
      this.api.services.set(key, this.#stored(next));
      return true;
    });
  }

  /** When the last write of the object `namespace/name` was admitted and stored, for reports. */
  provenance(key: string, start: number): string {
    const entry = this.#history.get(key);
    if (!entry) return 'never written';
    const at = (ms: number) => `+${((ms - start) / 1000).toFixed(1)} s`;
    return `admitted ${at(entry.admitted)}, stored ${at(entry.stored)}`;
  }

  /** A Service DELETE (the webhook cannot stop it): gone, or terminating behind a finalizer. */
  deleteService(read: V1Service): void {
    const key = keyOf(read);
    const stored = this.api.services.get(key);
    if (!stored || stored.metadata?.deletionTimestamp) return;
    if (this.#random() < this.#behaviour.finalizer) {
      const held = structuredClone(stored);
      held.metadata = { ...held.metadata, deletionTimestamp: new Date(this.#now()) };
      this.api.services.set(key, held);
      this.#finalizers.push({ due: this.#now() + 10_000 + this.#random() * 110_000, key });
      this.#count('held by a finalizer');
      return;
    }
    this.api.services.delete(key);
  }

  /** A pod DELETE. */
  deletePod(read: V1Pod): void {
    this.api.pods.delete(keyOf(read));
  }

  /** Stores the writes and lets go of the finalizers that are due. Returns whether any were. */
  advance(): boolean {
    const now = this.#now();
    const due = this.#pending.filter((w) => w.due <= now).sort((a, b) => a.due - b.due);
    for (const write of due) this.#pending.splice(this.#pending.indexOf(write), 1);
    for (const write of due) write.apply();
    const released = this.#finalizers.filter((f) => f.due <= now);
    for (const entry of released) {
      this.#finalizers.splice(this.#finalizers.indexOf(entry), 1);
      this.api.services.delete(entry.key);
    }
    return due.length + released.length > 0;
  }

  /** Everything still in flight stored or released now (the run goes quiet). */
  finish(): void {
    for (const write of this.#pending.splice(0).sort((a, b) => a.due - b.due)) write.apply();
    for (const entry of this.#finalizers.splice(0)) this.api.services.delete(entry.key);
  }

  /**
   * The API as one reader sees it: every list is taken whole at the moment it starts, and
   * `onList` gets what it returned. The fake's own `afterList` would not do: it also fires for
   * the settle step's lists, which run beside a repair pass.
   */
  listedBy(onList: (resource: Resource, items: readonly Stored[]) => void): ClusterApi {
    const api = this.api;
    const take = <T extends Stored>(resource: Resource, map: ReadonlyMap<string, T>) =>
      async function* () {
        const items = [...map.values()].map((item) => structuredClone(item));
        onList(resource, items);
        yield* items;
      };
    const listServices = take('services', api.services);
    const listPods = take('pods', api.pods);
    return new Proxy(api, {
      get(target, property, receiver) {
        if (property === 'listServices') return listServices;
        if (property === 'listPods') return listPods;
        const value = Reflect.get(target, property, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  #write(key: string, admitted: number, store: () => boolean): WriteFate {
    const deadline = admitted + REQUEST_TIMEOUT_MS;
    if (this.#now() > deadline) {
      this.#count('refused by the apiserver (request timed out)');
      return 'refused';
    }
    if (this.#random() < this.#behaviour.refuse) {
      this.#count('refused by the apiserver');
      return 'refused';
    }
    const apply = () => {
      if (!store()) return;
      this.#history.set(key, { admitted, stored: this.#now() });
      // The run's own fidelity: a write stored past its deadline is one no apiserver makes.
      if (this.#now() > deadline + 1_000) this.#count('stored past the request deadline (sim)');
    };
    if (this.#random() < this.#behaviour.delay) {
      const now = this.#now();
      this.#pending.push({ due: now + this.#random() * (deadline - now), apply });
      this.#count('stored late by the apiserver');
      return 'delayed';
    }
    apply();
    return 'stored';
  }

  #map(resource: Resource): Map<string, Stored> {
    return resource === 'services' ? this.api.services : this.api.pods;
  }

  /**
   * The object with the name the apiserver gives one created with generateName (after
   * admission): the generateName and 5 random characters.
   */
  #named<T extends Stored>(object: T): T {
    const generateName = object.metadata?.generateName;
    if (object.metadata?.name || !generateName) return object;
    const suffix = Array.from(
      { length: 5 },
      () => 'bcdfghjklmnpqrstvwxz2456789'[Math.floor(this.#random() * 27)],
    ).join('');
    return { ...object, metadata: { ...object.metadata, name: `${generateName}${suffix}` } };
  }

  /** A stored copy with a new resourceVersion, and a uid if it is new. */
  #stored<T extends Stored>(object: T): T {
    const stored = structuredClone(object);
    const rv = ++this.#resourceVersion;
    stored.metadata = {
      ...stored.metadata,
      uid: stored.metadata?.uid ?? `uid-${stored.metadata?.name}-${rv}`,
      resourceVersion: String(rv),
    };
    this.#onStored?.(stored);
    return stored;
  }
}

function keyOf(object: Stored): string {
  return `${object.metadata?.namespace ?? 'default'}/${object.metadata?.name ?? ''}`;
}
