/**
 * ENI metering: the reference cluster's ENI pools wired as the functions wire them
 * (`eniRunner` over the EC2 fake, with the simulated day's clock and waits), each node's agent
 * given its set (set-up), then the agent's reports through the node IP function, ENI passes at
 * fleet size and instance state-change events through the ENI function's body (`eniInvocation`).
 */
import type { LambdaFunctionUrlEvent } from '@aws-lambda-powertools/parser/types';
import type { Context } from 'aws-lambda';
import {
  AGENT_PASS_MS,
  HEARTBEAT_MS,
  type LastReport,
  reportDue,
} from '../../../cni/handout/agent.js';
import { type EniRunner, eniInvocation, eniRunner } from '../../../shared/app/eni-pass.js';
import { nodeIpsApi } from '../../../shared/app/lambda-node-ips.js';
import { observability } from '../../../shared/app/observability.js';
import { ClusterSet } from '../../../shared/clusters/cluster-set.js';
import type { Ec2Network } from '../../../shared/ec2/network.js';
import type { NodeSet } from '../../../shared/eni/handout/wire.js';
import type { EniPassSummary } from '../../../shared/eni/pass.js';
import type { HttpResponse } from '../../../shared/http/exchange.js';
import { seededRandom } from '../../../sim/random.js';
import { diurnal } from '../../eni/workload.js';
import { type MeasuredRatios, REFERENCE_FLEET } from '../fleet.js';
import type { AdmittedState } from './admission.js';
import { functionUrlEvent, functionUrlFunction, lambdaContext, passFunction } from './lambda.js';
import { PASS_SAMPLES } from './passes.js';
import type { Session } from './session.js';
import { passContextOf, SESSION_GAP_MS, type World } from './world.js';

const DAY_S = 86_400;

/** The ENI domain of the reference cluster, over the EC2 fake, and what it asked for. */
export interface EniWiring {
  readonly runner: EniRunner;
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
  // A node's refill runs inside its report (`refill: true`), never queued: none is asked here.
  const nodeIpApi = runner.nodeIps({ request: async () => undefined });
  const nodeIpsObs = observability('node-ips');
  nodeIpsObs.forCluster(config.cluster);
  const obs = observability('eni');
  return {
    runner,
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

/**
 * How often one node's agent reports in a day of the reference fleet: the agent's own rule
 * (`reportDue`, one look per pass) over a node's use as sessions of the reference length arrive
 * on the daily curve (`diurnal`) and end, with a set of `setSize` addresses. Reports the use
 * moved for grow with sessions; heartbeats (nothing moved for `HEARTBEAT_MS`) with nodes.
 */
export function agentReportsPerNodeDay(setSize: number): {
  readonly watermark: number;
  readonly heartbeat: number;
  readonly sessions: number;
} {
  const random = seededRandom(29);
  const perNode = REFERENCE_FLEET.concurrentGameServers / REFERENCE_FLEET.gameNodes;
  const sessionsPerDay = REFERENCE_FLEET.gameSessionsPerDay / REFERENCE_FLEET.gameNodes;
  const meanSessionS = (perNode * DAY_S) / sessionsPerDay;
  const passS = AGENT_PASS_MS / 1000;
  let curve = 0;
  for (let t = 0; t < DAY_S; t += passS) curve += diurnal(t);
  const meanDiurnal = (curve * passS) / DAY_S;
  const ends: number[] = [];
  let last: LastReport | undefined;
  let watermark = 0;
  let heartbeat = 0;
  // A day to fill the node, then the day counted.
  for (let t = 0; t < 2 * DAY_S; t += passS) {
    const arrivals = poisson(random, ((sessionsPerDay * diurnal(t)) / meanDiurnal / DAY_S) * passS);
    for (let i = 0; i < arrivals; i++) ends.push(t - meanSessionS * Math.log(1 - random()));
    const live = ends.filter((end) => end > t);
    ends.splice(0, ends.length, ...live);
    const inUse = Math.min(setSize, live.length);
    const use = { inUse, free: setSize - inUse, total: setSize };
    if (!reportDue(last, use, t * 1000)) continue;
    const moved = last === undefined || t * 1000 - last.at < HEARTBEAT_MS;
    last = { inUse, at: t * 1000 };
    if (t < DAY_S) continue;
    if (moved) watermark++;
    else heartbeat++;
  }
  return { watermark, heartbeat, sessions: sessionsPerDay };
}

/** A Poisson draw of mean `mean` (Knuth's method: the means here are below 1). */
function poisson(random: () => number, mean: number): number {
  const limit = Math.exp(-mean);
  let count = 0;
  for (let p = random(); p > limit; p *= random()) count++;
  return count;
}

/**
 * ENI pools on every node, each node's agent given its set (set-up), then `samples` node
 * reports through the node IP function, each of a node whose use moved by a session; then
 * passes and instance events. ADD and DEL call berth for nothing: the node hands its addresses
 * out itself, so what a session costs here is its share of the agent's reports.
 */
export async function meterEni(
  session: Session,
  samples: number,
  admitted: AdmittedState,
): Promise<Pick<MeasuredRatios, 'reportsPerSession' | 'heartbeatsPerNodeDay'>> {
  const { world, setup, log } = session;
  const { clocks } = world;
  const eni = wireEni(world);

  log('  creating ENI pools and giving each node its set (set-up)...');
  const started = performance.now();
  const bootstrap = await createPools(eni, world);
  setup.bootstrapPasses = bootstrap.passes;
  setup.poolsCreated = bootstrap.poolsCreated;
  const path = (node: string) => `/v1/nodes/${node}/addresses`;
  const sets = new Map<string, NodeSet>();
  const leased = new Map<string, { ip: string; since: number }[]>();
  for (const node of world.nodes) {
    const answer = await eni.nodeIps(
      functionUrlEvent('GET', path(node.name), {}, undefined),
      lambdaContext('node-ips', session.functions['node-ips'].memoryMb),
    );
    sets.set(node.name, JSON.parse(answer.body ?? '{}') as NodeSet);
    leased.set(node.name, []);
  }
  // Each live game server holds an address of its node's set, as its ADD leased it.
  for (const pod of admitted.live) {
    const node = pod.spec?.nodeName ?? world.nodes[0]?.name ?? '';
    const held = leased.get(node) ?? [];
    const free = sets.get(node)?.addresses.filter((a) => a.state === 'free') ?? [];
    const address = free[held.length];
    if (address) held.push({ ip: address.ip, since: clocks.eni });
  }
  setup.eniSetupMs = Math.round(performance.now() - started);
  setup.addressesAssigned = [...leased.values()].reduce((n, held) => n + held.length, 0);

  log(`  metering ${samples} node agent reports...`);
  for (const [i, { node }] of admitted.fresh.slice(0, samples).entries()) {
    clocks.eni += SESSION_GAP_MS;
    const report = { leased: leased.get(node) ?? [], rested: [], returned: [], refill: false };
    const { value, sample } = await session.invoke('node-ips', (context) =>
      eni.nodeIps(functionUrlEvent('POST', path(node), {}, report), context),
    );
    if (value.statusCode !== 200) {
      throw new Error(`node report answered ${value.statusCode} ${value.body}`);
    }
    // The same request either way: alternate samples price the two counts.
    session.record(i % 2 === 0 ? 'eni-node-report' : 'eni-node-heartbeat', sample);
  }
  const setSizes = [...sets.values()].map((set) => set.addresses.length);
  const setSize = Math.round(setSizes.reduce((a, b) => a + b, 0) / Math.max(1, setSizes.length));
  const day = agentReportsPerNodeDay(setSize);
  setup.agentSetSize = setSize;

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
    reportsPerSession: day.watermark / day.sessions,
    heartbeatsPerNodeDay: day.heartbeat,
  };
}
