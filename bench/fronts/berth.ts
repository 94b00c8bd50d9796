/**
 * berth in the fronts benchmark: its real fronts code behind the seam, deployed as the stack
 * deploys it (infra/berth-stack.ts), on simulated time:
 * - the pod's CREATE admission claims NLB listener slots (`claimListeners`); the binding
 *   admission writes the addresses and queues the bind (`frontsAtBinding`); the DELETE admission
 *   queues the release after `settle.delaySeconds`;
 * - the fronts queue is SQS under a Lambda event source mapping: batches of up to 100 items
 *   gathered for at most 1 s, at most 2 invocations at once, each `handleFrontWork`; an item an
 *   invocation did not finish (it failed, or the process died) comes back after the visibility
 *   timeout (6 × the function's 90 s);
 * - the fronts pass (`runFrontsPass`) every 60 s;
 * - every ELBv2 and Global Accelerator call is paid from the account's rate budget
 *   (`BudgetedElbv2Api`, `BudgetedCustomRoutingApi`) and takes `CALL_LATENCY_MS`;
 * - the store is the in-memory `FrontStore` (the behaviour the DynamoDB store's tests hold it to), each call
 *   taking `STORE_CALL_MS`.
 * A crash ends every invocation and pass in flight at its next call; their items come back as
 * SQS returns them.
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import type { CustomRoutingApi } from '../../shared/fronts/accelerator.js';
import { CustomRoutingFront } from '../../shared/fronts/accelerator-front.js';
import { frontsAtBinding } from '../../shared/fronts/binding-fronts.js';
import { BudgetedCustomRoutingApi, BudgetedElbv2Api } from '../../shared/fronts/budgeted.js';
import type { Elbv2Api } from '../../shared/fronts/elbv2.js';
import { claimListeners } from '../../shared/fronts/listener-claim.js';
import { runFrontsPass } from '../../shared/fronts/pass.js';
import { Elbv2PoolDirectory } from '../../shared/fronts/pool-directory.js';
import type { FrontStore } from '../../shared/fronts/store.js';
import type { FrontWork } from '../../shared/fronts/work.js';
import { FRONT_WORK_BACKOFF, handleFrontWork } from '../../shared/fronts/worker.js';
import type { Lease } from '../../shared/lease/lease.js';
import { WEBHOOK_TIMEOUT_SECONDS } from '../../shared/manifests/webhooks.js';
import { parsePortRange } from '../../shared/net/port-range.js';
import { allocationIdForUid } from '../../shared/vocabulary/allocation-id.js';
import {
  ALLOCATION_ID_ANNOTATION,
  GAME_SERVER_LABEL,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import type { FrontsWorld, SystemFactory } from './harness.js';
import { type SimTime, withAcceleratorLatency, withElbv2Latency } from './kit.js';
import type {
  Destination,
  FrontsUnderTest,
  GameServer,
  Placement,
  PublishedAddress,
} from './seam.js';
import { ACCELERATOR_HOST_PORTS } from './workload.js';

/** The fronts queue as infra/berth-stack.ts sets it up. */
const BATCH_SIZE = 100;
const BATCHING_WINDOW_MS = 1_000;
const MAX_CONCURRENCY = 2;
const FUNCTION_TIMEOUT_MS = 90_000;
const VISIBILITY_TIMEOUT_MS = 6 * FUNCTION_TIMEOUT_MS;
const PASS_INTERVAL_MS = 60_000;
/** `settle.delaySeconds`'s default: a release is first looked at this long after the DELETE. */
const SETTLE_DELAY_S = 5;
/** A DynamoDB request from a Lambda function in the table's Region (an assumption). */
export const STORE_CALL_MS = 8;
/** A warm invocation's start (an assumption). */
const INVOKE_MS = 20;
const CLUSTER = 'games';
/** `fronts.nlb.listenerPorts`'s default. */
const LISTENER_PORTS = '10000-59999';
const PORT_NAME = 'game';

/** The process died: the call it was in is abandoned. */
class InvocationDied extends Error {
  constructor() {
    super('the fronts function stopped');
    this.name = 'InvocationDied';
  }
}

interface Process {
  readonly pool: Elbv2PoolDirectory;
  readonly accelerator: CustomRoutingFront;
}

interface Message {
  readonly work: FrontWork;
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
  readonly name = 'berth';
  readonly #world: FrontsWorld;
  readonly #time: SimTime;
  readonly #store: FrontStore;
  readonly #lease: Lease;
  /** The webhooks' ELBv2 calls (brief budget waits), the worker's and pass's (patient ones). */
  readonly #elbv2: Elbv2Api;
  readonly #workElbv2: Elbv2Api;
  readonly #accelerator: CustomRoutingApi;
  readonly #pods = new Map<
    string,
    { gs: GameServer; placement?: Placement; phase: string; boundAt?: number }
  >();
  readonly #published = new Map<string, PublishedAddress>();
  readonly #messages: Message[] = [];
  /** The admission function's warm containers, and the fronts function's (gone in a crash). */
  readonly #admission: Process;
  #fronts: Process;
  /** The process epoch of the invocation making a call, followed across its awaits. */
  readonly #invocation = new AsyncLocalStorage<number>();
  #epoch = 0;
  /** Processes started, each a lease holder of its own. */
  #processes = 0;
  #running = 0;
  #stopped = false;

  constructor(world: FrontsWorld) {
    this.#world = world;
    this.#time = world.time;
    // One budget for the account, each call waiting as shared/app/fronts.ts has it wait.
    const budgeted = {
      budget: new InProcessSharedBudget(world.time.now).for(CLUSTER),
      now: world.time.now,
      sleep: world.time.sleep,
      random: world.random,
      backoff: FRONT_WORK_BACKOFF,
    };
    const alive = this.#aliveCheck();
    const patient = { ...budgeted, backoff: FRONT_WORK_BACKOFF };
    const elbv2 = paced(withElbv2Latency(world.elbv2, world.time.sleep), world.time, 0, alive);
    this.#elbv2 = new BudgetedElbv2Api(elbv2, budgeted);
    this.#workElbv2 = new BudgetedElbv2Api(elbv2, patient);
    this.#accelerator = new BudgetedCustomRoutingApi(
      paced(withAcceleratorLatency(world.accelerator, world.time.sleep), world.time, 0, alive),
      patient,
    );
    this.#store = paced(new MemoryFrontStore(), world.time, STORE_CALL_MS, () => undefined);
    // The table's leases (a subnet's reconcile), kept where the store is.
    this.#lease = new FakeLease(world.time.now);
    this.#admission = this.#process();
    this.#fronts = this.#process();
    void this.#poll();
    void this.#poll();
    void this.#passes();
  }

  /** A function's warm state: its reading of the pool and its copy of the port mappings. */
  #process(): Process {
    return {
      pool: new Elbv2PoolDirectory({
        api: this.#elbv2,
        store: this.#store,
        configured: this.#world.loadBalancers.map((lb) => lb.arn),
        cluster: CLUSTER,
        now: this.#time.now,
      }),
      accelerator: new CustomRoutingFront({
        api: this.#accelerator,
        store: this.#store,
        endpointGroupArn: this.#world.endpointGroupArn,
        exclusion: {
          lease: this.#lease,
          holder: `process-${++this.#processes}`,
          sleep: this.#time.sleep,
        },
      }),
    };
  }

  /** A check each call makes: an invocation of an earlier epoch died with its process. */
  #aliveCheck(): () => void {
    return () => {
      const epoch = this.#invocation.getStore();
      if (epoch !== undefined && epoch !== this.#epoch) throw new InvocationDied();
    };
  }

  #idOf(gs: GameServer): string {
    return allocationIdForUid(gs.allocationId);
  }

  async created(gs: GameServer): Promise<void> {
    if (gs.front === 'nlb') {
      const range = parsePortRange(LISTENER_PORTS);
      if (typeof range === 'string') throw new Error(range);
      // The CREATE webhook fails closed: a claim that fails or outlasts it refuses the pod.
      const addresses = await this.#webhook(
        claimListeners(
          {
            store: this.#store,
            pool: this.#admission.pool,
            listenerPorts: range,
            placement: 'balanced',
            random: this.#world.random,
            now: this.#time.now,
          },
          {
            owner: { allocationId: this.#idOf(gs), namespace: gs.namespace, pod: gs.name },
            ports: [{ name: PORT_NAME, protocol: 'UDP' }],
            dryRun: false,
          },
        ),
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
      frontsAtBinding(
        {
          cluster: CLUSTER,
          store: this.#store,
          pool: this.#admission.pool,
          accelerator: this.#admission.accelerator,
          queue: { submit: async (work, delay) => this.#submit(work, delay) },
          now: this.#time.now,
        },
        {
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
        },
      ),
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
        cluster: CLUSTER,
        namespace: gs.namespace,
        pod: gs.name,
        allocationId: this.#idOf(gs),
        admittedAt: this.#time.now(),
        attempt: 0,
      },
      SETTLE_DELAY_S,
    );
  }

  async gone(gs: GameServer): Promise<void> {
    this.#pods.delete(gs.name);
  }

  published(gs: GameServer): PublishedAddress | undefined {
    return this.#pods.has(gs.name) ? this.#published.get(gs.name) : undefined;
  }

  destination(_gs: GameServer, placement: Placement): Destination {
    return { ip: placement.nodeAddress, port: placement.hostPort };
  }

  async crash(): Promise<void> {
    // The fronts function's invocations end and its containers go; admission's stay warm.
    this.#epoch++;
    this.#fronts = this.#process();
  }

  stop(): void {
    this.#stopped = true;
  }

  // ---- the queue, its pollers and the schedule -----------------------------------------------

  #submit(work: FrontWork, delaySeconds: number): void {
    this.#messages.push({ work, visibleAt: this.#time.now() + delaySeconds * 1000 });
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
    await this.#time.sleep(INVOKE_MS);
    try {
      const outcomes = await this.#asEpoch(epoch, () =>
        handleFrontWork(
          this.#workerDeps(),
          batch.map((m) => m.work),
        ),
      );
      // Items that failed stay hidden until the visibility timeout; the rest are deleted.
      batch.forEach((message, i) => {
        if (outcomes[i]?.kind !== 'failed') this.#delete(message);
      });
    } catch {
      // The process died mid-batch: every item comes back after the visibility timeout.
    }
  }

  #delete(message: Message): void {
    const at = this.#messages.indexOf(message);
    if (at >= 0) this.#messages.splice(at, 1);
  }

  /** Runs `run` as an invocation of `epoch`: its calls fail once the process has died. */
  #asEpoch<T>(epoch: number, run: () => Promise<T>): Promise<T> {
    return this.#invocation.run(epoch, run);
  }

  async #passes(): Promise<void> {
    while (!this.#stopped) {
      await this.#time.sleep(PASS_INTERVAL_MS);
      if (this.#stopped) return;
      try {
        const { pool, accelerator } = this.#fronts;
        await this.#asEpoch(this.#epoch, () =>
          runFrontsPass({
            cluster: CLUSTER,
            store: this.#store,
            kube: { listPods: () => this.#listPods(), getNode: async (name) => this.#node(name) },
            nlb: { api: this.#workElbv2, loadBalancers: () => pool.arns() },
            accelerator,
            queue: { submit: async (work, delay) => this.#submit(work, delay) },
            now: this.#time.now,
          }),
        );
      } catch {
        // A pass that fails is the next pass's to finish.
      }
    }
  }

  #workerDeps() {
    const { pool, accelerator } = this.#fronts;
    return {
      cluster: CLUSTER,
      store: this.#store,
      kube: {
        getPod: async (_namespace: string, name: string) => this.#podObject(name),
      },
      nlb: { api: this.#workElbv2, vpcIdOf: (arn: string) => pool.vpcIdOf(arn) },
      accelerator,
      queue: { submit: async (work: FrontWork, delay: number) => this.#submit(work, delay) },
      recheckSeconds: SETTLE_DELAY_S,
      now: this.#time.now,
    };
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
        },
      },
      spec: { containers: [], ...(placement ? { nodeName: placement.node } : {}) },
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
    const placed = [...this.#pods.values()].find((p) => p.placement?.node === name)?.placement;
    if (!placed) return undefined;
    return {
      metadata: { name },
      status: { addresses: [{ type: 'InternalIP', address: placed.nodeAddress }] },
    };
  }
}

/** berth as the benchmark runs it: the accelerator's endpoint group covers its host port range. */
export const berthSystem: SystemFactory = {
  name: 'berth',
  acceleratorPorts: [ACCELERATOR_HOST_PORTS.from, ACCELERATOR_HOST_PORTS.to],
  make: (world) => new BerthFronts(world),
};
