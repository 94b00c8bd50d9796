/**
 * The `agones-fleet` day of `berth sim`: an Agones Fleet with a buffer FleetAutoscaler, as its
 * users run one, over the simulated cluster, by the one fleet controller's rules
 * (`fleet-controller.ts`). The day has no steps, so the autoscaler looks at every change: the
 * fleet keeps `readyBuffer` GameServers Ready or on their way (their pods go through berth's
 * admission like any game server, owned by their GameServer, which the fleet's GameServerSet
 * owns); each session of the day is a Packed allocation that flips one to Allocated, and the
 * buffer makes another; a session's end deletes its GameServer and pod. The GameServers live
 * in the Kubernetes API stand-in, where berth's scale pass reads their state and deletes the
 * Ready ones on the nodes it drains; the pods the API let go are read back, and the fleet makes
 * their GameServers again. An Allocated game server that goes before its session ends was
 * interrupted: a violation.
 */

import { randomUUID } from 'node:crypto';
import type { AgonesGameServer } from '../shared/k8s/cluster-api.js';
import type { SimCluster } from './cluster.js';
import type { KubeApiServer } from './fakes/kube-api-server.js';
import { FleetController, type FleetNode } from './fleet-controller.js';

const NAMESPACE = 'games';

/** What the fleet did over the day. */
export interface FleetTally {
  allocations: number;
  /** Sessions that found no Ready GameServer and waited for one to be made. */
  allocationsWaited: number;
  /** Ready GameServers berth's drain took away (the fleet made each again). */
  readyMoved: number;
  /** Allocated GameServers gone before their session ended: any is a violation. */
  allocatedInterrupted: number;
}

/** The fleet of the `agones-fleet` day. */
export class SimAgonesFleet {
  readonly tally: FleetTally = {
    allocations: 0,
    allocationsWaited: 0,
    readyMoved: 0,
    allocatedInterrupted: 0,
  };
  readonly #cluster: SimCluster;
  readonly #api: KubeApiServer;
  readonly #controller: FleetController<string>;
  readonly #cpuMillis: number;
  readonly #setUid = randomUUID();
  /** The GameServer each running session holds, by session. */
  readonly #sessions = new Map<string, string>();
  #serial = 0;

  constructor(
    cluster: SimCluster,
    api: KubeApiServer,
    options: { readonly readyBuffer: number; readonly cpuMillis: number },
  ) {
    this.#cluster = cluster;
    this.#api = api;
    const buffer = options.readyBuffer;
    this.#controller = new FleetController(
      { bufferSize: buffer, minReplicas: buffer, maxReplicas: Infinity, syncIntervalMs: 0 },
      (name) => this.stateOf(name) === 'Allocated',
    );
    this.#cpuMillis = options.cpuMillis;
  }

  /** The state of the GameServer named `name`, if it exists. */
  stateOf(name: string): string | undefined {
    return this.#api.gameServers.get(`${NAMESPACE}/${name}`)?.status?.state;
  }

  /**
   * Brings the fleet to its replicas: GameServers whose pod is bound become Ready, missing ones
   * are made, a surplus is deleted (those not yet placed first, never an Allocated one).
   */
  async refill(): Promise<void> {
    for (const gs of this.#api.gameServers.values()) {
      const name = gs.metadata?.name ?? '';
      if (this.#cluster.pods.get(name)?.node) this.#transition(name, ['Scheduled'], 'Ready');
    }
    const { nodes, unplaced, allocated } = this.#census();
    this.#controller.autoscale(0, allocated);
    const step = this.#controller.reconcile(nodes, unplaced.length);
    for (let i = 0; i < step.create; i++) if (!(await this.#make())) break;
    const scheduled = unplaced.filter((name) => this.stateOf(name) === 'Scheduled');
    const newest = scheduled.slice(Math.max(0, scheduled.length - step.unplaced));
    for (const name of [...newest, ...step.placed]) {
      this.#api.gameServers.delete(`${NAMESPACE}/${name}`);
      await this.#cluster.deleteGameServer(name);
    }
  }

  /** A session starts: a Ready GameServer is allocated (Packed), or one is made for it. */
  async allocate(session: string): Promise<void> {
    this.tally.allocations++;
    let chosen = this.#controller.allocate(this.#census().nodes);
    if (chosen === undefined) {
      // No Ready server: the match waits for one the fleet makes now. Another allocation may
      // take it meanwhile (each step between awaits sees the fleet as it is then).
      this.tally.allocationsWaited++;
      const made = await this.#make();
      chosen =
        made !== undefined && this.stateOf(made) !== 'Allocated'
          ? made
          : this.#controller.allocate(this.#census().nodes);
    }
    if (chosen !== undefined && this.#transition(chosen, ['Ready', 'Scheduled'], 'Allocated')) {
      this.#sessions.set(session, chosen);
    }
    await this.refill();
  }

  /** A session ends: its GameServer shuts down and is deleted, with its pod. */
  async end(session: string): Promise<void> {
    const name = this.#sessions.get(session);
    this.#sessions.delete(session);
    if (name === undefined) return;
    this.#api.gameServers.delete(`${NAMESPACE}/${name}`);
    await this.#cluster.deleteGameServer(name);
    await this.refill();
  }

  /**
   * After a scale pass: the pods the API let go (berth deleted their Ready GameServers) leave the
   * cluster, and the fleet makes others. Answers the sessions interrupted (Allocated servers
   * gone), which must be none.
   */
  async afterPass(): Promise<string[]> {
    const gone = new Set(await this.#cluster.syncPods());
    const interrupted: string[] = [];
    for (const [session, name] of this.#sessions) {
      if (gone.has(name) || !this.#api.gameServers.has(`${NAMESPACE}/${name}`)) {
        interrupted.push(session);
        this.#sessions.delete(session);
        this.#api.gameServers.delete(`${NAMESPACE}/${name}`);
        gone.delete(name);
      }
    }
    for (const name of gone) {
      this.tally.readyMoved++;
      this.#api.gameServers.delete(`${NAMESPACE}/${name}`);
    }
    this.tally.allocatedInterrupted += interrupted.length;
    await this.refill();
    return interrupted;
  }

  /** The fleet's GameServers by node (nodes by name), those not placed, and the Allocated count. */
  #census(): { nodes: FleetNode<string>[]; unplaced: string[]; allocated: number } {
    const byNode = new Map<string, Set<string>>();
    for (const name of this.#cluster.nodes.keys()) byNode.set(name, new Set());
    const unplaced: string[] = [];
    let allocated = 0;
    for (const gs of this.#api.gameServers.values()) {
      const name = gs.metadata?.name ?? '';
      if (gs.status?.state === 'Allocated') allocated++;
      const node = this.#cluster.pods.get(name)?.node;
      const games = node === undefined ? undefined : byNode.get(node);
      if (games) games.add(name);
      else unplaced.push(name);
    }
    // The cluster's nodes come in name order: Packed ties go to the first.
    return { nodes: [...byNode].map(([name, games]) => ({ name, games })), unplaced, allocated };
  }

  /** Moves a GameServer from one of `from` to `state`; false when it is in none of them. */
  #transition(name: string, from: readonly string[], state: string): boolean {
    const key = `${NAMESPACE}/${name}`;
    const gs = this.#api.gameServers.get(key);
    if (!gs || !from.includes(gs.status?.state ?? '')) return false;
    this.#api.gameServers.set(key, {
      ...gs,
      metadata: { ...gs.metadata, resourceVersion: this.#api.nextResourceVersion() },
      status: { ...gs.status, state },
    });
    return true;
  }

  /** Makes a GameServer and its pod (through admission); its name, or undefined when denied. */
  async #make(): Promise<string | undefined> {
    const name = `fleet-${this.#serial++}`;
    const gs: AgonesGameServer = this.#api.addGameServer({
      apiVersion: 'agones.dev/v1',
      kind: 'GameServer',
      metadata: {
        name,
        namespace: NAMESPACE,
        ownerReferences: [
          {
            apiVersion: 'agones.dev/v1',
            kind: 'GameServerSet',
            name: 'fleet-set',
            uid: this.#setUid,
            controller: true,
          },
        ],
      },
      status: { state: 'Scheduled' },
    });
    const admitted = await this.#cluster.createGameServer(name, this.#cpuMillis, {
      apiVersion: 'agones.dev/v1',
      kind: 'GameServer',
      uid: gs.metadata?.uid ?? '',
    });
    if (!admitted) {
      this.#api.gameServers.delete(`${NAMESPACE}/${name}`);
      return undefined;
    }
    if (this.#cluster.pods.get(name)?.node) this.#transition(name, ['Scheduled'], 'Ready');
    return name;
  }
}
