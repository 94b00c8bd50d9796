/**
 * ENI metering: the reference cluster's ENI pools wired over the EC2 fake and the real rate
 * budget, every admitted game server given its address (set-up), then assigns and releases
 * through the node IP function, the background refills they ask for, ENI passes at fleet size
 * and instance state-change events through the ENI function.
 */
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import type { V1Pod } from '@kubernetes/client-node';
import type { Context } from 'aws-lambda';
import { nodeIpFault } from '../../../shared/app/eni-pass.js';
import { observability } from '../../../shared/app/observability.js';
import { recordEniPass, recordRefill } from '../../../shared/app/pass-records.js';
import { BudgetedEc2Network } from '../../../shared/ec2/rate-budget.js';
import { type EniDeps, eniDeps } from '../../../shared/eni/deps.js';
import { PoolBusyError } from '../../../shared/eni/errors.js';
import { handleInstanceStateChange, runEniPass } from '../../../shared/eni/pass.js';
import { refillAhead } from '../../../shared/eni/refill.js';
import { handleAssignIp, handleLookUpIp, handleReleaseIp } from '../../../shared/eni/service.js';
import { createHttpApi, type HttpResponse } from '../../../shared/http/api.js';
import { CapacityMeter } from '../../../shared/store/capacity.js';
import { DynamoEniStore } from '../../../shared/store/dynamo-eni-store.js';
import { DynamoRateBudget } from '../../../shared/store/dynamo-rate-budget.js';
import { seededRandom } from '../../../sim/random.js';
import type { MeasuredRatios } from '../fleet.js';
import type { AdmittedState } from './admission.js';
import { functionUrlEvent, functionUrlFunction, passFunction } from './lambda.js';
import { PASS_SAMPLES } from './passes.js';
import type { Session } from './session.js';
import { NAMESPACE, SESSION_GAP_MS, TABLE, type World } from './world.js';

/** Attempts of one assign before the set-up gives up (the CNI plugin retries a 503). */
const ASSIGN_ATTEMPTS = 20;

/** The ENI domain of the reference cluster, over the EC2 fake, and what it asked for. */
interface EniWiring {
  readonly deps: EniDeps;
  /** The adapters' own meters (pools and the EC2 rate budget). */
  readonly meters: readonly CapacityMeter[];
  /** Nodes whose background refill the node IP API asked for, not yet run. */
  readonly refillsAsked: string[];
  /** An assign straight through the domain (set-up, not metered). */
  readonly assign: (node: string, body: unknown) => Promise<{ readonly ip: string }>;
  /** Node IP API requests through the node-ips function's chain. */
  readonly nodeIps: (event: LambdaFunctionUrlEvent, context: Context) => Promise<HttpResponse>;
  /** The ENI function (functions/eni/handler.ts): a refill, an instance event or a pass. */
  readonly eniFunction: (
    event: { readonly refill?: string; readonly instanceId?: string },
    context: Context,
  ) => Promise<string>;
}

/** Wires the ENI pools as shared/app/eni-pass.ts does, with the EC2 fake for EC2. */
function wireEni(world: World): EniWiring {
  const { clocks, config } = world;
  const eniMeter = new CapacityMeter();
  const budgetMeter = new CapacityMeter();
  const stores = { client: world.client, tableName: TABLE, cluster: config.cluster };
  const sleep = async (ms: number) => {
    clocks.eni += ms;
  };
  const random = seededRandom(23);
  const deps = eniDeps({
    store: new DynamoEniStore({ ...stores, meter: eniMeter }),
    ec2: new BudgetedEc2Network(world.ec2, {
      budget: new DynamoRateBudget({
        ...stores,
        scope: 'us-east-1',
        now: () => clocks.eni,
        meter: budgetMeter,
      }),
      now: () => clocks.eni,
      sleep,
      random,
      onCall: () => {
        world.ec2Calls++;
      },
    }),
    cluster: world.cluster,
    clusterName: config.cluster,
    config: config.eni,
    now: () => clocks.eni,
    sleep,
    random,
    holder: 'berth-cost',
  });
  const refillsAsked: string[] = [];
  const assignDeps = {
    ...deps,
    refills: { request: async (node: string) => void refillsAsked.push(node) },
  };
  const nodeIpsObs = observability('node-ips');
  nodeIpsObs.forCluster(config.cluster);
  // Mirrors functions/node-ips/handler.ts.
  const api = createHttpApi({
    healthy: async () => true,
    // Mirrors EniRunner.nodeIps in shared/app/eni-pass.ts, over the EC2 fake.
    nodeIps: {
      assign: (node, body) => handleAssignIp(assignDeps, node, body),
      release: (node, ip, holder) => handleReleaseIp(deps, node, ip, holder),
      lookUp: (node, holder) => handleLookUpIp(deps, node, holder),
    },
    classify: nodeIpFault,
  });
  const nodeIps = functionUrlFunction(api, nodeIpsObs);
  const obs = observability('eni');
  obs.forCluster(config.cluster);
  const eniFunction = passFunction(
    'eni',
    obs,
    async (event: { refill?: string; instanceId?: string }) => {
      // The body of functions/eni/handler.ts, with the same records.
      if (event.refill) {
        const { outcome, failures } = await refillAhead(deps, event.refill);
        recordRefill(obs, event.refill, outcome, failures);
        return `refill ${outcome}`;
      }
      const summary = event.instanceId
        ? await handleInstanceStateChange(deps, { instanceId: event.instanceId, state: 'running' })
        : await runEniPass(deps, {});
      recordEniPass(obs, summary);
      return `pools ${summary.pools}, assigned ${summary.ipsAssigned}, unassigned ${summary.ipsUnassigned}, ENIs created ${summary.enisCreated}, idle ${summary.idleIps}, in use ${summary.assignedIps}, failures ${summary.failures.length}`;
    },
  );
  return {
    deps,
    meters: [eniMeter, budgetMeter],
    refillsAsked,
    assign: (node, body) => handleAssignIp(assignDeps, node, body),
    nodeIps,
    eniFunction,
  };
}

/** The CNI plugin's sandbox id for a pod (CNI_CONTAINERID). */
const containerOf = (pod: V1Pod) => `c-${pod.metadata?.uid ?? pod.metadata?.name}`;

/**
 * ENI pools on every node (set-up: passes a minute apart until every pool exists, then every
 * game server admitted so far given its address), then `samples` assigns and releases through
 * the node IP API with the background refills they ask for, then passes and instance events.
 */
export async function meterEni(
  session: Session,
  samples: number,
  admitted: AdmittedState,
): Promise<Pick<MeasuredRatios, 'refillsPerAssign' | 'assignsPerPod'>> {
  const { world, setup, log } = session;
  const { clocks } = world;
  const eni = wireEni(world);
  const runRefills = async (metered: boolean) => {
    while (eni.refillsAsked.length > 0) {
      const node = eni.refillsAsked.shift() as string;
      if (!metered) {
        await refillAhead(eni.deps, node);
        continue;
      }
      const { sample } = await session.invoke(
        'eni',
        (context) => eni.eniFunction({ refill: node }, context),
        eni.meters,
      );
      session.record('eni-refill', sample);
    }
  };

  log('  creating ENI pools and assigning the game servers their addresses (set-up)...');
  const started = performance.now();
  // 100 new nodes at once spend the EC2 budget: passes a minute apart, as scheduled, until one
  // finishes without a failure (a pool whose ENI the budget refused waits for the next pass).
  let poolsCreated = 0;
  for (let pass = 1; pass <= 10; pass++) {
    const summary = await runEniPass(eni.deps, {});
    poolsCreated += summary.poolsCreated;
    setup.bootstrapPasses = pass;
    if (summary.failures.length === 0 && !summary.budgetSpent) break;
    clocks.eni += 60_000;
  }
  setup.poolsCreated = poolsCreated;
  const addressOf = new Map<string, { node: string; ip: string }>();
  let setupRetries = 0;
  for (const pod of admitted.live.slice(0, admitted.live.length - admitted.fresh.length)) {
    clocks.eni += 200;
    const node = pod.spec?.nodeName ?? world.nodes[0]?.name ?? '';
    // As the CNI plugin does: a pool with no address ready yet is asked again shortly.
    for (let attempt = 1; ; attempt++) {
      try {
        const answer = await eni.assign(node, {
          namespace: NAMESPACE,
          pod: pod.metadata?.name,
          containerId: containerOf(pod),
        });
        addressOf.set(pod.metadata?.name ?? '', { node, ip: answer.ip });
        break;
      } catch (error) {
        if (!(error instanceof PoolBusyError) || attempt >= ASSIGN_ATTEMPTS) throw error;
        setupRetries++;
        clocks.eni += error.retryAfterMs;
      } finally {
        await runRefills(false);
      }
    }
  }
  setup.setupAssignRetries = setupRetries;
  clocks.eni += 120_000;
  await runEniPass(eni.deps, {});
  setup.eniSetupMs = Math.round(performance.now() - started);
  setup.addressesAssigned = addressOf.size;

  log(`  metering ${samples} each of ENI assign and release...`);
  const leaving = [...addressOf.keys()];
  let assigns = 0;
  let retries = 0;
  for (const { pod, node } of admitted.fresh) {
    clocks.eni += SESSION_GAP_MS;
    const body = { namespace: NAMESPACE, pod: pod.metadata?.name, containerId: containerOf(pod) };
    // Every attempt is an invocation the fleet pays for: the CNI plugin retries a 503.
    for (let attempt = 1; ; attempt++) {
      const { value, sample } = await session.invoke(
        'node-ips',
        (context) =>
          eni.nodeIps(functionUrlEvent('POST', `/v1/nodes/${node}/ips`, {}, body), context),
        eni.meters,
      );
      session.record('eni-assign', sample);
      assigns++;
      await runRefills(true);
      if (value.statusCode === 200) break;
      if (value.statusCode !== 503 || attempt >= ASSIGN_ATTEMPTS) {
        throw new Error(`assign answered ${value.statusCode} ${value.body}`);
      }
      retries++;
      clocks.eni += 1_000;
    }
    const name = leaving.shift();
    const held = name === undefined ? undefined : addressOf.get(name);
    if (name === undefined || !held) throw new Error('no address to release');
    const leavingPod = world.kube.pods.get(`${NAMESPACE}/${name}`);
    const query = {
      namespace: NAMESPACE,
      pod: name,
      ...(leavingPod ? { containerId: containerOf(leavingPod) } : {}),
    };
    const released = await session.invoke(
      'node-ips',
      (context) =>
        eni.nodeIps(
          functionUrlEvent('DELETE', `/v1/nodes/${held.node}/ips/${held.ip}`, query, undefined),
          context,
        ),
      eni.meters,
    );
    if (released.value.statusCode !== 200) {
      throw new Error(`release answered ${released.value.statusCode} ${released.value.body}`);
    }
    session.record('eni-release', released.sample);
  }
  setup.measuredAssignRetries = retries;
  const refills = session.results['eni-refill']?.length ?? 0;
  if (refills === 0) {
    // No assign asked for one: price one anyway, for the report (the month counts none).
    eni.refillsAsked.push(admitted.fresh[0]?.node ?? world.nodes[0]?.name ?? '');
    await runRefills(true);
  }

  log(`  metering ${PASS_SAMPLES} ENI passes over ${world.nodes.length} pools...`);
  for (let pass = 1; pass <= PASS_SAMPLES; pass++) {
    clocks.eni += 60_000;
    const { value, sample } = await session.invoke(
      'eni',
      (context) => eni.eniFunction({}, context),
      eni.meters,
    );
    session.recordPass('eni-pass', pass, sample, value);
  }
  for (let event = 1; event <= PASS_SAMPLES; event++) {
    clocks.eni += 1_000;
    const instanceId = world.nodes[event]?.instanceId;
    const { sample } = await session.invoke(
      'eni',
      (context) => eni.eniFunction({ ...(instanceId ? { instanceId } : {}) }, context),
      eni.meters,
    );
    session.record('eni-instance-event', sample);
  }
  setup.eniMeterMs = Math.round(performance.now() - started);
  return {
    refillsPerAssign: assigns === 0 ? 0 : refills / assigns,
    assignsPerPod: assigns / Math.max(1, admitted.fresh.length),
  };
}
