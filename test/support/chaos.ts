/**
 * A chaos run: many concurrent clients drive Services and game-server pods through berth's real
 * admission handlers, a simulated apiserver (it stores what admission allowed, sometimes refuses
 * a write admission already allowed, keeps some Services behind a finalizer), the settle step and
 * the repair pass, all on DynamoDB Local, while the store's client throttles, times out after a
 * write landed (the caller sees an error), and crashes callers between writes. Clients retry as
 * real ones do. Shared by the chaos test (a short fixed-seed slice) and `npm run bench -- chaos`.
 *
 * What it checks, continuously and at the end:
 * - no cluster IP or node port is carried by two stored Services, and every value a stored
 *   Service carries is held in the store by that Service's own id (so it cannot be handed out);
 * - once quiet, every leak is freed within `leakGracePasses` repair passes;
 * - counts equal records: held values are exactly the carried ones, host port use counts are
 *   exactly the live pods' ports.
 */

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { claimKey, ExclusiveAllocator, rangeKey } from '../../shared/allocation/allocator.js';
import { hostPortRange } from '../../shared/allocation/range.js';
import { BLOCK_SIZE } from '../../shared/allocation/store.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { EniRequestError, IpHeldByAnotherError } from '../../shared/eni/errors.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { assignIp, releaseIp } from '../../shared/eni/service.js';
import { readPod, toHostPortRange } from '../../shared/repair/host-port-diff.js';
import { readService } from '../../shared/repair/live.js';
import { runRepairPass } from '../../shared/repair/pass.js';
import { settleTiming } from '../../shared/settle/policy.js';
import { QueueSettler } from '../../shared/settle/settler.js';
import { settleStep } from '../../shared/settle/step.js';
import type { SettleTask } from '../../shared/settle/task.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import { DynamoLeakLedger } from '../../shared/store/dynamo-leak-ledger.js';
import { DynamoLease } from '../../shared/store/dynamo-lease.js';
import { eniWorld } from '../eni/harness.js';
import { FakeClusterApi } from '../fakes/cluster-api.js';
import { applyPatch, decodePatch } from './json-patch.js';
import { seededRandom } from './random.js';
import { review } from './reviews.js';

/** How hard to shake. Probabilities are per store request (faults) or per write (apiserver). */
export interface ChaosOptions {
  readonly seed: number;
  readonly actors: number;
  readonly operations: number;
  /** A request refused with a throttling error before it reaches the table. */
  readonly throttle: number;
  /** A write that lands, then the caller sees a timeout (and retries). */
  readonly ambiguous: number;
  /** A write that lands, then the caller dies (never retries; the apiserver fails the request). */
  readonly crash: number;
  /** A write admission allowed that the apiserver then refuses (stale resourceVersion, a later webhook). */
  readonly refuse: number;
  /** A Service DELETE held by a finalizer for a while. */
  readonly finalizer: number;
}

/** What a run did and found. */
export interface ChaosReport {
  readonly operations: Record<string, number>;
  readonly faults: Record<string, number>;
  /** Moments a value was carried by two stored Services, or carried but not held by its carrier. */
  readonly violations: readonly string[];
  readonly invariantChecks: number;
  /** Errors that were neither injected nor a transport failure: berth's own faults. */
  readonly unexpected: readonly string[];
  /** Values held after the run that no object carried, and the repair passes it took to free them. */
  readonly leaks: number;
  readonly maxPassesToFree: number;
  readonly leakGracePasses: number;
  /** Held values, host port counts and records equal what the live objects carry, once quiet. */
  readonly countsEqualRecords: boolean;
  readonly mismatches: readonly string[];
  readonly durationMs: number;
}

const CONFIG = {
  cluster: 'chaos',
  serviceCIDRs: ['10.100.0.0/24'],
  nodePortRange: '30000-30199',
  hostPortRanges: { default: '7000-7049' },
  repair: { intervalSeconds: 0, leakGracePasses: 3 },
  settle: { delaySeconds: 5 },
};
/** Past DynamoDB Local's TTL sweep, which deletes items whose `expiresAt` is in the real past. */
const START = Date.parse('2036-03-01T12:00:00Z');
/** Virtual time one finished operation moves the clock by. */
const TICK_MS = 250;
const REPAIR_EVERY_MS = 180_000;
/** How often a failing admission call is tried again by its client. */
const CLIENT_ATTEMPTS = 3;

class InjectedFault extends Error {
  constructor(
    readonly kind: 'throttle' | 'ambiguous' | 'crash',
    name: string,
  ) {
    super(`injected ${kind}`);
    this.name = name;
  }
}

const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
]);

/** The table's client, shaking: throttles any request, and times out or crashes after a write. */
function faultyClient(
  client: DynamoDBClient,
  random: () => number,
  options: ChaosOptions,
  faults: Record<string, number>,
  enabled: () => boolean,
): DynamoDBClient {
  const wrapped = Object.create(client) as DynamoDBClient;
  const send = async (command: { constructor: { name: string } }) => {
    const count = (kind: string) => {
      faults[kind] = (faults[kind] ?? 0) + 1;
    };
    if (enabled() && random() < options.throttle) {
      count('throttle');
      throw new InjectedFault('throttle', 'ThrottlingException');
    }
    const out = await (client.send as (c: unknown) => Promise<unknown>)(command);
    if (enabled() && WRITES.has(command.constructor.name)) {
      const roll = random();
      if (roll < options.crash) {
        count('crash');
        throw new InjectedFault('crash', 'CallerCrashed');
      }
      if (roll < options.crash + options.ambiguous) {
        count('ambiguous');
        throw new InjectedFault('ambiguous', 'TimeoutError');
      }
    }
    return out;
  };
  wrapped.send = send as unknown as DynamoDBClient['send'];
  return wrapped;
}

/**
 * Whether a failure is one a real client meets and retries: an injected fault, or DynamoDB Local
 * dropping a connection under load (the SDK's TimeoutError after its own retries).
 */
function transient(error: unknown): boolean {
  return (
    injected(error) !== undefined ||
    (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'ECONNRESET'))
  );
}

/** The fault behind an error, through any wrapping. */
function injected(error: unknown): InjectedFault | undefined {
  for (let e = error; e instanceof Error; e = e.cause) if (e instanceof InjectedFault) return e;
  return undefined;
}

const describeError = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

type Answer = { readonly allowed: boolean; readonly patch?: string } | 'crashed' | 'failed';

/** Runs one chaos run on a table of `client`'s DynamoDB. */
export async function runChaos(
  client: DynamoDBClient,
  tableName: string,
  options: ChaosOptions,
): Promise<ChaosReport> {
  const started = performance.now();
  const random = seededRandom(options.seed);
  const pick = <T>(items: readonly T[]): T | undefined =>
    items[Math.floor(random() * items.length)];
  const config = parseConfig(CONFIG);
  const grace = config.repair.leakGracePasses;
  const clock = { now: START };
  const now = () => clock.now;
  const faults: Record<string, number> = {};
  const operations: Record<string, number> = {};
  const count = (kind: string) => {
    operations[kind] = (operations[kind] ?? 0) + 1;
  };
  const violations: string[] = [];
  /** Errors no real client would shrug off: berth's own faults, which the run reports. */
  const unexpected: string[] = [];
  let shaking = true;
  const faulty = faultyClient(client, random, options, faults, () => shaking);

  const api = new FakeClusterApi();
  const queue: { due: number; task: SettleTask }[] = [];
  const runtime = createRuntime({
    config,
    dynamo: faulty,
    tableName,
    now,
    random,
    randomBytes: (size) => Uint8Array.from({ length: size }, () => Math.floor(random() * 256)),
    settler: () =>
      new QueueSettler(
        { submit: async (task, delay) => void queue.push({ due: now() + delay * 1000, task }) },
        config.settle.delaySeconds,
        () => count('settle task lost'),
      ),
  });
  const serviceRanges = {
    clusterIps: runtime.ranges.clusterIps,
    nodePorts: runtime.ranges.nodePorts,
  };
  const hostRanges = Object.entries(config.hostPortRanges).map(([name, ports]) =>
    hostPortRange(name, ports),
  );
  const stores = (dynamo: DynamoDBClient) => {
    const location = { client: dynamo, tableName, cluster: config.cluster };
    const allocations = new DynamoAllocationStore(location);
    return {
      allocations,
      hostPorts: new DynamoHostPortStore(location),
      ledger: new DynamoLeakLedger(location),
      lease: new DynamoLease({ ...location, now }),
      allocator: new ExclusiveAllocator({ store: allocations, random, now }),
    };
  };
  const shaken = stores(faulty);
  const clean = stores(client);
  const settleWith = (allocator: ExclusiveAllocator) => (task: SettleTask) =>
    settleStep(
      {
        allocator,
        cluster: api,
        ranges: serviceRanges,
        timing: settleTiming(config.settle.delaySeconds),
        now,
      },
      task,
    );
  let passes = 0;
  const repair = (set: ReturnType<typeof stores>) =>
    runRepairPass(
      { cluster: api, ...set, now, holder: `chaos-${passes++}` },
      {
        ranges: { ...serviceRanges, hostPorts: hostRanges },
        leakGracePasses: grace,
        settleDelaySeconds: config.settle.delaySeconds,
      },
    );

  /** One admission call as its client makes it: tried again on an error, never after a crash. */
  const call = async (body: ReturnType<typeof review>): Promise<Answer> => {
    for (let attempt = 1; attempt <= CLIENT_ATTEMPTS; attempt++) {
      try {
        const { response } = await admit(parseAdmissionReview(body), runtime.admission);
        return { allowed: response.allowed, ...(response.patch ? { patch: response.patch } : {}) };
      } catch (error) {
        if (injected(error)?.kind === 'crash') return 'crashed';
        if (!transient(error)) unexpected.push(describeError(error));
      }
    }
    return 'failed';
  };
  const key = (name: string) => `default/${name}`;
  let rv = 0;
  const store = <T extends V1Service | V1Pod>(object: T): T => {
    const stored = structuredClone(object);
    stored.metadata = {
      ...stored.metadata,
      uid: `uid-${stored.metadata?.name}-${++rv}`,
      resourceVersion: String(rv),
    };
    return stored;
  };

  // --- Services -------------------------------------------------------------------------------
  let serial = 0;
  const staticPort = () => 30_000 + Math.floor(random() * 20);
  const newService = (): V1Service => {
    const nodePort = random() < 0.5;
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: `svc-${serial++}`, namespace: 'default' },
      spec: {
        type: nodePort ? 'NodePort' : 'ClusterIP',
        ...(random() < 0.15 ? { clusterIP: `10.100.0.${1 + Math.floor(random() * 20)}` } : {}),
        ports: [
          {
            name: 'game',
            port: 80,
            protocol: 'TCP',
            ...(nodePort && random() < 0.3 ? { nodePort: staticPort() } : {}),
          },
        ],
      },
    };
  };
  const live = (map: ReadonlyMap<string, V1Service | V1Pod>) =>
    [...map.values()].filter((o) => !o.metadata?.deletionTimestamp);
  const createService = async () => {
    count('service CREATE');
    const object = newService();
    const name = object.metadata?.name ?? '';
    const answer = await call(review({ resource: 'services', operation: 'CREATE', name, object }));
    if (typeof answer === 'string' || !answer.allowed) return;
    if (random() < options.refuse) return void count('refused by the apiserver');
    api.services.set(key(name), store(applyPatch(object, decodePatch(answer.patch))));
  };
  const updateService = async () => {
    const current = pick(live(api.services)) as V1Service | undefined;
    if (!current) return;
    count('service UPDATE');
    const name = current.metadata?.name ?? '';
    const next = structuredClone(current);
    const spec = next.spec ?? {};
    if (random() < 0.5) {
      spec.type = spec.type === 'NodePort' ? 'ClusterIP' : 'NodePort';
      if (spec.type === 'ClusterIP')
        spec.ports = (spec.ports ?? []).map(({ nodePort: _, ...p }) => p);
    } else if ((spec.ports ?? []).length > 1) {
      spec.ports = (spec.ports ?? []).slice(0, 1);
    } else {
      spec.ports = [...(spec.ports ?? []), { name: 'extra', port: 81, protocol: 'UDP' }];
    }
    const answer = await call(
      review({ resource: 'services', operation: 'UPDATE', name, object: next, oldObject: current }),
    );
    if (typeof answer === 'string' || !answer.allowed) return;
    const stored = api.services.get(key(name));
    // The apiserver's resourceVersion check: a write from a stale read is refused.
    if (
      stored?.metadata?.resourceVersion !== current.metadata?.resourceVersion ||
      stored?.metadata?.deletionTimestamp
    )
      return void count('refused by the apiserver');
    if (random() < options.refuse) return void count('refused by the apiserver');
    api.services.set(key(name), store(applyPatch(next, decodePatch(answer.patch))));
  };
  const finalizers: { due: number; key: string }[] = [];
  const deleteService = async () => {
    const current = pick(live(api.services)) as V1Service | undefined;
    if (!current) return;
    count('service DELETE');
    const name = current.metadata?.name ?? '';
    // failurePolicy Ignore: the Service goes whatever the webhook answered.
    await call(review({ resource: 'services', operation: 'DELETE', name, oldObject: current }));
    if (!api.services.has(key(name))) return;
    if (random() < options.finalizer) {
      const held = structuredClone(current);
      held.metadata = { ...held.metadata, deletionTimestamp: new Date(now()) };
      api.services.set(key(name), held);
      finalizers.push({ due: now() + 10_000 + random() * 110_000, key: key(name) });
      return void count('held by a finalizer');
    }
    api.services.delete(key(name));
  };

  // --- Game-server pods -----------------------------------------------------------------------
  const createPod = async () => {
    count('pod CREATE');
    const name = `gs-${serial++}`;
    const ports = [
      { name: 'game', containerPort: 7777 },
      ...(random() < 0.3 ? [{ name: 'query', containerPort: 7778, protocol: 'TCP' }] : []),
    ];
    const object: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace: 'default',
        annotations: { 'berth.dev/ports': JSON.stringify(ports) },
      },
      spec: { containers: [{ name: 'server', image: 'game:1' }] },
    };
    const answer = await call(review({ resource: 'pods', operation: 'CREATE', name, object }));
    if (typeof answer === 'string' || !answer.allowed) return;
    if (random() < options.refuse) return void count('refused by the apiserver');
    const stored = store(applyPatch(object, decodePatch(answer.patch)));
    stored.status = { phase: 'Running' };
    api.pods.set(key(name), stored);
  };
  const deletePod = async () => {
    const current = pick([...api.pods.values()]);
    if (!current) return;
    count('pod DELETE');
    const name = current.metadata?.name ?? '';
    await call(review({ resource: 'pods', operation: 'DELETE', name, oldObject: current }));
    api.pods.delete(key(name));
  };

  // --- ENI IPs, as the CNI plugin's ADD and DEL ask for them ------------------------------------
  const eni = eniWorld({
    store: new DynamoEniStore({ client: faulty, tableName, cluster: config.cluster }),
    eni: { minIdle: 2, maxIdle: 6, cooldownSeconds: 0, stickySeconds: 0 },
  });
  eni.clock.now = START;
  eni.addNode('node-a', 'm5.xlarge');
  /** Pods holding an IP, as the CNI saw its ADD answered. */
  const eniHolders = new Map<string, { readonly ip: string; readonly containerId: string }>();
  /** DELs kubelet sends again later, after the IP may have gone to another pod. */
  const lateDels: { pod: string; ip: string; containerId: string }[] = [];
  const checkUniqueIp = (pod: string, ip: string) => {
    for (const [other, held] of eniHolders)
      if (other !== pod && held.ip === ip)
        violations.push(`${ip} held by pods ${other} and ${pod}`);
  };
  const eniDel = async () => {
    const [pod, held] = pick([...eniHolders]) ?? [];
    if (pod === undefined || held === undefined) return;
    count('ENI DEL');
    eniHolders.delete(pod);
    eni.cluster.removePod('net', pod);
    const holder = { namespace: 'net', pod, containerId: held.containerId };
    for (let attempt = 1; attempt <= CLIENT_ATTEMPTS; attempt++) {
      try {
        await releaseIp(eni.deps, 'node-a', held.ip, holder);
        break;
      } catch (error) {
        // On a first try the IP must still be the pod's; a retry may follow a release that
        // landed unseen (a timeout), after which the IP may rightly have gone to another pod.
        if (error instanceof IpHeldByAnotherError && attempt === 1)
          violations.push(`${pod}'s own DEL found ${held.ip} held by another: ${error.message}`);
        if (error instanceof IpHeldByAnotherError) break;
        if (injected(error)?.kind === 'crash') break;
        if (!transient(error) && !(error instanceof EniRequestError))
          unexpected.push(describeError(error));
      }
    }
    if (random() < 0.3) lateDels.push({ pod, ...held });
  };
  const eniAdd = async () => {
    if (eniHolders.size >= 24) return eniDel();
    count('ENI ADD');
    const pod = `ip-${serial++}`;
    const containerId = `sandbox-${serial}`;
    eni.cluster.addPod('net', pod, 'node-a');
    for (let attempt = 1; attempt <= CLIENT_ATTEMPTS; attempt++) {
      try {
        const { ip } = await assignIp(eni.deps, 'node-a', { namespace: 'net', pod, containerId });
        checkUniqueIp(pod, ip);
        eniHolders.set(pod, { ip, containerId });
        return;
      } catch (error) {
        if (injected(error)?.kind === 'crash') break;
        if (!transient(error) && !(error instanceof EniRequestError))
          unexpected.push(describeError(error));
      }
    }
    // The sandbox never started: kubelet gives up on the pod, and the ENI pass frees what leaked.
    eni.cluster.removePod('net', pod);
  };
  const eniLateDel = async () => {
    const late = lateDels.shift();
    if (!late) return eniAdd();
    count('ENI late DEL');
    const holder = { namespace: 'net', pod: late.pod, containerId: late.containerId };
    try {
      const { released } = await releaseIp(eni.deps, 'node-a', late.ip, holder);
      for (const [other, held] of eniHolders)
        if (released && held.ip === late.ip)
          violations.push(`a late DEL of ${late.pod} freed ${late.ip}, which ${other} holds`);
    } catch (error) {
      if (error instanceof IpHeldByAnotherError) count('ENI late DEL refused (409)');
      else if (!transient(error) && !(error instanceof EniRequestError))
        unexpected.push(describeError(error));
    }
  };

  // --- Checks ---------------------------------------------------------------------------------
  let invariantChecks = 0;
  const carried = () => {
    const values = new Map<string, string>();
    for (const service of api.services.values()) {
      const { owner } = readService(service, serviceRanges);
      for (const value of owner.values) {
        const at = claimKey({ range: rangeKey(value.range), offset: value.offset });
        const other = values.get(at);
        if (other !== undefined && other !== owner.id)
          violations.push(`${at} carried by two Services (${other}, ${owner.id})`);
        values.set(at, owner.id);
      }
    }
    return values;
  };
  const held = async () => {
    const values = new Map<string, string>();
    for (const range of [...serviceRanges.clusterIps, serviceRanges.nodePorts]) {
      const last = Math.floor((range.size - 1) / BLOCK_SIZE);
      for await (const block of clean.allocations.scanBlocks(rangeKey(range), 0, last)) {
        for (const [slot, holder] of block.holders) {
          values.set(
            claimKey({ range: rangeKey(range), offset: block.index * BLOCK_SIZE + slot }),
            holder,
          );
        }
      }
    }
    return values;
  };
  /** Every value a stored Service carries is held by that Service's own id, right now. */
  const checkHeld = async () => {
    invariantChecks++;
    const before = carried();
    const holders = await held();
    const after = carried();
    for (const [value, id] of before) {
      // Read on both sides of the store read: a value dropped meanwhile proves nothing.
      if (after.get(value) === id && holders.get(value) !== id)
        violations.push(
          `${value} is carried by ${id} but held by ${holders.get(value) ?? 'nobody'}`,
        );
    }
  };

  // --- The run --------------------------------------------------------------------------------
  const settleShaken = settleWith(shaken.allocator);
  const runDue = async (look: (task: SettleTask) => Promise<{ recheckAfter?: number }>) => {
    const due = queue.filter((entry) => entry.due <= now());
    for (const entry of due) queue.splice(queue.indexOf(entry), 1);
    for (const { task } of due) {
      try {
        const outcome = await look(task);
        if (outcome.recheckAfter !== undefined)
          queue.push({
            due: now() + outcome.recheckAfter * 1000,
            task: { ...task, attempt: task.attempt + 1 },
          });
      } catch (error) {
        if (!transient(error)) unexpected.push(describeError(error));
        // As SQS would: the message comes back after its visibility timeout.
        queue.push({ due: now() + 30_000, task });
      }
    }
    for (const entry of finalizers.filter((f) => f.due <= now())) {
      finalizers.splice(finalizers.indexOf(entry), 1);
      api.services.delete(entry.key);
    }
  };
  let issued = 0;
  let nextRepair = START + REPAIR_EVERY_MS;
  const actions = [
    createService,
    createService,
    updateService,
    deleteService,
    createPod,
    deletePod,
    eniAdd,
    eniDel,
    eniLateDel,
  ];
  const actor = async () => {
    while (issued < options.operations) {
      issued++;
      const action = pick(actions);
      await action?.();
      carried();
      clock.now += TICK_MS;
      if (issued % 25 === 0) await checkHeld();
    }
  };
  const background = async (done: () => boolean) => {
    while (!done()) {
      await runDue(settleShaken);
      if (now() >= nextRepair) {
        nextRepair = now() + REPAIR_EVERY_MS;
        count('repair pass');
        await repair(shaken).catch((error: unknown) => {
          if (!(error instanceof Error && error.name === 'RepairIncompleteError'))
            unexpected.push(describeError(error));
          count('repair pass failed');
        });
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  let finished = false;
  shaking = false;
  await runEniPass(eni.deps);
  shaking = true;
  const controller = background(() => finished);
  await Promise.all(Array.from({ length: options.actors }, actor));
  finished = true;
  await controller;
  await checkHeld();

  // --- Quiet: faults off, finalizers done, settle queue drained, then repair passes -----------
  shaking = false;
  for (const entry of finalizers) api.services.delete(entry.key);
  finalizers.length = 0;
  const settleClean = settleWith(clean.allocator);
  for (let step = 0; step < 400 && queue.length > 0; step++) {
    clock.now += 30_000;
    await runDue(settleClean);
  }
  await checkHeld();

  const leaksNow = async () => {
    const carriedNow = carried();
    const heldNow = await held();
    const values = [...heldNow].filter(([value, id]) => carriedNow.get(value) !== id).length;
    const pods = hostUses();
    const counts = await hostCounts();
    const ports = [...new Set([...pods.keys(), ...counts.keys()])].filter(
      (port) => (pods.get(port) ?? 0) !== (counts.get(port) ?? 0),
    ).length;
    return values + ports;
  };
  const hostUses = () => {
    const uses = new Map<number, number>();
    for (const pod of api.pods.values()) {
      const reading = readPod(pod, hostRanges);
      for (const port of new Set(reading?.ports.map((p) => p.port) ?? []))
        uses.set(port, (uses.get(port) ?? 0) + 1);
    }
    return uses;
  };
  const hostCounts = async () => {
    const counts = new Map<number, number>();
    for (const range of hostRanges) {
      const read = await clean.hostPorts.readCounts(toHostPortRange(range));
      read.counts.forEach((n, i) => {
        if (n !== 0) counts.set(read.range.first + i, n);
      });
    }
    return counts;
  };
  const leaks = await leaksNow();
  let maxPassesToFree = 0;
  for (let pass = 1; pass <= grace + 2 && (await leaksNow()) > 0; pass++) {
    clock.now += REPAIR_EVERY_MS;
    await repair(clean);
    maxPassesToFree = pass;
  }

  // The ENI pass releases what crashed ADDs left assigned to pods that are gone, after its grace.
  eni.clock.now = now() + ENI_TIMINGS.reconcileGraceMs + 60_000;
  await runEniPass(eni.deps);

  // --- Counts equal records -------------------------------------------------------------------
  const mismatches: string[] = [];
  const carriedNow = carried();
  const heldNow = await held();
  for (const [value, id] of carriedNow)
    if (heldNow.get(value) !== id)
      mismatches.push(`${value}: carried by ${id}, held by ${heldNow.get(value) ?? 'nobody'}`);
  for (const [value, id] of heldNow)
    if (carriedNow.get(value) !== id) mismatches.push(`${value}: held by ${id}, carried by nobody`);
  const heldBy = new Map<string, Set<string>>();
  for (const [value, id] of heldNow) heldBy.set(id, (heldBy.get(id) ?? new Set()).add(value));
  for await (const record of clean.allocations.listOwners()) {
    const claims = new Set(record.claims.map(claimKey));
    const mine = heldBy.get(record.id) ?? new Set<string>();
    if ((record.releasing ?? []).length > 0)
      mismatches.push(`${record.id} still has values releasing`);
    if (claims.size !== mine.size || [...mine].some((v) => !claims.has(v)))
      mismatches.push(
        `${record.id} records ${[...claims].join(',')} but holds ${[...mine].join(',')}`,
      );
    heldBy.delete(record.id);
  }
  for (const id of heldBy.keys()) mismatches.push(`${id} holds values without an owner record`);
  const uses = hostUses();
  const counts = await hostCounts();
  for (const port of new Set([...uses.keys(), ...counts.keys()]))
    if ((uses.get(port) ?? 0) !== (counts.get(port) ?? 0))
      mismatches.push(
        `host port ${port}: ${uses.get(port) ?? 0} live pods, count ${counts.get(port) ?? 0}`,
      );
  const { ips } = await eni.store.loadNode('node-a');
  const assigned = new Map(
    ips.flatMap((ip) => (ip.state === 'assigned' ? [[ip.pod ?? '', ip.ip] as const] : [])),
  );
  for (const [pod, held] of eniHolders)
    if (assigned.get(`net/${pod}`) !== held.ip)
      mismatches.push(
        `ENI ${held.ip}: held by ${pod}, recorded for ${assigned.get(`net/${pod}`) ?? 'nobody'}`,
      );
  for (const [pod, ip] of assigned)
    if (!eniHolders.has(pod.slice('net/'.length)))
      mismatches.push(`ENI ${ip} assigned to ${pod}, which is gone`);
  const podIds = new Set([...api.pods.values()].map((pod) => readPod(pod, hostRanges)?.id));
  for await (const record of clean.hostPorts.listRecords())
    if (!podIds.has(record.id)) mismatches.push(`pod record ${record.id} has no live pod`);

  return {
    operations,
    faults,
    violations,
    unexpected: unexpected.slice(0, 20),
    invariantChecks,
    leaks,
    maxPassesToFree,
    leakGracePasses: grace,
    countsEqualRecords: mismatches.length === 0,
    mismatches: mismatches.slice(0, 20),
    durationMs: Math.round(performance.now() - started),
  };
}
