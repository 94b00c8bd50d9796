/**
 * Admission and settle metering: the reference cluster's game servers and Services admitted
 * through the webhook (set-up), then each admission operation invoked through the admission
 * function's HTTP surface, and the settle function's looks at the tasks they queued.
 */
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { admit } from '../../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../../shared/admission/review.js';
import { decisionRecorder, observability } from '../../../shared/app/observability.js';
import type { PassContext } from '../../../shared/app/pass-context.js';
import { recordSettle } from '../../../shared/app/pass-records.js';
import { createRuntime } from '../../../shared/app/runtime.js';
import { settleRunner } from '../../../shared/app/settle.js';
import { createHttpApi } from '../../../shared/http/api.js';
import { QueueSettler, type SettleQueue } from '../../../shared/settle/settler.js';
import type { SettleTask } from '../../../shared/settle/task.js';
import { seededRandom } from '../../../sim/random.js';
import { CLUSTER_SHARE, type MeasuredRatios } from '../fleet.js';
import { functionUrlEvent, functionUrlFunction, passFunction } from './lambda.js';
import { ReferenceObjects } from './objects.js';
import type { Session } from './session.js';
import { NAMESPACE, passContextOf, SESSION_GAP_MS, TABLE } from './world.js';

/** The webhook path's secret segment, as the function URL carries it. */
const PATH_SECRET = 'costbenchsecretsegment0123456789abcdefghijklmnop';

/** The settle queue of the measured admission: it keeps the tasks, as SQS would. */
class RecordingSettleQueue implements SettleQueue {
  readonly tasks: SettleTask[] = [];
  async submit(task: SettleTask): Promise<void> {
    this.tasks.push(task);
  }
}

/** The game servers and Services admission left in the cluster, for the ENI phase. */
export interface AdmittedState {
  /** Live game servers, oldest first; the last `fresh` ones were admitted while metered. */
  readonly live: readonly V1Pod[];
  readonly fresh: readonly { readonly pod: V1Pod; readonly node: string }[];
  readonly settleLooksPer: MeasuredRatios['settleLooksPer'];
}

/**
 * The webhook through its HTTP surface: the reference cluster's game servers and Services
 * admitted (set-up, not metered), then pods created, bound and deleted and Services created,
 * updated and deleted `samples` times each, and the settle step's look at every task queued.
 */
export async function meterAdmission(session: Session, samples: number): Promise<AdmittedState> {
  const { world, setup, log } = session;
  const { config, kube, clocks } = world;
  const queue = new RecordingSettleQueue();
  const runtime = createRuntime({
    config,
    dynamo: world.client,
    tableName: TABLE,
    clusterApi: world.cluster,
    settler: () =>
      new QueueSettler(queue, config.settle.delaySeconds, () => {
        throw new Error('the recording settle queue never refuses a task');
      }),
    now: () => clocks.admission,
    random: seededRandom(11),
  });
  const obs = observability('admission');
  obs.forCluster(config.cluster);
  // Mirrors functions/admission/handler.ts, with the runtime's settle queue recorded.
  const api = createHttpApi({
    admission: runtime.admission,
    healthy: () => runtime.healthy(),
    status: () => runtime.status(),
    pathSecret: PATH_SECRET,
    onDecision: decisionRecorder(obs.logger, obs.metrics),
  });
  const handler = functionUrlFunction(api, obs);
  const meters = [runtime.allocationStore.meter, runtime.hostPortStore.meter];
  const webhook = async (body: unknown) => {
    const tasksBefore = queue.tasks.length;
    const { value, sample } = await session.invoke(
      'admission',
      (context) =>
        handler(
          functionUrlEvent('POST', `/admission/${PATH_SECRET}`, { timeout: '5s' }, body),
          context,
        ),
      meters,
    );
    const answer = JSON.parse(value.body) as {
      response: { allowed: boolean; patch?: string; status?: { message?: string } };
    };
    if (!answer.response.allowed) {
      throw new Error(`admission denied: ${answer.response.status?.message ?? value.body}`);
    }
    const tasks = queue.tasks.slice(tasksBefore);
    return { response: answer.response, tasks, sample: { ...sample, sqsSends: tasks.length } };
  };
  // Set-up goes through the same handlers without the HTTP layer: faster, and not metered.
  const admitQuietly = async (body: unknown) => {
    const { response } = await admit(parseAdmissionReview(body), runtime.admission);
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
    `  metering ${samples} each of pod CREATE, binding, DELETE and Service CREATE, UPDATE, DELETE...`,
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

/**
 * The settle function (functions/settle/handler.ts) over the real settle wiring: answers how to
 * look at the tasks one admission queued, each after the settle delay and again while a look
 * asks for another, and how many looks that took.
 */
function settleFunction(
  session: Session,
  context: PassContext,
): (tasks: readonly SettleTask[]) => Promise<number> {
  const { clocks, config } = session.world;
  const settle = settleRunner(context);
  const obs = observability('settle');
  obs.forCluster(config.cluster);
  const look = passFunction('settle', obs, async (task: SettleTask) => {
    // The body of functions/settle/handler.ts for one SQS record, with the same records.
    const outcome = await settle(task);
    recordSettle(obs, task, outcome, clocks.admission - task.admittedAt);
    return outcome;
  });
  return async (tasks) => {
    let looks = 0;
    for (const first of tasks) {
      clocks.admission = Math.max(
        clocks.admission,
        first.admittedAt + config.settle.delaySeconds * 1000,
      );
      let task: SettleTask | undefined = first;
      while (task) {
        const current: SettleTask = task;
        const { value: outcome, sample } = await session.invoke('settle', (ctx) =>
          look(current, ctx),
        );
        looks++;
        const again = outcome.recheckAfter !== undefined && current.attempt < 20;
        session.record('settle-look', { ...sample, sqsSends: again ? 1 : 0 });
        task = again ? { ...current, attempt: current.attempt + 1 } : undefined;
        if (again) clocks.admission += (outcome.recheckAfter ?? 0) * 1000;
      }
    }
    return looks;
  };
}
