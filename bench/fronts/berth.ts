/**
 * berth in the fronts benchmark: its fronts as shared/app/fronts.ts wires them for the stack
 * (infra/berth-stack.ts), over the fakes and in-memory tables, on simulated time:
 * - the pod's CREATE admission claims NLB listener slots (`claimListeners`); the binding
 *   admission writes the addresses and queues the bind (`frontsAtBinding`); the DELETE admission
 *   queues the release after `settle.delaySeconds`; both over the admission's `frontsWiring`;
 * - the fronts queue is SQS under a Lambda event source mapping: batches of up to 100 items
 *   gathered for at most 1 s, at most 2 invocations at once, each the fronts function's body
 *   (`frontMessages` over `frontsRunner`'s worker); an item an invocation did not finish (it
 *   failed, or the process died) comes back after the visibility timeout (6 × the function's 90 s);
 * - `frontsRunner`'s pass every 60 s;
 * - every ELBv2 and Global Accelerator call is paid from the account's rate budget as the
 *   wiring pays it, and takes `CALL_LATENCY_MS`;
 * - the tables are in memory: the `FrontStore` (the behaviour the DynamoDB store's tests hold
 *   it to), each call taking `STORE_CALL_MS`, the account's budget and the accelerator's lease.
 * A crash ends every invocation and pass in flight at its next call; their items come back as
 * SQS returns them.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger } from '@aws-lambda-powertools/logger';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { SQSEvent } from 'aws-lambda';
import {
  type FrontsRunner,
  type FrontsTables,
  type FrontsWiring,
  type FrontsWiringOptions,
  frontMessages,
  frontsRunner,
  frontsWiring,
} from '../../shared/app/fronts.js';
import { ClusterSet } from '../../shared/clusters/cluster-set.js';
import { type BerthConfig, parseConfig } from '../../shared/config/schema.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import { frontsAtBinding } from '../../shared/fronts/binding-fronts.js';
import { claimListeners } from '../../shared/fronts/listener-claim.js';
import type { FrontWork } from '../../shared/fronts/work.js';
import { frontWorkBody } from '../../shared/fronts/work-message.js';
import { WEBHOOK_TIMEOUT_SECONDS } from '../../shared/manifests/webhooks.js';
import { allocationIdForUid } from '../../shared/vocabulary/allocation-id.js';
import {
  ALLOCATION_ID_ANNOTATION,
  FRONTS_ANNOTATION,
  FRONTS_READY_ANNOTATION,
  GAME_SERVER_LABEL,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import { annotationPath, type JsonPatchOperation } from '../../shared/vocabulary/patch.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { MemorySlotChainStore } from '../../sim/fakes/slot-chain-store.js';
import type { FrontsWorld, SystemFactory } from './harness.js';
import { type SimTime, withAcceleratorLatency, withElbv2Latency } from './kit.js';
import type {
  Destination,
  FrontsUnderTest,
  GameServer,
  Placement,
  PublishedAddress,
} from './seam.js';
import { ACCELERATOR_HOST_PORTS, NLB_HOST_PORTS, SLOT_HOST_PORTS } from './workload.js';

/** The fronts queue as infra/berth-stack.ts sets it up. */
const BATCH_SIZE = 100;
const BATCHING_WINDOW_MS = 1_000;
const MAX_CONCURRENCY = 2;
const FUNCTION_TIMEOUT_MS = 90_000;
const VISIBILITY_TIMEOUT_MS = 6 * FUNCTION_TIMEOUT_MS;
const PASS_INTERVAL_MS = 60_000;
/** A DynamoDB request from a Lambda function in the table's Region (an assumption). */
const STORE_CALL_MS = 8;
/** A warm invocation's start (an assumption). */
const INVOKE_MS = 20;
const PORT_NAME = 'game';
/** The fronts function's log lines, which the benchmark does not read. */
const SILENT = new Logger({ logLevel: 'SILENT' });

/** How berth's NLB fronts are made: a listener per game server, or slots made with the node. */
export type NlbMode = 'per-game-server' | 'slots';

/** berth's config for the world: its NLB pool, and the accelerator over its host port range. */
function configFor(world: FrontsWorld, mode: NlbMode): BerthConfig {
  const range = (ports: { from: number; to: number }) => `${ports.from}-${ports.to}`;
  const loadBalancers = world.loadBalancers.map((lb) => lb.arn);
  return parseConfig({
    cluster: 'games',
    hostPortRanges:
      mode === 'slots'
        ? {
            default: '9000-9099',
            slots: range(SLOT_HOST_PORTS),
            accelerator: range(ACCELERATOR_HOST_PORTS),
          }
        : { default: range(NLB_HOST_PORTS), accelerator: range(ACCELERATOR_HOST_PORTS) },
    fronts: {
      nlb: mode === 'slots' ? { loadBalancers, mode: 'slots', range: 'slots' } : { loadBalancers },
      accelerator: { endpointGroupArn: world.endpointGroupArn, range: 'accelerator' },
    },
  });
}

/** The process died: the call it was in is abandoned. */
class InvocationDied extends Error {
  constructor() {
    super('the fronts function stopped');
    this.name = 'InvocationDied';
  }
}

interface Message {
  readonly messageId: string;
  readonly body: string;
  visibleAt: number;
}

/** Every method of `target` waits `ms` and then checks `alive` before answering. */
function paced<T extends object>(target: T, time: SimTime, ms: number, alive: () => void): T {
  return new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        alive();
        await time.sleep(ms);
        const answer = await value.apply(object, args);
        alive();
        return answer;
      };
    },
  });
}

/** berth's fronts over one world. */
export class BerthFronts implements FrontsUnderTest {
  readonly name: string;
  readonly #time: SimTime;
  readonly #config: BerthConfig;
  readonly #tables: FrontsTables;
  readonly #options: FrontsWiringOptions;
  readonly #pods = new Map<
    string,
    {
      gs: GameServer;
      placement?: Placement;
      phase: string;
      boundAt?: number;
      /** When the fronts pass told it its fronts route (`berth.dev/fronts-ready`). */
      readyAt?: number;
    }
  >();
  readonly #published = new Map<string, PublishedAddress>();
  /** The cluster's nodes, by name: their InternalIP and when they became Ready. */
  readonly #nodes = new Map<string, { readonly address: string; readonly readyAt: number }>();
  readonly #messages: Message[] = [];
  /** The admission function's warm containers, and the fronts function's (gone in a crash). */
  readonly #admission: FrontsWiring;
  #fronts: FrontsRunner;
  /** The process epoch of the invocation making a call, followed across its awaits (`alive`). */
  readonly #invocation = new AsyncLocalStorage<number>();
  #epoch = 0;
  #sent = 0;
  #running = 0;
  #stopped = false;

  constructor(world: FrontsWorld, mode: NlbMode = 'per-game-server') {
    this.name = mode === 'slots' ? 'berth slots' : 'berth';
    this.#time = world.time;
    this.#config = configFor(world, mode);
    // A check each call makes: an invocation of an earlier epoch died with its process.
    const alive = () => {
      const epoch = this.#invocation.getStore();
      if (epoch !== undefined && epoch !== this.#epoch) throw new InvocationDied();
    };
    this.#tables = {
      store: paced(new MemoryFrontStore(), world.time, STORE_CALL_MS, () => undefined),
      chains: paced(new MemorySlotChainStore(), world.time, STORE_CALL_MS, () => undefined),
      // One budget for the account.
      budget: new InProcessSharedBudget(world.time.now).for(this.#config.cluster),
      // The table's leases (the accelerator's plans), kept where the store is.
      lease: new FakeLease(world.time.now),
    };
    this.#options = {
      account: {
        elbv2: paced(withElbv2Latency(world.elbv2, world.time.sleep), world.time, 0, alive),
        accelerator: paced(
          withAcceleratorLatency(world.accelerator, world.time.sleep),
          world.time,
          0,
          alive,
        ),
        scope: 'bench',
      },
      queue: { submit: async (work, delay) => this.#submit(work, delay) },
      sleep: world.time.sleep,
      random: world.random,
    };
    this.#admission = frontsWiring(this.#context(), this.#options) as FrontsWiring;
    this.#fronts = this.#runner();
    void this.#poll();
    void this.#poll();
    void this.#passes();
  }

  #context() {
    return { config: this.#config, now: this.#time.now, tables: this.#tables };
  }

  /** A fronts function container's warm state: its reading of the pool, its port mappings. */
  #runner(): FrontsRunner {
    const kube = {
      getPod: async (_namespace: string, name: string) => this.#podObject(name),
      listPods: () => this.#listPods(),
      listNodes: () => this.#listNodes(),
      getNode: async (name: string) => this.#node(name),
      // The fronts pass tells a game server its fronts route (berth.dev/fronts-ready), and in
      // slots mode the address a binding before its seat's chain could not tell.
      patchPod: async (_namespace: string, name: string, patch: readonly JsonPatchOperation[]) => {
        const pod = this.#pods.get(name);
        if (pod) pod.readyAt ??= this.#time.now();
        const fronts = patch.find((op) => op.path === annotationPath(FRONTS_ANNOTATION));
        if (pod && typeof fronts?.value === 'string') {
          this.#publish(pod.gs, (JSON.parse(fronts.value) as Record<string, string>)[PORT_NAME]);
        }
        const object = this.#podObject(name);
        if (!object) throw new Error(`pod ${name} not found`);
        return object;
      },
    };
    return frontsRunner({ ...this.#context(), clusterApi: kube }, this.#options) as FrontsRunner;
  }

  #idOf(gs: GameServer): string {
    return allocationIdForUid(gs.allocationId);
  }

  async created(gs: GameServer): Promise<void> {
    const listeners = this.#admission.pods.listeners;
    if (gs.front === 'nlb' && listeners) {
      // The CREATE webhook fails closed: a claim that fails or outlasts it refuses the pod.
      const addresses = await this.#webhook(
        claimListeners(listeners, {
          owner: { allocationId: this.#idOf(gs), namespace: gs.namespace, pod: gs.name },
          ports: [{ name: PORT_NAME, protocol: 'UDP' }],
          dryRun: false,
        }),
      );
      if (addresses === undefined) throw new Error('CREATE admission timed out');
      this.#publish(gs, addresses.get(PORT_NAME));
    }
    this.#pods.set(gs.name, { gs, phase: 'Pending' });
  }

  async refused(gs: GameServer): Promise<void> {
    // Never stored: the cluster berth lists has no such pod; its claimed slot waits for repair.
    this.#pods.delete(gs.name);
    this.#published.delete(gs.name);
  }

  /** An admission's answer, or undefined once the apiserver stopped waiting for it. */
  #webhook<T>(work: Promise<T>): Promise<T | undefined> {
    work.catch(() => undefined);
    return Promise.race([
      work,
      this.#time.sleep(WEBHOOK_TIMEOUT_SECONDS * 1000).then(() => undefined),
    ]);
  }

  #publish(gs: GameServer, address: string | undefined): void {
    if (address === undefined || this.#published.has(gs.name)) return;
    const at = address.lastIndexOf(':');
    this.#published.set(gs.name, {
      host: address.slice(0, at),
      port: Number(address.slice(at + 1)),
      at: this.#time.now(),
    });
  }

  async bound(gs: GameServer, placement: Placement): Promise<void> {
    const pod = this.#pods.get(gs.name);
    if (pod) {
      pod.placement = placement;
      pod.phase = 'Running';
      pod.boundAt = this.#time.now();
    }
    // The binding webhook fails open: an answer that fails or comes too late binds the pod
    // without berth's annotation (the work it queued meanwhile stays queued).
    const fronts = await this.#webhook(
      frontsAtBinding(this.#admission.binding, {
        namespace: gs.namespace,
        pod: gs.name,
        allocationId: this.#idOf(gs),
        node: placement.node,
        nodeAddress: placement.nodeAddress,
        ports: [
          { name: PORT_NAME, front: gs.front, protocol: 'UDP', hostPort: placement.hostPort },
        ],
        // What the CREATE's patch told the pod (its NLB listener), as the stored pod carries it.
        told: this.#toldAtCreate(gs),
        dryRun: false,
      }),
    ).catch(() => undefined);
    this.#publish(gs, fronts?.addresses.get(PORT_NAME));
  }

  /** The pod's `berth.dev/fronts` as its CREATE wrote it: an NLB listener's address, if published. */
  #toldAtCreate(gs: GameServer): Record<string, string> {
    const published = this.#published.get(gs.name);
    return gs.front === 'nlb' && published
      ? { [PORT_NAME]: `${published.host}:${published.port}` }
      : {};
  }

  async started(): Promise<void> {}

  async deleted(gs: GameServer): Promise<void> {
    this.#submit(
      {
        kind: 'release',
        cluster: this.#config.cluster,
        namespace: gs.namespace,
        pod: gs.name,
        allocationId: this.#idOf(gs),
        admittedAt: this.#time.now(),
        attempt: 0,
      },
      this.#admission.pods.delaySeconds,
    );
  }

  async gone(gs: GameServer): Promise<void> {
    this.#pods.delete(gs.name);
  }

  published(gs: GameServer): PublishedAddress | undefined {
    return this.#pods.has(gs.name) ? this.#published.get(gs.name) : undefined;
  }

  toldReady(gs: GameServer): number | undefined {
    return this.#pods.get(gs.name)?.readyAt;
  }

  destination(_gs: GameServer, placement: Placement): Destination {
    return { ip: placement.nodeAddress, port: placement.hostPort };
  }

  nodeReady(node: { readonly name: string; readonly address: string }): void {
    this.#nodes.set(node.name, { address: node.address, readyAt: this.#time.now() });
  }

  nodeGone(node: { readonly name: string }): void {
    this.#nodes.delete(node.name);
  }

  async crash(): Promise<void> {
    // The fronts function's invocations end and its containers go; admission's stay warm.
    this.#epoch++;
    this.#fronts = this.#runner();
  }

  stop(): void {
    this.#stopped = true;
  }

  // ---- the queue, its pollers and the schedule -----------------------------------------------

  #submit(work: FrontWork, delaySeconds: number): void {
    this.#messages.push({
      messageId: `${++this.#sent}`,
      body: frontWorkBody(work),
      visibleAt: this.#time.now() + delaySeconds * 1000,
    });
  }

  #visible(): Message[] {
    const now = this.#time.now();
    return this.#messages.filter((m) => m.visibleAt <= now);
  }

  /** One poller of the event source mapping: a batch once full or once its window has passed. */
  async #poll(): Promise<void> {
    while (!this.#stopped) {
      if (this.#visible().length === 0 || this.#running >= MAX_CONCURRENCY) {
        await this.#time.sleep(100);
        continue;
      }
      const windowEnds = this.#time.now() + BATCHING_WINDOW_MS;
      while (this.#visible().length < BATCH_SIZE && this.#time.now() < windowEnds) {
        await this.#time.sleep(100);
      }
      const batch = this.#visible().slice(0, BATCH_SIZE);
      if (batch.length === 0) continue;
      const hiddenUntil = this.#time.now() + VISIBILITY_TIMEOUT_MS;
      for (const message of batch) message.visibleAt = hiddenUntil;
      this.#running++;
      await this.#invoke(batch);
      this.#running--;
    }
  }

  async #invoke(batch: readonly Message[]): Promise<void> {
    const epoch = this.#epoch;
    const { worker } = this.#fronts;
    const body = frontMessages({
      workers: new ClusterSet([this.#config], () => worker),
      observe: { logger: SILENT },
    });
    await this.#time.sleep(INVOKE_MS);
    try {
      const { batchItemFailures } = await this.#invocation.run(epoch, () =>
        body({ Records: batch.map(({ messageId, body }) => ({ messageId, body })) } as SQSEvent),
      );
      // Items that failed stay hidden until the visibility timeout; the rest are deleted.
      const failed = new Set(batchItemFailures.map((f) => f.itemIdentifier));
      for (const message of batch) if (!failed.has(message.messageId)) this.#delete(message);
    } catch {
      // The process died mid-batch: every item comes back after the visibility timeout.
    }
  }

  #delete(message: Message): void {
    const at = this.#messages.indexOf(message);
    if (at >= 0) this.#messages.splice(at, 1);
  }

  async #passes(): Promise<void> {
    while (!this.#stopped) {
      await this.#time.sleep(PASS_INTERVAL_MS);
      if (this.#stopped) return;
      try {
        const { pass } = this.#fronts;
        await this.#invocation.run(this.#epoch, pass);
      } catch {
        // A pass that fails is the next pass's to finish.
      }
    }
  }

  // ---- the cluster as berth reads it ----------------------------------------------------------

  #podObject(name: string): V1Pod | undefined {
    const pod = this.#pods.get(name);
    if (!pod) return undefined;
    const { gs, placement } = pod;
    const hostPort = placement?.hostPort ?? ACCELERATOR_HOST_PORTS.from;
    return {
      metadata: {
        name: gs.name,
        namespace: gs.namespace,
        uid: gs.allocationId,
        labels: { [GAME_SERVER_LABEL]: 'true' },
        annotations: {
          [ALLOCATION_ID_ANNOTATION]: this.#idOf(gs),
          [PORTS_ANNOTATION]: JSON.stringify([
            { name: PORT_NAME, front: gs.front, protocol: 'UDP' },
          ]),
          [HOST_PORTS_ANNOTATION]: JSON.stringify({ [PORT_NAME]: hostPort }),
          [FRONTS_READY_ANNOTATION]: pod.readyAt === undefined ? 'false' : 'true',
        },
      },
      spec: {
        containers: [
          {
            name: 'game',
            ports: [{ containerPort: gs.containerPort, hostPort, protocol: 'UDP' }],
          },
        ],
        ...(placement ? { nodeName: placement.node } : {}),
      },
      status: {
        phase: pod.phase,
        ...(pod.boundAt !== undefined
          ? {
              conditions: [
                {
                  type: 'PodScheduled',
                  status: 'True',
                  lastTransitionTime: new Date(pod.boundAt),
                },
              ],
            }
          : {}),
      },
    };
  }

  async *#listPods(): AsyncIterable<V1Pod> {
    for (const name of [...this.#pods.keys()]) {
      const pod = this.#podObject(name);
      if (pod) yield pod;
    }
  }

  #node(name: string): V1Node | undefined {
    const node = this.#nodes.get(name);
    if (!node) return undefined;
    return {
      metadata: { name, labels: { role: 'game-server' } },
      status: {
        addresses: [{ type: 'InternalIP', address: node.address }],
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(node.readyAt) }],
      },
    };
  }

  async *#listNodes(): AsyncIterable<V1Node> {
    for (const name of [...this.#nodes.keys()]) {
      const node = this.#node(name);
      if (node) yield node;
    }
  }
}

/** berth as the benchmark runs it: the accelerator's endpoint group covers its host port range. */
export const berthSystem: SystemFactory = {
  name: 'berth',
  acceleratorPorts: [ACCELERATOR_HOST_PORTS.from, ACCELERATOR_HOST_PORTS.to],
  make: (world) => new BerthFronts(world),
};

/** berth with `fronts.nlb.mode: slots`: a listener per host port of the slot range on each node. */
export const berthSlotsSystem: SystemFactory = {
  name: 'berth slots',
  acceleratorPorts: [ACCELERATOR_HOST_PORTS.from, ACCELERATOR_HOST_PORTS.to],
  make: (world) => new BerthFronts(world, 'slots'),
};
