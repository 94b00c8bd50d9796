/**
 * An Agones-like fleet in the Kubernetes API stand-in (kube-api-server.ts), for tests and the
 * simulator: a Fleet with a buffer FleetAutoscaler, as its users run it. It keeps `readyBuffer`
 * GameServers Ready; an allocation flips one Ready GameServer to Allocated (Packed: the one on
 * the node with the most Allocated, as Agones' allocator does) and the buffer makes another; a
 * session's end deletes its GameServer; a Ready GameServer deleted by anyone (berth's drain) is
 * made again; a pod that is evicted or deleted takes its GameServer with it and is replaced.
 * Each GameServer owns one pod (ownerReference, controller) labelled as a berth game server, and
 * is owned by the fleet's GameServerSet, so berth may move it while Ready.
 *
 * Placement is the Packed strategy's: the schedulable, Ready node with the most game servers
 * whose CPU requests leave room; a pod no node fits stays Pending (its GameServer `Scheduled`)
 * until `reconcile` finds room. Changes are made to the server's maps directly, as a controller
 * writing through the API would, and the stand-in's `onChange` drives `reconcile`.
 */

import { randomUUID } from 'node:crypto';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { AgonesGameServer } from '../shared/k8s/cluster-api.js';
import { cpuMillisOf, effectiveCpuRequestMillis } from '../shared/scale/cpu.js';
import { GAME_SERVER_LABEL } from '../shared/vocabulary/labels.js';
import type { KubeApiServer } from './fakes/kube-api-server.js';

/** How the fleet is made. */
export interface AgonesFleetOptions {
  readonly name: string;
  readonly namespace?: string;
  /** Ready GameServers kept (the FleetAutoscaler's buffer). */
  readonly readyBuffer: number;
  /** CPU request of one game server. */
  readonly cpuMillis?: number;
  /** Epoch ms, for creation timestamps. */
  readonly now?: () => number;
}

/** What the fleet counts. */
export interface FleetCounts {
  created: number;
  allocations: number;
  /** Allocations that found no Ready GameServer. */
  allocationsFailed: number;
  /** Allocated GameServers that went away before their session ended: must stay 0. */
  allocatedInterrupted: number;
}

/** The fleet controller. */
export class AgonesFleet {
  readonly counts: FleetCounts = {
    created: 0,
    allocations: 0,
    allocationsFailed: 0,
    allocatedInterrupted: 0,
  };
  readonly #server: KubeApiServer;
  readonly #name: string;
  readonly #namespace: string;
  readonly #buffer: number;
  readonly #cpuMillis: number;
  readonly #now: () => number;
  readonly #setUid = randomUUID();
  /** Allocated GameServers whose session has not ended, by namespace/name. */
  readonly #playing = new Set<string>();

  constructor(server: KubeApiServer, options: AgonesFleetOptions) {
    this.#server = server;
    this.#name = options.name;
    this.#namespace = options.namespace ?? 'games';
    this.#buffer = options.readyBuffer;
    this.#cpuMillis = options.cpuMillis ?? 100;
    this.#now = options.now ?? Date.now;
    server.onChange((change) => {
      if (change.resource === 'nodes' && change.verb === 'patch') return;
      this.reconcile();
    });
  }

  /** The fleet's GameServers. */
  gameServers(): AgonesGameServer[] {
    return [...this.#server.gameServers.values()].filter((gs) =>
      gs.metadata?.ownerReferences?.some((owner) => owner.uid === this.#setUid),
    );
  }

  /** GameServers in `state`. */
  inState(state: string): AgonesGameServer[] {
    return this.gameServers().filter((gs) => gs.status?.state === state);
  }

  /**
   * Allocates a Ready GameServer (Packed: on the node with the most Allocated ones), flips it to
   * Allocated, and refills the buffer; undefined when none is Ready.
   */
  allocate(): AgonesGameServer | undefined {
    const allocatedOn = new Map<string, number>();
    for (const gs of this.inState('Allocated')) {
      const node = this.#podOf(gs)?.spec?.nodeName ?? '';
      allocatedOn.set(node, (allocatedOn.get(node) ?? 0) + 1);
    }
    const ready = this.inState('Ready').sort((a, b) => {
      const na = this.#podOf(a)?.spec?.nodeName ?? '';
      const nb = this.#podOf(b)?.spec?.nodeName ?? '';
      return (
        (allocatedOn.get(nb) ?? 0) - (allocatedOn.get(na) ?? 0) ||
        na.localeCompare(nb) ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '')
      );
    });
    const chosen = ready[0];
    if (!chosen?.metadata?.name) {
      this.counts.allocationsFailed += 1;
      return undefined;
    }
    const key = `${this.#namespace}/${chosen.metadata.name}`;
    const allocated: AgonesGameServer = {
      ...chosen,
      metadata: { ...chosen.metadata, resourceVersion: this.#server.nextResourceVersion() },
      status: { ...chosen.status, state: 'Allocated' },
    };
    this.#server.gameServers.set(key, allocated);
    this.#playing.add(key);
    this.counts.allocations += 1;
    this.reconcile();
    return allocated;
  }

  /** A session ends: its GameServer shuts down and goes, with its pod. */
  end(name: string): void {
    const key = `${this.#namespace}/${name}`;
    this.#playing.delete(key);
    const gs = this.#server.gameServers.get(key);
    if (gs) this.#remove(key, gs);
    this.reconcile();
  }

  /**
   * Brings the fleet to its buffer: GameServers whose pod is gone go too (an Allocated one so
   * counts as interrupted), Pending pods are placed where they fit, and Ready GameServers are
   * made or deleted until `readyBuffer` are Ready or on their way.
   */
  reconcile(): void {
    for (const gs of this.gameServers()) {
      const key = `${this.#namespace}/${gs.metadata?.name}`;
      if (this.#podOf(gs)) continue;
      if (this.#playing.delete(key)) this.counts.allocatedInterrupted += 1;
      this.#server.gameServers.delete(key);
    }
    for (const key of this.#playing) {
      if (!this.#server.gameServers.has(key)) {
        this.#playing.delete(key);
        this.counts.allocatedInterrupted += 1;
      }
    }
    for (const gs of this.inState('Scheduled')) this.#place(gs);
    const coming = () => this.inState('Ready').length + this.inState('Scheduled').length;
    while (coming() < this.#buffer) this.#create();
    // Scale down: Pending ones first, then Ready ones.
    const surplus = Math.max(0, coming() - this.#buffer);
    const removable = [...this.inState('Scheduled'), ...this.inState('Ready')].slice(0, surplus);
    for (const gs of removable) this.#remove(`${this.#namespace}/${gs.metadata?.name}`, gs);
  }

  #podOf(gs: AgonesGameServer): V1Pod | undefined {
    return this.#server.pods.get(`${this.#namespace}/${gs.metadata?.name}`);
  }

  #remove(key: string, gs: AgonesGameServer): void {
    this.#server.gameServers.delete(key);
    const uid = gs.metadata?.uid;
    for (const [podKey, pod] of this.#server.pods) {
      if (pod.metadata?.ownerReferences?.some((owner) => owner.uid === uid)) {
        this.#server.pods.delete(podKey);
      }
    }
  }

  #create(): void {
    this.counts.created += 1;
    const name = `${this.#name}-${randomUUID().slice(0, 8)}`;
    const gs = this.#server.addGameServer({
      apiVersion: 'agones.dev/v1',
      kind: 'GameServer',
      metadata: {
        name,
        namespace: this.#namespace,
        creationTimestamp: new Date(this.#now()),
        labels: { 'agones.dev/fleet': this.#name },
        ownerReferences: [
          {
            apiVersion: 'agones.dev/v1',
            kind: 'GameServerSet',
            name: `${this.#name}-set`,
            uid: this.#setUid,
            controller: true,
          },
        ],
      },
      status: { state: 'Scheduled' },
    });
    this.#server.addPod({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: this.#namespace,
        creationTimestamp: new Date(this.#now()),
        labels: { [GAME_SERVER_LABEL]: 'true', 'agones.dev/gameserver': name },
        ownerReferences: [
          {
            apiVersion: 'agones.dev/v1',
            kind: 'GameServer',
            name,
            uid: gs.metadata?.uid ?? '',
            controller: true,
          },
        ],
      },
      spec: {
        containers: [
          {
            name: 'game',
            image: 'game:1',
            resources: { requests: { cpu: `${this.#cpuMillis}m` } },
          },
        ],
      },
      status: { phase: 'Pending' },
    });
    this.#place(gs);
  }

  /** Binds a Scheduled GameServer's pod to the Packed node that fits it, and makes it Ready. */
  #place(gs: AgonesGameServer): void {
    const pod = this.#podOf(gs);
    const key = `${this.#namespace}/${gs.metadata?.name}`;
    if (!pod || pod.spec?.nodeName) return;
    const node = this.#packedNode(effectiveCpuRequestMillis(pod));
    if (!node) return;
    this.#server.pods.set(key, {
      ...pod,
      spec: { ...pod.spec, containers: pod.spec?.containers ?? [], nodeName: node },
      status: { phase: 'Running' },
      metadata: { ...pod.metadata, resourceVersion: this.#server.nextResourceVersion() },
    });
    this.#server.gameServers.set(key, {
      ...gs,
      metadata: { ...gs.metadata, resourceVersion: this.#server.nextResourceVersion() },
      status: { ...gs.status, state: 'Ready' },
    });
  }

  /** The schedulable, Ready node with the most game servers that fits `millis` more. */
  #packedNode(millis: number): string | undefined {
    const requested = new Map<string, number>();
    const games = new Map<string, number>();
    for (const pod of this.#server.pods.values()) {
      const node = pod.spec?.nodeName;
      if (!node) continue;
      requested.set(node, (requested.get(node) ?? 0) + effectiveCpuRequestMillis(pod));
      if (pod.metadata?.labels?.[GAME_SERVER_LABEL] === 'true') {
        games.set(node, (games.get(node) ?? 0) + 1);
      }
    }
    const fits = [...this.#server.nodes.values()].filter((node: V1Node) => {
      const name = node.metadata?.name ?? '';
      const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
      const free = cpuMillisOf(node.status?.allocatable) - (requested.get(name) ?? 0);
      return node.spec?.unschedulable !== true && ready && free >= millis;
    });
    fits.sort(
      (a, b) =>
        (games.get(b.metadata?.name ?? '') ?? 0) - (games.get(a.metadata?.name ?? '') ?? 0) ||
        (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''),
    );
    return fits[0]?.metadata?.name;
  }
}
