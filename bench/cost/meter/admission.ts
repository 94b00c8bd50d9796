/**
 * Admission and settle metering: the reference cluster's game servers and Services admitted
 * through the webhook (set-up), then each admission operation invoked through the admission
 * function's HTTP surface, one writer at a time and then with `racingWriters` containers at once,
 * and the settle function's looks at the tasks they queued. Every review is first passed through
 * the webhook configuration: one the apiserver would not send is metered and counted never.
 */
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import type { SQSEvent } from 'aws-lambda';
import { admit } from '../../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../../shared/admission/review.js';
import { clusterAdmission } from '../../../shared/app/lambda-admission.js';
import { decisionRecorder, observability } from '../../../shared/app/observability.js';
import type { PassContext } from '../../../shared/app/pass-context.js';
import { settleMessages, settleRunner } from '../../../shared/app/settle.js';
import { ClusterSet } from '../../../shared/clusters/cluster-set.js';
import { mutatingWebhookConfiguration } from '../../../shared/manifests/webhooks.js';
import type { SettleQueue, SettleTask } from '../../../shared/settle/task.js';
import { CapacityMeter } from '../../../shared/store/capacity.js';
import { DynamoScaleTrigger } from '../../../shared/store/dynamo-scale-trigger.js';
import { seededRandom } from '../../../sim/random.js';
import { type AdmissionCall, reachesBerth } from '../../../sim/webhook-match.js';
import { ASSUMPTIONS, CLUSTER_SHARE, type MeasuredRatios, type OperationKind } from '../fleet.js';
import { functionUrlEvent, functionUrlFunction, passFunction } from './lambda.js';
import { ReferenceObjects } from './objects.js';
import type { Sample } from './samples.js';
import type { Session } from './session.js';
import { NAMESPACE, passContextOf, SESSION_GAP_MS, TABLE } from './world.js';

/** The webhook path's secret segment, as the function URL carries it. */
const PATH_SECRET = 'costbenchsecretsegment0123456789abcdefghijklmnop';

/** The webhooks `berth manifests` installs: what decides which reviews reach berth. */
const WEBHOOKS =
  mutatingWebhookConfiguration({ url: 'https://berth.example/admission' }, 'reference').webhooks ??
  [];

/** The settle queue of the measured admission: it keeps the tasks, as SQS would. */
class RecordingSettleQueue implements SettleQueue {
  readonly tasks: SettleTask[] = [];
  async submit(task: SettleTask): Promise<void> {
    this.tasks.push(task);
  }
}

/** The game servers and Services admission left in the cluster, for the ENI phase. */
export interface AdmittedState {
  /** Live game servers, oldest first; `fresh` are those whose CREATE was metered one at a time. */
  readonly live: readonly V1Pod[];
  readonly fresh: readonly { readonly pod: V1Pod; readonly node: string }[];
  readonly settleLooksPer: MeasuredRatios['settleLooksPer'];
}

/** The review's request as the apiserver matches it against the webhooks. */
function callOf(body: unknown): AdmissionCall {
  const request = (body as { request: Record<string, unknown> }).request;
  return {
    resource: String((request.resource as { resource: string }).resource),
    ...(request.subResource ? { subResource: String(request.subResource) } : {}),
    operation: request.operation as AdmissionCall['operation'],
    namespace: String(request.namespace ?? ''),
    object: request.object,
    oldObject: request.oldObject,
  };
}

/** A pod as its graceful DELETE left it: terminating, as the kubelet's final DELETE sees it. */
function terminating(pod: V1Pod, at: number): V1Pod {
  const copy = structuredClone(pod);
  copy.metadata = {
    ...copy.metadata,
    deletionTimestamp: new Date(at) as unknown as Date,
    deletionGracePeriodSeconds: 30,
  };
  return JSON.parse(JSON.stringify(copy)) as V1Pod;
}

/** One admission container: its own runtime (caches and views), Powertools and handler. */
type Webhook = (
  body: unknown,
) => Promise<{ response: AdmissionAnswer; tasks: SettleTask[]; sample: Sample }>;

interface AdmissionAnswer {
  readonly allowed: boolean;
  readonly patch?: string;
  readonly status?: { readonly message?: string };
}

/**
 * The webhook through its HTTP surface: the reference cluster's game servers and Services
 * admitted (set-up, not metered), then pods created, bound, deleted (and the kubelet's final
 * DELETE) and Services created, updated and deleted `samples` times each, one at a time, with the
 * settle step's look at every task queued; then pod CREATEs and DELETEs and Service CREATEs and
 * DELETEs again with `racingWriters` containers at once.
 */
export async function meterAdmission(session: Session, samples: number): Promise<AdmittedState> {
  const { world, setup, log } = session;
  const { config, kube, clocks } = world;
  const queue = new RecordingSettleQueue();
  let containers = 0;
  // The scale pass left room for every game server the meter admits, as a steady day's passes
  // do: each admission pays the trigger's count as most do, and none its claim (at most one per
  // 10 s per cluster, priced with the passes it asks for: ASSUMPTIONS.triggeredPassesPerSession).
  await new DynamoScaleTrigger({
    client: world.client,
    tableName: TABLE,
    cluster: config.cluster,
  }).passed(CLUSTER_SHARE.gameServers * 2, clocks.admission);
  /**
   * When the racing round under way began (performance.now()): racing containers' clocks run on
   * from the round's simulated start as real time passes, as Lambda hosts' synchronized clocks
   * do while their requests are in flight, so a concurrent allocation's count write is later
   * than another's start (a frozen clock would make every racer's writes and starts one instant).
   */
  let roundStarted = 0;
  /** A warm admission container, as functions/admission/handler.ts wires one (less its secret read). */
  const container = (racing = false) => {
    const obs = observability('admission');
    obs.forCluster(config.cluster);
    const meter = new CapacityMeter();
    const { runtime, api } = clusterAdmission({
      config,
      dynamo: world.client,
      tableName: TABLE,
      reader: world.cluster,
      queue,
      observers: {
        onSettleLost: () => {
          throw new Error('the recording settle queue never refuses a task');
        },
        onDecision: decisionRecorder(obs.logger, obs.metrics),
      },
      now: racing
        ? () => clocks.admission + Math.floor(performance.now() - roundStarted)
        : () => clocks.admission,
      random: seededRandom(11 + containers++),
      meter,
      // The scale-up trigger's count and claim are metered with the pods' writes; the passes it
      // asks for are priced as their own operation (ASSUMPTIONS.triggeredPassesPerSession).
      scaleTrigger: {
        ask: async () => {},
        failed: (error) => {
          throw error;
        },
      },
    });
    const handler = functionUrlFunction(api(PATH_SECRET), obs);
    const webhook: Webhook = async (body) => {
      const tasksBefore = queue.tasks.length;
      const { value, sample } = await session.invoke(
        'admission',
        (context) =>
          handler(
            functionUrlEvent('POST', `/admission/${PATH_SECRET}`, { timeout: '5s' }, body),
            context,
          ),
        { meters: [meter], called: reachesBerth(WEBHOOKS, callOf(body)) },
      );
      const answer = JSON.parse(value.body) as { response: AdmissionAnswer };
      if (!answer.response.allowed) {
        throw new Error(`admission denied: ${answer.response.status?.message ?? value.body}`);
      }
      // With writers racing the slice mixes their tasks: only one-writer samples' counts are used.
      const tasks = queue.tasks.slice(tasksBefore);
      return { response: answer.response, tasks, sample: { ...sample, sqsSends: tasks.length } };
    };
    return { runtime, webhook };
  };
  const first = container();
  const webhook = first.webhook;
  // Set-up goes through the same handlers without the HTTP layer: faster, and not metered.
  const admitQuietly = async (body: unknown) => {
    const { response } = await admit(parseAdmissionReview(body), first.runtime.admission);
    if (!response.allowed) throw new Error(`set-up admission denied: ${JSON.stringify(response)}`);
    return response;
  };
  const objects = await ReferenceObjects.load(world);

  log(
    `  admitting ${CLUSTER_SHARE.gameServers} game servers and ${CLUSTER_SHARE.services} Services (set-up)...`,
  );
  const setupStarted = performance.now();
  const live: V1Pod[] = [];
  for (let i = 0; i < CLUSTER_SHARE.gameServers; i++) {
    const pod = objects.newPod();
    const response = await admitQuietly(objects.podReview('CREATE', pod));
    live.push(objects.storePod(pod, response.patch, objects.nodeFor(i)));
  }
  const services: V1Service[] = [];
  for (let i = 0; i < CLUSTER_SHARE.services; i++) {
    const service = objects.newService();
    const response = await admitQuietly(objects.serviceReview('CREATE', service));
    services.push(objects.storeService(service, response.patch));
  }
  queue.tasks.length = 0;
  setup.admissionSetupMs = Math.round(performance.now() - setupStarted);

  log(
    `  metering ${samples} each of pod CREATE, binding, DELETE, final DELETE and Service CREATE, UPDATE, DELETE...`,
  );
  const other: V1Pod = kube.addPod({
    metadata: { name: 'log-shipper-0', namespace: 'platform', labels: { app: 'log-shipper' } },
    spec: {
      nodeName: objects.nodeFor(0),
      containers: [{ name: 'shipper', image: 'example/shipper:1' }],
    },
    status: { phase: 'Running' },
  });
  const fresh: { pod: V1Pod; node: string }[] = [];
  for (let s = 0; s < samples; s++) {
    clocks.admission += SESSION_GAP_MS;
    const pod = objects.newPod();
    const node = objects.nodeFor(live.length + s);
    const created = await webhook(objects.podReview('CREATE', pod));
    session.record('pod-create', created.sample);
    const stored = objects.storePod(pod, created.response.patch, node);
    live.push(stored);
    fresh.push({ pod: stored, node });
    session.record('pod-binding', (await webhook(objects.bindingReview(stored, node))).sample);
    const otherNode = objects.nodeFor(s + 1);
    session.record(
      'pod-binding-other',
      (await webhook(objects.bindingReview(other, otherNode))).sample,
    );
    const gone = live.shift();
    if (!gone) throw new Error('no live pod to delete');
    session.record('pod-delete', (await webhook(objects.podReview('DELETE', gone))).sample);
    // The kubelet's DELETE once the containers stopped, of the pod the first one left terminating.
    const final = terminating(gone, clocks.admission);
    session.record('pod-delete-final', (await webhook(objects.podReview('DELETE', final))).sample);
    kube.pods.delete(`${NAMESPACE}/${gone.metadata?.name}`);
  }

  const settle = settleFunction(
    session,
    passContextOf(world, () => clocks.admission),
  );
  const looks = { create: 0, update: 0, delete: 0 };
  const created: V1Service[] = [];
  for (let s = 0; s < samples; s++) {
    clocks.admission += 60_000;
    const service = objects.newService();
    const answer = await webhook(objects.serviceReview('CREATE', service));
    session.record('service-create', answer.sample);
    created.push(objects.storeService(service, answer.response.patch));
    looks.create += await settle(answer.tasks);
  }
  for (let s = 0; s < samples; s++) {
    clocks.admission += 60_000;
    const index = s % services.length;
    const old = services[index];
    if (!old?.metadata) throw new Error('no Service to update');
    const changed = structuredClone(old);
    changed.metadata = {
      ...changed.metadata,
      labels: { ...old.metadata.labels, revision: `${s}` },
    };
    const answer = await webhook(objects.serviceReview('UPDATE', changed, old));
    session.record('service-update', answer.sample);
    services[index] = objects.storeService(changed, answer.response.patch);
    looks.update += await settle(answer.tasks);
  }
  for (const service of created) {
    clocks.admission += 60_000;
    const answer = await webhook(objects.serviceReview('DELETE', undefined, service));
    session.record('service-delete', answer.sample);
    kube.services.delete(`${NAMESPACE}/${service.metadata?.name}`);
    looks.delete += await settle(answer.tasks);
  }
  setup.settleLooks = looks.create + looks.update + looks.delete;

  const settleStep = settleRunner(passContextOf(world, () => clocks.admission));
  const settleQuietly = async (tasks: readonly SettleTask[]) => {
    for (const first of tasks) {
      clocks.admission = Math.max(
        clocks.admission,
        first.admittedAt + config.settle.delaySeconds * 1000,
      );
      for (let attempt = 0; attempt <= 20; attempt++) {
        const outcome = await settleStep({ ...first, attempt });
        if (outcome.recheckAfter === undefined) break;
        clocks.admission += outcome.recheckAfter * 1000;
      }
    }
  };

  // Writers racing: containers that each saw the counts a while ago, as warm Lambdas have.
  const writers = ASSUMPTIONS.racingWriters.value;
  const rounds = Math.ceil(samples / writers);
  log(`  metering ${rounds} rounds of ${writers} racing pod and Service CREATEs and DELETEs...`);
  const racers = Array.from({ length: writers }, () => container(true));
  roundStarted = performance.now();
  for (const racer of racers) {
    await admit(
      parseAdmissionReview(objects.podReview('CREATE', objects.newPod(), { dryRun: true })),
      racer.runtime.admission,
    );
  }
  const race = async (kind: OperationKind, bodies: readonly unknown[]) => {
    const answers = await Promise.all(
      bodies.map((body, i) => (racers[i % writers] ?? first).webhook(body)),
    );
    for (const answer of answers) session.record(kind, answer.sample, true);
    return answers;
  };
  for (let round = 0; round < rounds; round++) {
    clocks.admission += SESSION_GAP_MS * writers;
    roundStarted = performance.now();
    const pods = Array.from({ length: writers }, () => objects.newPod());
    const answers = await race(
      'pod-create',
      pods.map((pod) => objects.podReview('CREATE', pod)),
    );
    pods.forEach((pod, i) => {
      live.push(objects.storePod(pod, answers[i]?.response.patch, objects.nodeFor(i + round)));
    });
    const leaving = live.splice(0, writers);
    await race(
      'pod-delete',
      leaving.map((pod) => objects.podReview('DELETE', pod)),
    );
    for (const pod of leaving) kube.pods.delete(`${NAMESPACE}/${pod.metadata?.name}`);
    const fresh = Array.from({ length: writers }, () => objects.newService());
    const made = await race(
      'service-create',
      fresh.map((service) => objects.serviceReview('CREATE', service)),
    );
    const stored = fresh.map((service, i) =>
      objects.storeService(service, made[i]?.response.patch),
    );
    await race(
      'service-delete',
      stored.map((service) => objects.serviceReview('DELETE', undefined, service)),
    );
    for (const service of stored) kube.services.delete(`${NAMESPACE}/${service.metadata?.name}`);
    // Their settle looks are metered above: these run unmetered, so nothing is left releasing
    // for the repair pass to finish (which would bill its pass for this phase's work).
    await settleQuietly(queue.tasks.splice(0));
  }

  const per = (n: number) => n / Math.max(1, samples);
  return {
    live,
    fresh,
    settleLooksPer: {
      create: per(looks.create),
      update: per(looks.update),
      delete: per(looks.delete),
    },
  };
}

/** One SQS message carrying `task`, as the event source mapping delivers it. */
function sqsEvent(task: SettleTask, id: number): SQSEvent {
  return {
    Records: [{ messageId: `m-${id}`, body: JSON.stringify(task) }],
  } as unknown as SQSEvent;
}

/**
 * The settle function over its body (`settleMessages`): answers how to look at the tasks one
 * admission queued, each after the settle delay and again while a look puts it back, and how
 * many looks that took.
 */
function settleFunction(
  session: Session,
  context: PassContext,
): (tasks: readonly SettleTask[]) => Promise<number> {
  const { clocks, config } = session.world;
  const requeued: { task: SettleTask; delaySeconds: number }[] = [];
  const obs = observability('settle');
  const look = passFunction(
    'settle',
    obs,
    settleMessages({
      settles: new ClusterSet([config], () => settleRunner(context)),
      queue: { submit: async (task, delaySeconds) => void requeued.push({ task, delaySeconds }) },
      observe: obs,
      now: () => clocks.admission,
    }),
  );
  let messages = 0;
  return async (tasks) => {
    let looks = 0;
    for (const firstTask of tasks) {
      clocks.admission = Math.max(
        clocks.admission,
        firstTask.admittedAt + config.settle.delaySeconds * 1000,
      );
      let task: SettleTask | undefined = firstTask;
      while (task) {
        const event = sqsEvent(task, messages++);
        requeued.length = 0;
        const { value, sample } = await session.invoke('settle', (ctx) => look(event, ctx));
        if (value.batchItemFailures.length > 0) throw new Error('a settle look failed');
        looks++;
        const again = requeued[0];
        session.record('settle-look', { ...sample, sqsSends: requeued.length });
        task = again && again.task.attempt <= 20 ? again.task : undefined;
        if (again) clocks.admission += again.delaySeconds * 1000;
      }
    }
    return looks;
  };
}
