/**
 * A chaos run: many concurrent clients drive Services and game-server pods through berth's real
 * admission handlers and a simulated apiserver (`chaos-apiserver.ts`: it stores what admission
 * allowed, at once or late, sometimes refuses a write admission already allowed, keeps some
 * Services behind a finalizer), ENI IPs through the CNI's ADD and DEL (with kubelet's late DEL
 * retries), and the settle step and the repair pass behind them, all on DynamoDB Local, while the
 * store throttles, times out after writes that landed, answers 500 after writes that landed (the
 * SDK sends them again), and kills callers between writes (`chaos-faults.ts`). Clients retry as
 * real ones do. Shared by the chaos test (a short fixed-seed slice) and `npm run bench -- chaos`.
 *
 * What it checks, continuously and at the end:
 * - no cluster IP or node port is carried by two stored Services (checked after every operation
 *   and every commit), every value a stored Service carries is held in the store by that
 *   Service's own id (sampled), and no ENI IP is handed to a pod while another live pod has it;
 * - every leak is freed on the `leakGracePasses`-th completed repair pass that finds it
 *   (`leak-watch.ts`), during the run and once quiet;
 * - counts equal records once quiet: held values are exactly the carried ones, owner records list
 *   exactly what their ids hold, host port use counts are exactly the live pods' ports, and ENI
 *   IPs are assigned exactly to the pods whose ADD was answered.
 */

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { claimKey, rangeKey } from '../../shared/allocation/allocator.js';
import { repairRunner } from '../../shared/app/repair-pass.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { settleRunner } from '../../shared/app/settle.js';
import { forEachBounded } from '../../shared/concurrency/bounded.js';
import { parseConfig } from '../../shared/config/schema.js';
import { EniRequestError, IpHeldByAnotherError } from '../../shared/eni/errors.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { ENI_TIMINGS } from '../../shared/eni/policy.js';
import { assignIp, releaseIp } from '../../shared/eni/service.js';
import { lastBlockOf, offsetAt } from '../../shared/net/offset.js';
import { hostPortRange } from '../../shared/net/value-range.js';
import { RepairIncompleteError } from '../../shared/repair/errors.js';
import { readPod, toHostPortRange } from '../../shared/repair/host-port-diff.js';
import { readService } from '../../shared/repair/live.js';
import { QueueSettler } from '../../shared/settle/settler.js';
import type { SettleTask } from '../../shared/settle/task.js';
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { WriteOutcomeUnknownError } from '../../shared/store/errors.js';
import { namesOwner } from '../../shared/vocabulary/allocation-id.js';
import { eniWorld } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { seededRandom } from '../../sim/random.js';
import { review } from '../../sim/reviews.js';
import { SimulatedApiServer } from './chaos-apiserver.js';
import { FaultInjector, InjectedFault, injected } from './chaos-faults.js';
import { LeakWatch, type ListingView, type StoreView } from './leak-watch.js';

/** How hard to shake. Fault probabilities are per store request or write; the rest per write. */
export interface ChaosOptions {
  readonly seed: number;
  readonly actors: number;
  readonly operations: number;
  /** A request refused with a throttling error that outlasted the SDK's retries. */
  readonly throttle: number;
  /** A write that lands, then the caller sees a timeout (and its client retries). */
  readonly ambiguous: number;
  /** A write that lands, then DynamoDB answers 500 and the SDK sends it again. */
  readonly retried: number;
  /** A write that lands, then the caller dies: nothing it does after reaches anything. */
  readonly crash: number;
  /** A write admission allowed that the apiserver then refuses. */
  readonly refuse: number;
  /** A write admission allowed that the apiserver stores up to 55 s later. */
  readonly delay: number;
  /** A Service DELETE held by a finalizer for a while. */
  readonly finalizer: number;
  /** `repair.leakGracePasses` (default 3, as in the contract's example config). */
  readonly leakGracePasses?: number;
  /** Told what happens to Services and their values, line by line, to explain a violation. */
  readonly trace?: (line: string) => void;
}

/** What a run did and found. */
export interface ChaosReport {
  readonly operations: Record<string, number>;
  readonly faults: Record<string, number>;
  /** Moments two live owners had one value, or a Service carried a value it did not hold. */
  readonly violations: readonly string[];
  readonly invariantChecks: number;
  /** Errors that were neither injected nor a transport failure: berth's own faults. */
  readonly unexpected: readonly string[];
  /** Distinct leaks completed repair passes found, during the run and once quiet. */
  readonly leaks: number;
  /** Most completed passes that found one leak before it was gone. */
  readonly maxPassesToFree: number;
  /** Leaks still held after their `leakGracePasses`-th completed pass, or when the run ended. */
  readonly overdueLeaks: readonly string[];
  readonly leakGracePasses: number;
  /** Values and host port records held, with no object, once the run went quiet. */
  readonly leaksWhenQuiet: number;
  /** Repair passes it took to free them. */
  readonly passesWhenQuiet: number;
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
  // The passes are the run's own (`REPAIR_EVERY_MS`), not the config's timer.
  repair: { intervalSeconds: 0, leakGracePasses: 3 },
  settle: { delaySeconds: 5 },
};
/** The run's clock starts here: fixed, so a seeded run replays. */
const START = Date.parse('2036-03-01T12:00:00Z');
/** Lines of an address's story a violation prints. */
const IP_STORY_LINES = 12;
/**
 * Virtual time one finished operation moves the clock by. The clock is shared, so it runs as
 * fast as all clients together finish operations, while each call takes real time on DynamoDB
 * Local: small enough that a call usually answers within the webhook timeout, as it does in AWS.
 */
const TICK_MS = 50;
/** `repair.intervalSeconds` of the run: several passes while it shakes. */
const REPAIR_EVERY_MS = 60_000;
/** Once quiet, the default `repair.intervalSeconds`. */
const QUIET_REPAIR_EVERY_MS = 180_000;
/** How often a failing call is made again by its client (the apiserver per failurePolicy, the CNI). */
const CLIENT_ATTEMPTS = 3;
/** The webhooks' `timeoutSeconds` (`berth manifests`): an answer later than this is not waited for. */
const WEBHOOK_TIMEOUT_MS = 5_000;
/** Settle looks in flight at once (the settle function's concurrent executions). */
const SETTLE_CONCURRENCY = 8;

/**
 * Whether a failure is one a real client meets and retries: an injected fault, or DynamoDB Local
 * dropping a connection under load (the SDK's TimeoutError after its own retries).
 */
function transient(error: unknown): boolean {
  return (
    injected(error) !== undefined ||
    // A decrement whose injected 500 berth did not send again (store/once-only-write.ts).
    error instanceof WriteOutcomeUnknownError ||
    (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'ECONNRESET'))
  );
}

const describeError = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

type Answer =
  | {
      readonly allowed: boolean;
      readonly patch?: string;
      readonly code?: number;
      /** Virtual time the webhook call that answered started. */
      readonly startedAt: number;
    }
  | 'failed';

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
  const config = parseConfig({
    ...CONFIG,
    repair: { ...CONFIG.repair, leakGracePasses: options.leakGracePasses ?? 3 },
  });
  const grace = config.repair.leakGracePasses;
  const clock = { now: START };
  const now = () => clock.now;
  const operations: Record<string, number> = {};
  const count = (kind: string) => {
    operations[kind] = (operations[kind] ?? 0) + 1;
  };
  const violations: string[] = [];
  /** Errors no real client would shrug off: berth's own faults, which the run reports. */
  const unexpected: string[] = [];
  const faults = new FaultInjector(random, options);
  faults.shaking = false;
  const shaken = faults.shake(client);
  const trace = options.trace;
  /** `name id value,value` of a Service, for the trace. */
  const traced = (service: V1Service) => {
    const { owner } = readService(service, serviceRanges);
    const values = owner.values.map((v) => `${v.range.kind}:${v.range.valueAt(v.offset)}`);
    return `${service.metadata?.name} ${owner.id} [${values.join(',')}]`;
  };
  const apiserver = new SimulatedApiServer(
    random,
    options,
    now,
    count,
    trace &&
      ((object) => {
        if (object.kind === 'Service')
          trace(
            `${elapsed()} stored ${traced(object as V1Service)} rv ${object.metadata?.resourceVersion}`,
          );
      }),
  );
  const api = apiserver.api;

  const queue: { due: number; task: SettleTask }[] = [];
  const runtime = createRuntime({
    config,
    dynamo: shaken.client,
    tableName,
    now,
    random,
    // Reads the stored objects, as a cluster's webhook does: what tells a re-invocation from a copy.
    clusterApi: api,
    randomBytes: (size) => Uint8Array.from({ length: size }, () => Math.floor(random() * 256)),
    settler: () =>
      new QueueSettler(
        {
          submit: async (task, delay) => {
            // A dead invocation never sends its message.
            if (!faults.alive()) throw new InjectedFault('crash', 'CallerCrashed');
            queue.push({ due: now() + delay * 1000, task });
          },
        },
        config.settle.delaySeconds,
        () => count('settle task lost'),
      ),
  });
  const serviceRanges = runtime.ranges;
  const hostRanges = Object.entries(config.hostPortRanges).map(([name, ports]) =>
    hostPortRange(name, ports),
  );
  // The settle step and the repair pass as the stack wires them, on the faulty store.
  const passContext = { config, dynamo: shaken.client, tableName, clusterApi: api, now };
  const settleLook = settleRunner(passContext);
  // The checks read the store past the faults.
  const clean = createRuntime({ config, dynamo: client, tableName, now });

  /**
   * One admission call as the apiserver makes it: called again on an error, a crash or an answer
   * later than the webhook timeout (the invocation behind it may still be writing).
   */
  const call = async (body: ReturnType<typeof review>): Promise<Answer> => {
    for (let attempt = 1; attempt <= CLIENT_ATTEMPTS; attempt++) {
      const startedAt = now();
      try {
        const { response } = await faults.invoke(() =>
          admit(parseAdmissionReview(body), runtime.admission),
        );
        if (now() - startedAt > WEBHOOK_TIMEOUT_MS) {
          count('webhook call timed out (answered too late)');
          continue;
        }
        return {
          startedAt,
          allowed: response.allowed,
          ...(response.patch ? { patch: response.patch } : {}),
          ...(response.status?.code ? { code: response.status.code } : {}),
        };
      } catch (error) {
        if (injected(error)?.kind === 'crash') count('webhook died mid-review');
        else if (!transient(error)) unexpected.push(describeError(error));
      }
    }
    return 'failed';
  };
  let serial = 0;
  /** A name, or (with probability `generated`) a generateName for the apiserver to name from. */
  const nameOrPrefix = (prefix: string, generated: number) =>
    random() < generated
      ? { generateName: prefix, namespace: 'default' }
      : { name: `${prefix}${serial++}`, namespace: 'default' };
  const idOf = (object: V1Service | V1Pod) =>
    object.metadata?.annotations?.['berth.dev/allocation-id'] ?? '';
  /**
   * The same request seen again before the object is stored (an apiserver's second call of it,
   * the same uid): an object with no name yet must get its own answer back, never a new id. Six
   * in ten such objects are: at three in ten a run of 300 operations saw about four Services
   * seen again, and none in a few runs out of a hundred, which the test counts on seeing.
   */
  const seenAgain = async <T extends V1Service | V1Pod>(
    body: ReturnType<typeof review>,
    admitted: T,
  ) => {
    if (admitted.metadata?.name || random() >= 0.6) return;
    count(`${admitted.kind} CREATE seen again (same request uid)`);
    const again = await call({ ...body, request: { ...body.request, object: admitted } });
    if (again === 'failed') return;
    const id = again.allowed ? idOf(applyPatch(admitted, decodePatch(again.patch))) : '';
    if (id !== idOf(admitted))
      unexpected.push(
        `${admitted.kind} ${idOf(admitted)} seen again: ${again.allowed ? `new id ${id}` : `denied ${again.code}`}`,
      );
  };
  const podKey = (pod: V1Pod | V1Service) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  /** Pods made outside berth, and pods whose DELETE was asked: neither is a copy's original. */
  const outsideCopies = new Set<string>();
  const deleting = new Set<string>();
  /**
   * The apiserver calling berth again after a later webhook (an injector) changed the object,
   * under a new request uid (`reinvocationPolicy: IfNeeded`), before anything is stored: the
   * same object keeps its first allocation, named or generateName, and is never denied.
   */
  const reinvoked = async <T extends V1Service | V1Pod>(
    resource: 'services' | 'pods',
    admitted: T,
  ): Promise<T> => {
    if (random() >= 0.3) return admitted;
    count(`${admitted.kind} CREATE re-invoked after another webhook`);
    const injected = structuredClone(admitted);
    injected.metadata = {
      ...injected.metadata,
      labels: { ...injected.metadata?.labels, 'sidecar.example.com/injected': 'true' },
    };
    const name = injected.metadata?.name ?? '';
    const again = await call(review({ resource, operation: 'CREATE', name, object: injected }));
    if (again === 'failed') return admitted;
    const after = again.allowed ? applyPatch(injected, decodePatch(again.patch)) : undefined;
    if (after === undefined || idOf(after) !== idOf(admitted)) {
      violations.push(
        `${admitted.kind} ${idOf(admitted)} re-invoked: ${after ? `a second allocation ${idOf(after)}` : `denied ${again.code}`} at ${elapsed()}`,
      );
      return admitted;
    }
    return after;
  };
  /**
   * A pod made from a live game server's manifest outside berth (no `berth.dev/ports` at its
   * CREATE, so berth never saw it; the annotation added by an UPDATE, which pods have no webhook
   * for), later deleted through berth's DELETE webhook: the original keeps everything it holds.
   */
  const copyOutsideBerth = async () => {
    const original = pick(
      apiserver
        .live('pods')
        .filter(
          (pod) =>
            idOf(pod) !== '' && !outsideCopies.has(podKey(pod)) && !deleting.has(podKey(pod)),
        ),
    );
    if (!original) return;
    const key = podKey(original);
    const before = await clean.hostPortStore.getRecord(idOf(original));
    count('pod copied outside berth, then deleted');
    const copy = structuredClone(original);
    const { name: _n, uid: _u, resourceVersion: _r, ...metadata } = copy.metadata ?? {};
    copy.metadata = original.metadata?.generateName
      ? metadata
      : { ...metadata, name: `${original.metadata?.name}-copy${serial++}` };
    const stored = apiserver.createNow('pods', copy);
    if (!stored) return;
    outsideCopies.add(podKey(stored));
    const name = stored.metadata?.name ?? '';
    await call(review({ resource: 'pods', operation: 'DELETE', name, oldObject: stored }));
    apiserver.deletePod(stored as V1Pod);
    // Only a DELETE of the original itself may free its ports: none was asked meanwhile.
    const live =
      !deleting.has(key) &&
      apiserver.live('pods').some((p) => `${p.metadata?.namespace}/${p.metadata?.name}` === key);
    if (live && before && (await clean.hostPortStore.getRecord(idOf(original))) === undefined)
      violations.push(
        `the DELETE of a copy of ${key} freed its ports (${idOf(original)}) at ${elapsed()}`,
      );
  };
  /**
   * A copy of a stored object created with generateName (`kubectl get -o json`, name, uid and
   * resourceVersion dropped, generateName kept), created under another request: a new object,
   * never the original while the original is stored. A Service copy asks for the original's
   * values (denied 409); a pod copy gets an id of its own. An original deleted meanwhile, its
   * DELETE webhook failed, may leave the copy its allocation: one live holder still.
   */
  const copyOf = async <T extends V1Service | V1Pod>(resource: 'services' | 'pods', live: T[]) => {
    const original = pick(live.filter((o) => o.metadata?.generateName));
    if (!original) return;
    count(`${original.kind} CREATE (a copy of a generateName one)`);
    const copy = structuredClone(original);
    const { name: _n, uid: _u, resourceVersion: _r, ...metadata } = copy.metadata ?? {};
    copy.metadata = metadata;
    const answer = await call(review({ resource, operation: 'CREATE', name: '', object: copy }));
    if (answer === 'failed' || !answer.allowed) return;
    const admitted = applyPatch(copy, decodePatch(answer.patch));
    // Picked from the stored objects: still there under its uid, it was there all along.
    const storedUid = apiserver.api[resource].get(podKey(original))?.metadata?.uid;
    const storedThroughout = storedUid !== undefined && storedUid === original.metadata?.uid;
    if (storedThroughout && idOf(admitted) === idOf(original))
      violations.push(
        `a copy of ${original.kind} ${original.metadata?.name} was admitted under its id ${idOf(original)} at ${elapsed()}`,
      );
    if (resource === 'pods') (admitted as V1Pod).status = { phase: 'Running' };
    apiserver.create(resource, admitted, answer.startedAt);
  };

  // --- Services -------------------------------------------------------------------------------
  const staticPort = () => 30_000 + Math.floor(random() * 20);
  const newService = (): V1Service => {
    const nodePort = random() < 0.5;
    return {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: nameOrPrefix('svc-', 0.3),
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
  /**
   * A CREATE, and its client's one retry of the same object when the request failed or was slow
   * to answer (a timed-out client cannot tell a slow commit from none: its retry may find the
   * name taken by its own first try).
   */
  const createService = async (retryOf?: V1Service) => {
    count(retryOf ? 'service CREATE (client retry)' : 'service CREATE');
    const object = retryOf ?? newService();
    const name = object.metadata?.name ?? '';
    const body = review({ resource: 'services', operation: 'CREATE', name, object });
    const answer = await call(body);
    let fate: string = answer === 'failed' ? 'failed' : 'denied';
    if (answer !== 'failed' && answer.allowed) {
      const first = applyPatch(object, decodePatch(answer.patch));
      await seenAgain(body, first);
      const admitted = await reinvoked('services', first);
      fate = apiserver.create('services', admitted, answer.startedAt);
      trace?.(`${elapsed()} CREATE ${traced(admitted)} ${fate}`);
    }
    if (answer !== 'failed' && answer.code === 409 && (await onlyLeaksHold(object)))
      count('CREATE denied 409 for a value only a leak held');
    if (!retryOf && (fate === 'failed' || fate === 'delayed') && random() < 0.5)
      await createService(object);
  };
  const updateService = async () => {
    const current = pick(apiserver.live('services'));
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
    if (answer === 'failed' || !answer.allowed) return;
    const admitted = applyPatch(next, decodePatch(answer.patch));
    const fate = apiserver.update(current, admitted, answer.startedAt);
    trace?.(
      `${elapsed()} UPDATE ${traced(admitted)} from rv ${current.metadata?.resourceVersion} ${fate}`,
    );
  };
  const deleteService = async () => {
    const current = pick(apiserver.live('services'));
    if (!current) return;
    count('service DELETE');
    const name = current.metadata?.name ?? '';
    // failurePolicy Ignore: the Service goes whatever the webhook answered.
    await call(review({ resource: 'services', operation: 'DELETE', name, oldObject: current }));
    apiserver.deleteService(current);
  };

  // --- Game-server pods -----------------------------------------------------------------------
  const newPod = (): V1Pod => {
    const ports = [
      { name: 'game', containerPort: 7777 },
      ...(random() < 0.3 ? [{ name: 'query', containerPort: 7778, protocol: 'TCP' }] : []),
    ];
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        ...nameOrPrefix('gs-', 0.5),
        annotations: { 'berth.dev/ports': JSON.stringify(ports) },
      },
      spec: { containers: [{ name: 'server', image: 'game:1' }] },
    };
  };
  const createPod = async (retryOf?: V1Pod) => {
    count(retryOf ? 'pod CREATE (client retry)' : 'pod CREATE');
    const object = retryOf ?? newPod();
    const name = object.metadata?.name ?? '';
    const body = review({ resource: 'pods', operation: 'CREATE', name, object });
    const answer = await call(body);
    let fate: string = answer === 'failed' ? 'failed' : 'denied';
    if (answer !== 'failed' && answer.allowed) {
      const first = applyPatch(object, decodePatch(answer.patch));
      await seenAgain(body, first);
      const admitted = await reinvoked('pods', first);
      admitted.status = { phase: 'Running' };
      fate = apiserver.create('pods', admitted, answer.startedAt);
    }
    if (!retryOf && (fate === 'failed' || fate === 'delayed') && random() < 0.5)
      await createPod(object);
  };
  const deletePod = async () => {
    const current = pick(apiserver.live('pods'));
    if (!current) return;
    count('pod DELETE');
    deleting.add(podKey(current));
    const name = current.metadata?.name ?? '';
    // failurePolicy Ignore, as for Services.
    await call(review({ resource: 'pods', operation: 'DELETE', name, oldObject: current }));
    apiserver.deletePod(current);
  };

  // --- ENI IPs, as the CNI plugin's ADD and DEL ask for them ------------------------------------
  const eni = eniWorld({
    store: new DynamoEniStore({ client: shaken.client, tableName, cluster: config.cluster }),
    eni: { minIdle: 2, maxIdle: 6, cooldownSeconds: 0, stickySeconds: 0 },
  });
  eni.clock.now = START;
  eni.addNode('node-a', 'm5.xlarge');
  // A dead invocation makes no EC2 call either.
  const eniDeps = { ...eni.deps, ec2: faults.gate(eni.deps.ec2) };
  /** Pods holding an IP, as the CNI saw its ADD answered. */
  const eniHolders = new Map<string, { readonly ip: string; readonly containerId: string }>();
  type Holding = { readonly ip: string; readonly containerId: string };
  const sameHolding = (now: Holding | undefined, then: Holding) =>
    now?.ip === then.ip && now.containerId === then.containerId;
  /** DELs kubelet sends again later, after the IP may have gone to another pod. */
  const lateDels: { pod: string; ip: string; containerId: string }[] = [];
  /** What the CNI saw of each address, latest last: a violation prints its address's story. */
  const ipStories = new Map<string, string[]>();
  const tell = (ip: string, line: string) => {
    const story = ipStories.get(ip) ?? [];
    story.push(`${elapsed()} ${line}`);
    ipStories.set(ip, story.slice(-IP_STORY_LINES));
  };
  const storyOf = (ip: string) =>
    ` (what the CNI saw of ${ip}: ${(ipStories.get(ip) ?? []).join('; ')})`;
  const checkUniqueIp = (pod: string, ip: string) => {
    for (const [other, held] of eniHolders)
      if (other !== pod && held.ip === ip)
        violations.push(`${ip} held by pods ${other} and ${pod}${storyOf(ip)}`);
  };
  const eniDel = async () => {
    const [pod, held] = pick([...eniHolders]) ?? [];
    if (pod === undefined || held === undefined) return;
    count('ENI DEL');
    // Up to its DEL the pod holds its address: berth's record must say so. (Read outside any
    // invocation, so unshaken.)
    const record = await eni.store.getIp('node-a', held.ip);
    if (
      record?.state !== 'assigned' ||
      record.pod !== `net/${pod}` ||
      record.containerId !== held.containerId
    )
      violations.push(
        `${held.ip} of live ${pod} is recorded ${record ? `${record.state} for ${record.pod ?? 'nobody'} (container ${record.containerId ?? '-'})` : 'nowhere'}${storyOf(held.ip)}`,
      );
    eniHolders.delete(pod);
    eni.cluster.pods.delete(`net/${pod}`);
    const holder = { namespace: 'net', pod, containerId: held.containerId };
    for (let attempt = 1; attempt <= CLIENT_ATTEMPTS; attempt++) {
      try {
        const { released } = await faults.invoke(() =>
          releaseIp(eniDeps, 'node-a', held.ip, holder),
        );
        tell(held.ip, `${pod} DEL ${attempt}: ${released ? 'released' : 'not assigned'}`);
        break;
      } catch (error) {
        tell(held.ip, `${pod} DEL ${attempt}: ${describeError(error)}`);
        // The address may rightly be another pod's by now, even on a first try: the release
        // landed and then failed (a 500), and before berth read it back to tell, the address
        // went on to other pods; its 409 is the truth. That the pod held it until its DEL is
        // checked above.
        if (error instanceof IpHeldByAnotherError) break;
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
    eni.cluster.withPods(boundPod('net', pod, 'node-a'));
    for (let attempt = 1; attempt <= CLIENT_ATTEMPTS; attempt++) {
      try {
        const { ip } = await faults.invoke(() =>
          assignIp(eniDeps, 'node-a', { namespace: 'net', pod, containerId }),
        );
        tell(ip, `${pod} ADD ${attempt}: given`);
        checkUniqueIp(pod, ip);
        eniHolders.set(pod, { ip, containerId });
        return;
      } catch (error) {
        if (!transient(error) && !(error instanceof EniRequestError))
          unexpected.push(describeError(error));
      }
    }
    // The sandbox never started: kubelet gives up on the pod, and the ENI pass frees what leaked.
    eni.cluster.pods.delete(`net/${pod}`);
  };
  const eniLateDel = async () => {
    const late = lateDels.shift();
    if (!late) return eniAdd();
    count('ENI late DEL');
    const holder = { namespace: 'net', pod: late.pod, containerId: late.containerId };
    // Who holds the address before the DEL: an ADD that gets it once the DEL freed it (the
    // cooldown is 0) is no violation; one that held it all along is.
    const before = [...eniHolders].filter(([, held]) => held.ip === late.ip);
    try {
      const { released } = await faults.invoke(() => releaseIp(eniDeps, 'node-a', late.ip, holder));
      tell(late.ip, `${late.pod} late DEL: ${released ? 'released' : 'not assigned'}`);
      for (const [other, held] of before)
        if (released && sameHolding(eniHolders.get(other), held))
          violations.push(
            `a late DEL of ${late.pod} freed ${late.ip}, which ${other} holds${storyOf(late.ip)}`,
          );
    } catch (error) {
      tell(late.ip, `${late.pod} late DEL: ${describeError(error)}`);
      if (error instanceof IpHeldByAnotherError) count('ENI late DEL refused (409)');
      else if (!transient(error) && !(error instanceof EniRequestError))
        unexpected.push(describeError(error));
    }
  };

  // --- Checks ---------------------------------------------------------------------------------
  let invariantChecks = 0;
  const elapsed = () => `+${((now() - START) / 1000).toFixed(1)} s`;
  /** Violations are reported once each, as first seen (a check repeats until the run ends). */
  const reported = new Set<string>();
  const violate = (key: string, describe: () => string) => {
    if (reported.has(key)) return;
    reported.add(key);
    violations.push(describe());
  };
  /** Value key → id of the stored Service carrying it; two carriers are a violation. */
  const carriedBy = (services: Iterable<V1Service>, report: boolean) => {
    const values = new Map<string, string>();
    for (const service of services) {
      const { owner } = readService(service, serviceRanges);
      for (const value of owner.values) {
        const at = claimKey({ range: rangeKey(value.range), offset: value.offset });
        const other = values.get(at);
        if (report && other !== undefined && other !== owner.id)
          violate(
            `two:${at}:${other}:${owner.id}`,
            () =>
              `${at} carried by two Services (${describeOwner(other)}; ${describeOwner(owner.id)}) at ${elapsed()}`,
          );
        values.set(at, owner.id);
      }
    }
    return values;
  };
  const carried = () => carriedBy(api.services.values(), true);
  /** The stored Service with allocation id `id`, and when it was admitted and stored. */
  const describeOwner = (id: string) => {
    for (const service of api.services.values()) {
      if (readService(service, serviceRanges).owner.id !== id) continue;
      const key = `${service.metadata?.namespace}/${service.metadata?.name}`;
      return `${key} ${id}, ${apiserver.provenance(key, START)}`;
    }
    return id;
  };
  /** Value key → holder, and value key → claim time where the block says. */
  const blocks = async () => {
    const values = new Map<string, string>();
    const claimedAt = new Map<string, number>();
    for (const range of [...serviceRanges.clusterIps, serviceRanges.nodePorts]) {
      const last = lastBlockOf(range.exactSize);
      for await (const block of clean.allocationStore.scanBlocks(rangeKey(range), 0, last)) {
        for (const [slot, holder] of block.holders) {
          const key = claimKey({ range: rangeKey(range), offset: offsetAt(block.index, slot) });
          values.set(key, holder);
          const at = block.claimedAt?.get(slot);
          if (at !== undefined) claimedAt.set(key, at);
        }
      }
    }
    return { values, claimedAt };
  };
  const held = async () => (await blocks()).values;
  /** Every value a stored Service carries is held by that Service's own id, right now. */
  const checkHeld = async () => {
    invariantChecks++;
    const before = carried();
    const holders = await held();
    const after = carried();
    for (const [value, id] of before) {
      // Read on both sides of the store read: a value dropped meanwhile proves nothing.
      if (after.get(value) === id && holders.get(value) !== id) {
        const holder = holders.get(value) ?? 'nobody';
        violate(
          `held:${value}:${id}:${holder}`,
          () => `${value} carried by ${describeOwner(id)} but held by ${holder} at ${elapsed()}`,
        );
      }
    }
  };
  /**
   * Whether a requested value of `object` is held by an id that no owner record lists and no
   * stored Service carries: the denial was for a leak (a crash's, or a write the SDK sent twice).
   */
  const onlyLeaksHold = async (object: V1Service) => {
    const requested = [
      ...(object.spec?.clusterIP
        ? serviceRanges.clusterIps.map((range) => ({ range, value: object.spec?.clusterIP ?? '' }))
        : []),
      ...(object.spec?.ports ?? []).flatMap((p) =>
        p.nodePort ? [{ range: serviceRanges.nodePorts, value: String(p.nodePort) }] : [],
      ),
    ];
    const holders = await held();
    const carriers = carriedBy(api.services.values(), false);
    for (const { range, value } of requested) {
      const offset = range.offsetOf(value);
      if (offset === undefined) continue;
      const key = claimKey({ range: rangeKey(range), offset });
      const holder = holders.get(key);
      if (holder === undefined || carriers.has(key)) continue;
      if (!(await clean.allocationStore.getOwner(holder))) return true;
    }
    return false;
  };
  const storeView = async (): Promise<StoreView> => {
    const records = new Map<string, { owner: string; createdAt: number }>();
    for await (const record of clean.hostPortStore.listRecords())
      records.set(record.id, {
        owner: `${record.pod.namespace}/${record.id}`,
        createdAt: record.createdAt,
      });
    const { values, claimedAt } = await blocks();
    return { held: values, claimedAt, records };
  };

  // --- Settle and repair ----------------------------------------------------------------------
  /** The due settle tasks, taken off the queue and looked at as the settle function's instances do. */
  const runDueSettles = async () => {
    const due = queue.filter((entry) => entry.due <= now());
    for (const entry of due) queue.splice(queue.indexOf(entry), 1);
    await forEachBounded(due, SETTLE_CONCURRENCY, async ({ task }) => {
      try {
        const record = trace && (await clean.allocationStore.getOwner(task.id));
        const outcome = await faults.invoke(() => settleLook(task));
        if (record && outcome.freed + outcome.kept > 0)
          trace?.(
            `${elapsed()} settle ${task.reason} ${task.id} freed ${outcome.freed} kept ${outcome.kept} of releasing [${(record.releasing ?? []).map(claimKey).join(',')}] claims [${record.claims.map(claimKey).join(',')}]`,
          );
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
    });
  };
  const watch = new LeakWatch(grace);
  let passes = 0;
  /** One repair pass, watched: true when it completed. */
  const repair = async (): Promise<boolean> => {
    const listedAt = now();
    const before = await storeView();
    const listing: { carried?: ReadonlySet<string>; runningPods?: ReadonlySet<string> } = {};
    const cluster = apiserver.listedBy((resource, items) => {
      if (resource === 'services') {
        listing.carried = new Set(carriedBy(items as V1Service[], false).keys());
        return;
      }
      const running = new Set<string>();
      for (const pod of items as V1Pod[]) {
        const reading = readPod(pod, hostRanges);
        if (reading?.running) running.add(`${reading.pod.namespace}/${reading.id}`);
      }
      listing.runningPods = running;
    });
    count('repair pass');
    try {
      const summary = await faults.invoke(() =>
        repairRunner({ ...passContext, clusterApi: cluster })(`chaos-${passes++}`),
      );
      if (summary.skipped) {
        count('repair pass skipped (lease held by a dead pass)');
        return false;
      }
    } catch (error) {
      if (!(error instanceof RepairIncompleteError) && injected(error)?.kind !== 'crash')
        unexpected.push(describeError(error));
      count('repair pass failed');
      // It may have written its ledger before failing: counts it did not find start again.
      if (listing.carried && listing.runningPods)
        watch.failed(before, {
          carried: listing.carried,
          runningPods: listing.runningPods,
          listedAt,
        });
      return false;
    }
    if (!listing.carried || !listing.runningPods) throw new Error('the pass listed nothing');
    watch.observe(
      before,
      {
        carried: listing.carried,
        runningPods: listing.runningPods,
        listedAt,
      } satisfies ListingView,
      await storeView(),
    );
    return true;
  };

  // --- The run --------------------------------------------------------------------------------
  let issued = 0;
  let nextRepair = START + REPAIR_EVERY_MS;
  const actions = [
    () => createService(),
    () => createService(),
    updateService,
    deleteService,
    () => createPod(),
    deletePod,
    () => copyOf('services', apiserver.live('services')),
    () => copyOf('pods', apiserver.live('pods')),
    copyOutsideBerth,
    eniAdd,
    eniDel,
    eniLateDel,
  ];
  const actor = async () => {
    while (issued < options.operations) {
      issued++;
      await pick(actions)?.();
      carried();
      clock.now += TICK_MS;
      // Writes the apiserver stores late are stored on time, not when a loop comes round.
      if (apiserver.advance()) carried();
      if (issued % 25 === 0) await checkHeld();
    }
  };
  const yieldTurn = () => new Promise((resolve) => setTimeout(resolve, 2));
  // The settle function and the repair schedule run side by side, as in AWS: a long batch of
  // settle looks never delays a pass, nor a pass the looks.
  const settling = async (done: () => boolean) => {
    while (!done()) {
      await runDueSettles();
      await yieldTurn();
    }
  };
  const repairing = async (done: () => boolean) => {
    while (!done()) {
      if (now() >= nextRepair) {
        nextRepair = now() + REPAIR_EVERY_MS;
        await repair();
      }
      await yieldTurn();
    }
  };
  await runEniPass(eni.deps);
  faults.shaking = true;
  let finished = false;
  const background = [settling(() => finished), repairing(() => finished)];
  await Promise.all(Array.from({ length: options.actors }, actor));
  finished = true;
  await Promise.all(background);
  await checkHeld();

  // --- Quiet: faults off, writes stored, finalizers done, settle queue drained ----------------
  faults.shaking = false;
  apiserver.finish();
  carried();
  for (let step = 0; step < 400 && queue.length > 0; step++) {
    clock.now += 30_000;
    await runDueSettles();
  }
  await checkHeld();

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
      const read = await clean.hostPortStore.readCounts(toHostPortRange(range));
      read.counts.forEach((n, i) => {
        if (n !== 0) counts.set(read.range.first + i, n);
      });
    }
    return counts;
  };
  const podIds = () =>
    new Set([...api.pods.values()].map((pod) => readPod(pod, hostRanges)?.id ?? ''));
  /** Values held that no Service carries, and pod records without a pod; and drifted counts. */
  const leaksNow = async () => {
    const carriedNow = carried();
    const { held: heldNow, records } = await storeView();
    const values = [...heldNow].filter(([value, id]) => carriedNow.get(value) !== id).length;
    const live = podIds();
    const orphans = [...records.keys()].filter((id) => !live.has(id)).length;
    const uses = hostUses();
    const counts = await hostCounts();
    const drift = [...new Set([...uses.keys(), ...counts.keys()])].filter(
      (port) => (uses.get(port) ?? 0) !== (counts.get(port) ?? 0),
    ).length;
    return { leaks: values + orphans, drift };
  };
  const quiet = async () => {
    const { leaks, drift } = await leaksNow();
    return leaks + drift === 0;
  };
  const leaksWhenQuiet = (await leaksNow()).leaks;
  let passesWhenQuiet = 0;
  // Passes at the default interval; one that died holding the lease keeps the next ones out
  // for the lease's TTL (5 minutes, so two of them).
  for (let tries = 0; tries < grace + 3 && !(await quiet()); tries++) {
    clock.now += QUIET_REPAIR_EVERY_MS;
    if (await repair()) passesWhenQuiet++;
  }
  const watched = watch.report();
  const overdueLeaks = [
    ...watched.overdue,
    ...(watched.open > 0 ? [`${watched.open} leaks still held once quiet`] : []),
  ];

  // The ENI pass releases what crashed ADDs left assigned to pods that are gone, after its grace.
  eni.clock.now = now() + ENI_TIMINGS.reconcileGraceMs + 60_000;
  await runEniPass(eni.deps);
  shaken.uninstall();

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
  for await (const record of clean.allocationStore.listOwners()) {
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
  // An owner created without a record is in order when the Service carrying its values (the
  // check above proved they are carried by it) is the one its id names.
  const named = (id: string) =>
    [...api.services.values()].some(
      (service) =>
        readService(service, serviceRanges).owner.id === id &&
        namesOwner(id, {
          kind: 'Service',
          namespace: service.metadata?.namespace ?? '',
          name: service.metadata?.name ?? '',
        }),
    );
  for (const id of heldBy.keys()) {
    if (!named(id)) mismatches.push(`${id} holds values without an owner record or a name`);
  }
  const uses = hostUses();
  const counts = await hostCounts();
  for (const port of new Set([...uses.keys(), ...counts.keys()]))
    if ((uses.get(port) ?? 0) !== (counts.get(port) ?? 0))
      mismatches.push(
        `host port ${port}: ${uses.get(port) ?? 0} live pods, count ${counts.get(port) ?? 0}`,
      );
  const live = podIds();
  for await (const record of clean.hostPortStore.listRecords())
    if (!live.has(record.id)) mismatches.push(`pod record ${record.id} has no live pod`);
  const { ips } = await eni.store.loadNode('node-a');
  const assigned = new Map(
    ips.flatMap((ip) => (ip.state === 'assigned' ? [[ip.pod ?? '', ip.ip] as const] : [])),
  );
  for (const [pod, holder] of eniHolders)
    if (assigned.get(`net/${pod}`) !== holder.ip)
      mismatches.push(
        `ENI ${holder.ip}: held by ${pod}, recorded for ${assigned.get(`net/${pod}`) ?? 'nobody'}`,
      );
  for (const [pod, ip] of assigned)
    if (!eniHolders.has(pod.slice('net/'.length)))
      mismatches.push(`ENI ${ip} assigned to ${pod}, which is gone`);
  const ipOwners = new Map<string, string>();
  for (const [pod, ip] of assigned) {
    const other = ipOwners.get(ip);
    if (other !== undefined) violations.push(`ENI ${ip} recorded for ${other} and ${pod}`);
    ipOwners.set(ip, pod);
  }

  return {
    operations,
    faults: faults.faults,
    violations,
    unexpected: unexpected.slice(0, 20),
    invariantChecks,
    leaks: watched.leaks,
    maxPassesToFree: watched.maxPassesToFree,
    overdueLeaks,
    leakGracePasses: grace,
    leaksWhenQuiet,
    passesWhenQuiet,
    countsEqualRecords: mismatches.length === 0,
    mismatches: mismatches.slice(0, 20),
    durationMs: Math.round(performance.now() - started),
  };
}
