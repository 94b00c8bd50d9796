/**
 * ENI metering: the reference cluster's ENI pools wired as the functions wire them
 * (`eniRunner` over the EC2 fake, with the simulated day's clock and waits), every admitted game
 * server given its address (set-up), then assigns, releases and the repeated DELs' look-ups
 * through the node IP function, the background refills they ask for, ENI passes at fleet size
 * and instance state-change events through the ENI function's body (`eniInvocation`).
 */
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import type { V1Pod } from '@kubernetes/client-node';
import type { Context } from 'aws-lambda';
import { type EniRunner, eniInvocation, eniRunner } from '../../../shared/app/eni-pass.js';
import { nodeIpsApi } from '../../../shared/app/lambda-node-ips.js';
import { observability } from '../../../shared/app/observability.js';
import { ClusterSet } from '../../../shared/clusters/cluster-set.js';
import type { Ec2Network } from '../../../shared/ec2/network.js';
import { PoolBusyError } from '../../../shared/eni/errors.js';
import type { EniPassSummary } from '../../../shared/eni/pass.js';
import type { HttpResponse } from '../../../shared/http/exchange.js';
import { seededRandom } from '../../../sim/random.js';
import type { MeasuredRatios } from '../fleet.js';
import type { AdmittedState } from './admission.js';
import { functionUrlEvent, functionUrlFunction, passFunction } from './lambda.js';
import { PASS_SAMPLES } from './passes.js';
import type { Session } from './session.js';
import { NAMESPACE, passContextOf, SESSION_GAP_MS, type World } from './world.js';

/** Attempts of one assign before the set-up gives up (the CNI plugin retries a 503). */
const ASSIGN_ATTEMPTS = 20;

/** The ENI domain of the reference cluster, over the EC2 fake, and what it asked for. */
export interface EniWiring {
  readonly runner: EniRunner;
  /** Nodes whose background refill the node IP API asked for, not yet run. */
  readonly refillsAsked: string[];
  /** An assign straight through the domain (set-up, not metered). */
  readonly assign: (node: string, body: unknown) => Promise<{ readonly ip: string }>;
  /** Node IP API requests through the node-ips function's chain. */
  readonly nodeIps: (event: LambdaFunctionUrlEvent, context: Context) => Promise<HttpResponse>;
  /** The ENI function: a refill, an instance event or a pass. */
  readonly eniFunction: (event: unknown, context: Context) => Promise<unknown>;
}

/** `network` with every call counted in `world.ec2Calls` (each one a round trip in AWS). */
function countedCalls(network: Ec2Network, world: World): Ec2Network {
  return new Proxy(network, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        world.ec2Calls++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** Wires the ENI pools as the ENI and node IP functions do, with the EC2 fake for EC2. */
export function wireEni(world: World): EniWiring {
  const { clocks, config } = world;
  const context = passContextOf(world, () => clocks.eni);
  const runner = eniRunner(
    context,
    {
      network: countedCalls(world.ec2, world),
      scope: 'us-east-1',
      instanceTypes: new Map(),
    },
    {
      // The simulated day waits on its own clock.
      sleep: async (ms) => {
        clocks.eni += ms;
      },
      random: seededRandom(23),
    },
  );
  const refillsAsked: string[] = [];
  const refills = { request: async (node: string) => void refillsAsked.push(node) };
  const nodeIpApi = runner.nodeIps(refills);
  const nodeIpsObs = observability('node-ips');
  nodeIpsObs.forCluster(config.cluster);
  const obs = observability('eni');
  return {
    runner,
    refillsAsked,
    assign: async (node, body) => (await nodeIpApi.assign(node, body)) as { readonly ip: string },
    nodeIps: functionUrlFunction(nodeIpsApi(nodeIpApi, nodeIpsObs), nodeIpsObs),
    eniFunction: passFunction(
      'eni',
      obs,
      eniInvocation(new ClusterSet([config], () => runner), obs, () => clocks.eni),
    ),
  };
}

/** What an ENI pass did, for the report. */
function passDetail(summary: EniPassSummary): string {
  return `pools ${summary.pools}, assigned ${summary.ipsAssigned}, unassigned ${summary.ipsUnassigned}, ENIs created ${summary.enisCreated}, idle ${summary.idleIps}, in use ${summary.assignedIps}, failures ${summary.failures.length}`;
}

/**
 * A pool on every node of `world`: passes a minute apart, as scheduled, until one finishes
 * without a failure (new nodes at once spend the EC2 budget, and a pool whose ENI the budget
 * refused waits for the next pass).
 */
export async function createPools(
  eni: EniWiring,
  world: World,
): Promise<{ readonly passes: number; readonly poolsCreated: number }> {
  let poolsCreated = 0;
  for (let pass = 1; pass <= 10; pass++) {
    const summary = await eni.runner.pass();
    poolsCreated += summary.poolsCreated;
    if (summary.failures.length === 0 && !summary.budgetSpent)
      return { passes: pass, poolsCreated };
    world.clocks.eni += 60_000;
  }
  throw new Error(`ENI pools of ${world.config.cluster} still failing after 10 passes`);
}

/** `PASS_SAMPLES` scheduled ENI passes a minute apart, through the ENI function's body. */
export async function meterEniPasses(session: Session, eni: EniWiring): Promise<void> {
  const { world, log } = session;
  log(`  metering ${PASS_SAMPLES} ENI passes over ${world.nodes.length} pools...`);
  for (let pass = 1; pass <= PASS_SAMPLES; pass++) {
    world.clocks.eni += 60_000;
    const { value, sample } = await session.invoke('eni', (context) =>
      eni.eniFunction({}, context),
    );
    session.recordPass('eni-pass', pass, sample, passDetail(value as EniPassSummary));
  }
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
        await eni.runner.refill(node);
        continue;
      }
      const { sample } = await session.invoke('eni', (context) =>
        eni.eniFunction({ kind: 'refill-pool', node }, context),
      );
      session.record('eni-refill', sample);
    }
  };

  log('  creating ENI pools and assigning the game servers their addresses (set-up)...');
  const started = performance.now();
  const bootstrap = await createPools(eni, world);
  setup.bootstrapPasses = bootstrap.passes;
  setup.poolsCreated = bootstrap.poolsCreated;
  const addressOf = new Map<string, { node: string; ip: string }>();
  let setupRetries = 0;
  // Every live game server but the metered ones, whose assigns are metered below.
  const metered = new Set(admitted.fresh.map(({ pod }) => pod.metadata?.name));
  for (const pod of admitted.live.filter((p) => !metered.has(p.metadata?.name))) {
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
  await eni.runner.pass();
  setup.eniSetupMs = Math.round(performance.now() - started);
  setup.addressesAssigned = addressOf.size;

  log(`  metering ${samples} each of ENI assign and release...`);
  const leaving = [...addressOf.keys()];
  let assigns = 0;
  let retries = 0;
  for (const { pod, node } of admitted.fresh) {
    clocks.eni += SESSION_GAP_MS;
    const body = { namespace: NAMESPACE, pod: pod.metadata?.name, containerId: containerOf(pod) };
    // Every attempt is an invocation the fleet pays for: the CNI plugin retries a 429 or 503.
    for (let attempt = 1; ; attempt++) {
      const { value, sample } = await session.invoke('node-ips', (context) =>
        eni.nodeIps(functionUrlEvent('POST', `/v1/nodes/${node}/ips`, {}, body), context),
      );
      session.record('eni-assign', sample);
      assigns++;
      await runRefills(true);
      if (value.statusCode === 200) break;
      if (![429, 503].includes(value.statusCode) || attempt >= ASSIGN_ATTEMPTS) {
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
    const released = await session.invoke('node-ips', (context) =>
      eni.nodeIps(
        functionUrlEvent('DELETE', `/v1/nodes/${held.node}/ips/${held.ip}`, query, undefined),
        context,
      ),
    );
    if (released.value.statusCode !== 200) {
      throw new Error(`release answered ${released.value.statusCode} ${released.value.body}`);
    }
    session.record('eni-release', released.sample);
    // kubelet's next DEL of the sandbox: no cached result left, so the plugin looks the pod up.
    const repeated = await session.invoke('node-ips', (context) =>
      eni.nodeIps(functionUrlEvent('GET', `/v1/nodes/${held.node}/ips`, query, undefined), context),
    );
    if (repeated.value.statusCode !== 404) {
      throw new Error(`repeated DEL's look-up answered ${repeated.value.statusCode}`);
    }
    session.record('eni-release-repeat', repeated.sample);
  }
  setup.measuredAssignRetries = retries;
  const refills = session.results['eni-refill']?.length ?? 0;
  if (refills === 0) {
    // No assign asked for one: price one anyway, for the report (the month counts none).
    eni.refillsAsked.push(admitted.fresh[0]?.node ?? world.nodes[0]?.name ?? '');
    await runRefills(true);
  }

  await meterEniPasses(session, eni);
  for (let n = 1; n <= PASS_SAMPLES; n++) {
    clocks.eni += 1_000;
    const instanceId = world.nodes[n]?.instanceId;
    const event = {
      source: 'aws.ec2',
      'detail-type': 'EC2 Instance State-change Notification',
      detail: { 'instance-id': instanceId, state: 'running' },
    };
    const { sample } = await session.invoke('eni', (context) => eni.eniFunction(event, context));
    session.record('eni-instance-event', sample);
  }
  setup.eniMeterMs = Math.round(performance.now() - started);
  return {
    refillsPerAssign: assigns === 0 ? 0 : refills / assigns,
    assignsPerPod: assigns / Math.max(1, admitted.fresh.length),
  };
}
