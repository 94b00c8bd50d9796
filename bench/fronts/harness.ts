/**
 * Runs one system (`FrontsUnderTest`) through one scenario on simulated time, over the ELBv2 and
 * Global Accelerator fakes, and measures it from the outside:
 * - per game server, binding → reachable: the fakes hold a listener on the published NLB port
 *   forwarding to a target group whose serving target (past its registration delay) is the game
 *   server's destination, or the published
 *   accelerator port maps onto the game server's destination and that destination is allowed
 *   (and deployed); and the address is written;
 * - mutating ELBv2 and Global Accelerator calls, from the fakes' own logs;
 * - the first rule, every 100 ms: no public port (NLB listener port, accelerator port) published
 *   for two live game servers, nor published for one and leading to another's destination;
 * - orphans once the scenario's grace has passed: listeners and target groups on the pool with
 *   no live game server behind them, and accelerator destinations allowed on an address where
 *   no live game server is (cells a batch opened beside live ones are the design's, not orphans).
 */
import type { NetworkLoadBalancer } from '../../shared/fronts/elbv2.js';
import { FakeCustomRoutingAccelerator } from '../../sim/fakes/accelerator.js';
import { ELBV2_MUTATING_ACTIONS, FakeElbv2 } from '../../sim/fakes/elbv2.js';
import { seededRandom } from '../../sim/random.js';
import { percentile, round } from '../support/stats.js';
import { VirtualClock } from '../support/virtual-time.js';
import type { SimTime } from './kit.js';
import type { FrontsUnderTest, GameServer, Placement, PublishedAddress } from './seam.js';
import {
  type GameServerPlan,
  GRACEFUL_STOP_MS,
  type NodeSpec,
  nodeUp,
  type Scheduled,
  SUBNET,
  schedule,
  VPC,
} from './workload.js';

/** The simulated start (epoch ms). */
export const START = Date.parse('2026-06-01T00:00:00Z');
/** How often the harness looks at the fakes. */
export const OBSERVE_MS = 100;
/** A new listener is missing from DescribeListeners this long (exercises ELBv2's consistency). */
export const LISTENER_VISIBILITY_LAG_MS = 1_000;
/** An allow or deny takes this long to deploy (the accelerator is IN_PROGRESS meanwhile). */
export const ACCELERATOR_DEPLOY_MS = 2_000;
/** A refused CREATE is tried again after this, doubling (an assumption: a workload controller's backoff). */
export const CREATE_RETRY_MS = { first: 1_000, max: 10_000 } as const;
/** The accelerator's listener port range: room for a /24 times 100 destination ports. */
const ACCELERATOR_LISTENER_PORTS: readonly [number, number] = [10_000, 40_000];

/** The fakes and what they were set up with. */
export interface FrontsWorld {
  readonly time: SimTime;
  readonly random: () => number;
  readonly elbv2: FakeElbv2;
  readonly loadBalancers: readonly NetworkLoadBalancer[];
  readonly vpcId: string;
  readonly accelerator: FakeCustomRoutingAccelerator;
  readonly acceleratorArn: string;
  readonly acceleratorIps: readonly string[];
  readonly endpointGroupArn: string;
  readonly subnetId: string;
}

/** A system and how its accelerator's endpoint group is set up for it. */
export interface SystemFactory {
  readonly name: string;
  /** The endpoint group's destination port range the system needs. */
  readonly acceleratorPorts: readonly [number, number];
  make(world: FrontsWorld): FrontsUnderTest | Promise<FrontsUnderTest>;
}

/** Faults a scenario injects. */
export interface Faults {
  /** Every call of either service is throttled with this probability in [from, to). */
  readonly throttle?: { readonly from: number; readonly to: number; readonly rate: number };
  /** The system's controller process dies at these offsets (ms from the start). */
  readonly crashAt?: readonly number[];
  /** Listeners someone else keeps on the first NLB of the pool (ports 1–n). */
  readonly foreignListeners?: number;
}

/** One scenario: game servers, nodes, load balancers, faults, and how long to watch. */
export interface Scenario {
  readonly name: string;
  readonly plans: readonly GameServerPlan[];
  readonly nodes: readonly NodeSpec[];
  readonly loadBalancers: number;
  readonly faults?: Faults;
  /** The run ends this long after the last event (repair's grace for orphans). */
  readonly graceMs: number;
  /**
   * The host ports of NLB slots on every node (slots mode): each node's are watched until every
   * one is behind a serving listener target.
   */
  readonly seats?: readonly number[];
}

/** A node's slots: when it joined, and how long until every one of its seats served. */
export interface NodeOutcome {
  readonly name: string;
  /** ms from the start. */
  readonly readyAt: number;
  /** ms from Ready until every seat of it served; undefined when never (within the run). */
  readonly seatsServingMs?: number;
}

/** What became of one game server. */
export interface GameServerOutcome {
  readonly name: string;
  readonly front: GameServer['front'];
  readonly boundAt?: number;
  /** ms from binding to reachable; undefined when never (within the run). */
  readonly reachableMs?: number;
  /** ms from reachable to the system telling the game server so; undefined when never told. */
  readonly toldMs?: number;
  /** The system told the game server its fronts route before players could reach it. */
  readonly toldEarly?: boolean;
}

/** What one run measured. */
export interface RunResult {
  readonly system: string;
  readonly scenario: string;
  readonly outcomes: readonly GameServerOutcome[];
  readonly elbv2MutatingCalls: number;
  readonly acceleratorMutatingCalls: number;
  readonly elbv2Calls: Readonly<Record<string, number>>;
  readonly acceleratorCalls: Readonly<Record<string, number>>;
  readonly throttled: number;
  /** ELBv2 and Global Accelerator refusals other than throttling, by error code. */
  readonly refusals: Readonly<Record<string, number>>;
  /** Public ports seen held by two live game servers, with an example each. */
  readonly doublyHeld: readonly string[];
  /** What was left with no live game server behind it at the end. */
  readonly orphans: readonly string[];
  readonly simulatedSeconds: number;
  /** Each node's slots, in a scenario that has them. */
  readonly nodes?: readonly NodeOutcome[];
  /** Mutating ELBv2 calls made while game servers were being bound (first to last binding). */
  readonly elbv2CallsWhileBinding: number;
  /** Targets registered at the end: each is one deregistration still to come. */
  readonly registeredAtEnd: number;
  /** ELBv2 calls a documented bucket refused (the scenario's injected throttling not counted). */
  readonly elbv2OverBucket: number;
}

function fakeCounts(counts: ReadonlyMap<string, number>): Map<string, number> {
  return new Map(counts);
}

function delta(after: ReadonlyMap<string, number>, before: ReadonlyMap<string, number>) {
  const out: Record<string, number> = {};
  for (const [action, n] of after) {
    const d = n - (before.get(action) ?? 0);
    if (d > 0) out[action] = d;
  }
  return out;
}

async function makeWorld(
  clock: VirtualClock,
  seed: number,
  scenario: Scenario,
  acceleratorPorts: readonly [number, number],
): Promise<FrontsWorld> {
  const random = seededRandom(seed);
  const time: SimTime = { now: clock.now, sleep: clock.sleep };
  const elbv2 = new FakeElbv2({
    now: clock.now,
    random,
    listenerVisibilityLagMs: LISTENER_VISIBILITY_LAG_MS,
  });
  elbv2.addVpc(VPC.vpcId, VPC.cidr);
  const loadBalancers = Array.from({ length: scenario.loadBalancers }, (_, i) =>
    elbv2.addLoadBalancer({ name: `games-${i}`, vpcId: VPC.vpcId }),
  );
  const foreign = scenario.faults?.foreignListeners ?? 0;
  const first = loadBalancers[0];
  if (first && foreign > 0) {
    const group = await elbv2.createTargetGroup({
      name: 'someone-else',
      protocol: 'TCP',
      port: 80,
      vpcId: VPC.vpcId,
      tags: [],
    });
    for (let port = 1; port <= foreign; port++) {
      await elbv2.createListener({
        loadBalancerArn: first.arn,
        port,
        protocol: 'TCP',
        targetGroupArn: group.arn,
        tags: [],
      });
    }
  }
  const accelerator = new FakeCustomRoutingAccelerator({
    now: clock.now,
    random,
    deployDelayMs: ACCELERATOR_DEPLOY_MS,
  });
  const made = accelerator.createAccelerator({ listenerPortRange: ACCELERATOR_LISTENER_PORTS });
  const group = accelerator.addEndpointGroup({
    acceleratorArn: made.arn,
    fromPort: acceleratorPorts[0],
    toPort: acceleratorPorts[1],
    protocols: ['UDP'],
    subnets: [SUBNET],
  });
  return {
    time,
    random,
    elbv2,
    loadBalancers,
    vpcId: VPC.vpcId,
    accelerator,
    acceleratorArn: made.arn,
    acceleratorIps: made.ipAddresses,
    endpointGroupArn: group.arn,
    subnetId: SUBNET.subnetId,
  };
}

/**
 * Where a published address leads now, if anywhere: the destination `ip:port`. `serving`: only
 * where the load balancer sends traffic now (a target past its registration, healthy or failed
 * open); else wherever a registered target would take it once it serves (the first rule's view).
 */
function leadsTo(
  world: FrontsWorld,
  address: PublishedAddress,
  serving = false,
): string | undefined {
  const lb = world.loadBalancers.find((l) => l.dnsName === address.host);
  if (lb) {
    const listener = world.elbv2.listeners(lb.arn).find((l) => l.port === address.port);
    if (!listener) return undefined;
    const targets = serving
      ? world.elbv2.servingTargets(listener.targetGroupArn)
      : world.elbv2.targets(listener.targetGroupArn);
    return targets.length === 1 && targets[0] ? `${targets[0].ip}:${targets[0].port}` : undefined;
  }
  if (!world.acceleratorIps.includes(address.host)) return undefined;
  const destination = world.accelerator.destinationOf(address.port, world.acceleratorArn);
  if (!destination) return undefined;
  if (!world.accelerator.reachable(destination.subnetId, destination.address, destination.port)) {
    return undefined;
  }
  return `${destination.address}:${destination.port}`;
}

interface Live {
  readonly gs: GameServer;
  readonly scheduled: Scheduled;
  alive: boolean;
  /** When the binding landed (epoch ms). */
  boundAt?: number;
  reachableAt?: number;
  /** When the system told it its fronts route, and whether players could reach it then. */
  toldAt?: number;
  toldEarly?: boolean;
}

/** Runs `system` through `scenario`; deterministic for a seed. */
export async function runScenario(
  scenario: Scenario,
  system: SystemFactory,
  seed = 1,
): Promise<RunResult> {
  const clock = new VirtualClock(START);
  const world = await makeWorld(clock, seed, scenario, system.acceleratorPorts);
  const sut = await system.make(world);
  const elbv2Before = fakeCounts(world.elbv2.counts);
  const acceleratorBefore = fakeCounts(world.accelerator.counts);
  const throttledBefore = world.elbv2.throttled + world.accelerator.throttled;
  const overBucketBefore = world.elbv2.overBucket;
  const callsBefore = world.elbv2.calls.length;
  const acceleratorCallsBefore = world.accelerator.calls.length;
  const elbv2MutatingBefore = world.elbv2.mutatingCalls();
  const acceleratorMutatingBefore = world.accelerator.mutatingCalls();

  const scheduled = schedule(scenario.plans, scenario.nodes);
  const byPlan = new Map(scheduled.map((s) => [s.plan, s]));
  const live = new Map<string, Live>();
  const swallow = (work: Promise<void>) => void work.catch(() => undefined);
  let lastEvent = 0;
  const at = (offset: number, run: () => void) => {
    lastEvent = Math.max(lastEvent, offset);
    void clock.at(START + offset, async () => run());
  };
  const until = (offset: number) => clock.sleep(START + offset - clock.now());
  for (const plan of scenario.plans) {
    const placed = byPlan.get(plan);
    lastEvent = Math.max(lastEvent, plan.createAt, placed?.startedAt ?? 0, plan.deleteAt ?? 0);
    const entry: Live | undefined = placed && { gs: plan.gs, scheduled: placed, alive: false };
    if (entry) live.set(plan.gs.name, entry);
    // One game server's life in order: a pod exists once its CREATE is admitted, is bound once
    // it exists, and so on; the binding is measured when it lands.
    void clock.at(START + plan.createAt, async () => {
      // A refused CREATE is made again by the workload's controller after a backoff.
      for (let attempt = 0; ; attempt++) {
        const admitted = await sut.created(plan.gs).then(
          () => true,
          () => false,
        );
        if (admitted) break;
        await clock.sleep(Math.min(CREATE_RETRY_MS.first * 2 ** attempt, CREATE_RETRY_MS.max));
      }
      if (plan.neverAppears) await sut.refused(plan.gs).catch(() => undefined);
      if (!entry || !placed) return;
      await until(placed.boundAt);
      entry.alive = true;
      entry.boundAt = clock.now();
      await sut.bound(plan.gs, placed.placement).catch(() => undefined);
      await until(placed.startedAt);
      await sut.started(plan.gs, placed.placement).catch(() => undefined);
      if (plan.deleteAt === undefined) return;
      await until(plan.deleteAt);
      await sut.deleted(plan.gs).catch(() => undefined);
      await clock.sleep(GRACEFUL_STOP_MS);
      entry.alive = false;
      await sut.gone(plan.gs).catch(() => undefined);
    });
  }
  const faults = scenario.faults;
  if (faults?.throttle) {
    const { from, to, rate } = faults.throttle;
    at(from, () => {
      world.elbv2.throttleRate = rate;
      world.accelerator.throttleRate = rate;
    });
    at(to, () => {
      world.elbv2.throttleRate = 0;
      world.accelerator.throttleRate = 0;
    });
  }
  for (const crashAt of faults?.crashAt ?? []) at(crashAt, () => swallow(sut.crash()));
  for (const node of scenario.nodes) {
    at(node.readyAt ?? 0, () => sut.nodeReady?.(node));
    if (node.goneAt !== undefined) at(node.goneAt, () => sut.nodeGone?.(node));
  }
  const seatsServing = new Map<string, number>();
  const watchSeats = () => {
    const seats = scenario.seats;
    if (seats === undefined) return;
    const serving = new Set<string>();
    for (const lb of world.loadBalancers) {
      for (const listener of world.elbv2.listeners(lb.arn)) {
        for (const t of world.elbv2.servingTargets(listener.targetGroupArn)) {
          serving.add(`${t.ip}:${t.port}`);
        }
      }
    }
    const offset = clock.now() - START;
    for (const node of scenario.nodes) {
      if (seatsServing.has(node.name) || !nodeUp(node, offset)) continue;
      if (seats.every((port) => serving.has(`${node.address}:${port}`))) {
        seatsServing.set(node.name, offset - (node.readyAt ?? 0));
      }
    }
  };

  const end = START + lastEvent + scenario.graceMs;
  const doublyHeld = new Map<string, string>();
  const observe = () => {
    const now = clock.now();
    const byAddress = new Map<string, string>();
    const destinations = new Map<string, string>();
    for (const entry of live.values()) {
      if (entry.alive) {
        destinations.set(destinationKey(sut, entry.gs, entry.scheduled.placement), entry.gs.name);
      }
    }
    for (const entry of live.values()) {
      if (!entry.alive) continue;
      const address = sut.published(entry.gs);
      if (!address) continue;
      const key = `${address.host}:${address.port}`;
      const other = byAddress.get(key);
      if (other !== undefined && !doublyHeld.has(key)) {
        doublyHeld.set(key, `${key} published for ${other} and ${entry.gs.name}`);
      }
      byAddress.set(key, entry.gs.name);
      const reached = leadsTo(world, address);
      const own = destinationKey(sut, entry.gs, entry.scheduled.placement);
      if (reached === undefined) continue;
      const holder = destinations.get(reached);
      if (reached !== own && holder !== undefined && !doublyHeld.has(key)) {
        doublyHeld.set(key, `${key} published for ${entry.gs.name} leads to ${holder}`);
      }
      // Reachable once players get through: the load balancer sends them to it.
      if (entry.reachableAt === undefined && leadsTo(world, address, true) === own) {
        // An address written since the last look, onto a front that serves now, was reachable
        // from its writing (a system that writes it with its ready signal tells no one early).
        entry.reachableAt = address.at > now - OBSERVE_MS ? address.at : now;
      }
      const told = sut.toldReady?.(entry.gs);
      if (entry.toldAt === undefined && told !== undefined) {
        entry.toldAt = told;
        entry.toldEarly = entry.reachableAt === undefined || told < entry.reachableAt;
      }
    }
  };
  void (async () => {
    for (let tick = 0; clock.now() < end; tick++) {
      observe();
      // Seats are looked at once a second: their target is minutes, not milliseconds.
      if (tick % 10 === 0) watchSeats();
      await clock.sleep(OBSERVE_MS);
    }
  })();
  await clock.runUntil(end);
  observe();
  sut.stop();

  const upAtEnd = scenario.nodes.filter((node) => nodeUp(node, end - START));
  const seatsAtEnd = new Set(
    (scenario.seats ?? []).flatMap((port) => upAtEnd.map((node) => `${node.address}:${port}`)),
  );
  const orphans = findOrphans(world, sut, [...live.values()], system.acceleratorPorts, seatsAtEnd);
  const outcomes: GameServerOutcome[] = scenario.plans.map((plan) => {
    const entry = live.get(plan.gs.name);
    const boundAt = entry?.boundAt;
    return {
      name: plan.gs.name,
      front: plan.gs.front,
      ...(boundAt !== undefined ? { boundAt: boundAt - START } : {}),
      ...(entry?.reachableAt !== undefined && boundAt !== undefined
        ? { reachableMs: entry.reachableAt - boundAt }
        : {}),
      ...(entry?.toldAt !== undefined && entry.reachableAt !== undefined
        ? { toldMs: entry.toldAt - entry.reachableAt }
        : {}),
      ...(entry?.toldEarly !== undefined ? { toldEarly: entry.toldEarly } : {}),
    };
  });
  const bindings = [...live.values()].flatMap((e) => (e.boundAt === undefined ? [] : [e.boundAt]));
  const [firstBound, lastBound] = [Math.min(...bindings), Math.max(...bindings)];
  return {
    system: sut.name,
    scenario: scenario.name,
    outcomes,
    ...(scenario.seats
      ? {
          nodes: scenario.nodes.map((node) => {
            const servingMs = seatsServing.get(node.name);
            return {
              name: node.name,
              readyAt: node.readyAt ?? 0,
              ...(servingMs !== undefined ? { seatsServingMs: servingMs } : {}),
            };
          }),
        }
      : {}),
    elbv2CallsWhileBinding: world.elbv2.calls
      .slice(callsBefore)
      .filter(
        (c) => ELBV2_MUTATING_ACTIONS.has(c.action) && c.at >= firstBound && c.at <= lastBound,
      ).length,
    elbv2OverBucket: world.elbv2.overBucket - overBucketBefore,
    registeredAtEnd: world.elbv2
      .targetGroups()
      .reduce((sum, group) => sum + world.elbv2.targets(group.arn).length, 0),
    elbv2MutatingCalls: world.elbv2.mutatingCalls() - elbv2MutatingBefore,
    acceleratorMutatingCalls: world.accelerator.mutatingCalls() - acceleratorMutatingBefore,
    elbv2Calls: delta(world.elbv2.counts, elbv2Before),
    acceleratorCalls: delta(world.accelerator.counts, acceleratorBefore),
    throttled: world.elbv2.throttled + world.accelerator.throttled - throttledBefore,
    refusals: refusalsOf([
      ...world.elbv2.calls.slice(callsBefore),
      ...world.accelerator.calls.slice(acceleratorCallsBefore),
    ]),
    doublyHeld: [...doublyHeld.values()],
    orphans,
    simulatedSeconds: round((end - START) / 1000, 1),
  };
}

/** Refused calls by error code, throttling left out (counted apart). */
function refusalsOf(calls: readonly { outcome: string; code?: string }[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const call of calls) {
    if (call.outcome !== 'error' || call.code === undefined || /Throttling/.test(call.code))
      continue;
    out[call.code] = (out[call.code] ?? 0) + 1;
  }
  return out;
}

function destinationKey(sut: FrontsUnderTest, gs: GameServer, placement: Placement): string {
  const destination = sut.destination(gs, placement);
  return `${destination.ip}:${destination.port}`;
}

/**
 * What is left at the end with no live game server behind it: listeners on the pool whose
 * address no live game server published and reaches (a slot chain whose targets are all seats of
 * nodes in the cluster, or none, is kept: it is made with the node and waits for game servers),
 * target groups no kept listener forwards to (the foreign ones excepted), and allowed accelerator
 * destinations on addresses no live game server is on.
 */
function findOrphans(
  world: FrontsWorld,
  sut: FrontsUnderTest,
  entries: readonly Live[],
  acceleratorPorts: readonly [number, number],
  seats: ReadonlySet<string>,
): string[] {
  const orphans: string[] = [];
  const alive = entries.filter((e) => e.alive);
  const published = new Set(
    alive.flatMap((e) => {
      const address = sut.published(e.gs);
      return address ? [`${address.host}:${address.port}`] : [];
    }),
  );
  const liveDestinations = new Set(
    alive.map((e) => destinationKey(sut, e.gs, e.scheduled.placement)),
  );
  const kept = new Set<string>();
  for (const lb of world.loadBalancers) {
    for (const listener of world.elbv2.listeners(lb.arn)) {
      // An untagged listener is someone else's (the scenario's foreign listeners).
      if (world.elbv2.tagsOf(listener.arn)?.length === 0) {
        kept.add(listener.targetGroupArn);
        continue;
      }
      const seated =
        seats.size > 0 &&
        world.elbv2.targets(listener.targetGroupArn).every((t) => seats.has(`${t.ip}:${t.port}`));
      if (published.has(`${lb.dnsName}:${listener.port}`) || seated) {
        kept.add(listener.targetGroupArn);
      } else orphans.push(`listener ${lb.dnsName}:${listener.port}`);
    }
  }
  for (const group of world.elbv2.targetGroups()) {
    if (kept.has(group.arn)) continue;
    const targets = world.elbv2.targets(group.arn);
    if (targets.some((t) => liveDestinations.has(`${t.ip}:${t.port}`))) continue;
    orphans.push(`target group ${group.name}`);
  }
  const liveAddresses = new Set(
    alive
      .filter((e) => e.gs.front === 'accelerator')
      .map((e) => sut.destination(e.gs, e.scheduled.placement).ip),
  );
  const everyAddress = new Set(
    entries.flatMap((e) => [e.scheduled.placement.nodeAddress, e.scheduled.placement.podIp]),
  );
  for (const address of everyAddress) {
    if (liveAddresses.has(address)) continue;
    for (let port = acceleratorPorts[0]; port <= acceleratorPorts[1]; port++) {
      if (world.accelerator.destinationState(world.subnetId, address, port) === 'ALLOW') {
        orphans.push(`accelerator destination ${address}:${port}`);
      }
    }
  }
  return orphans;
}

/**
 * p50 and p99 of the reachable times (s) of the bound game servers behind `front`, and how many
 * never were reachable while they lived (within the run, or before their deletion).
 */
export function reachableStats(result: RunResult, front: GameServer['front']) {
  const behind = result.outcomes.filter((o) => o.front === front && o.boundAt !== undefined);
  const times = behind.flatMap((o) => (o.reachableMs === undefined ? [] : [o.reachableMs / 1000]));
  const never = behind.length - times.length;
  // A game server never reachable within the run counts as infinitely late.
  const samples = [...times, ...Array.from({ length: never }, () => Number.POSITIVE_INFINITY)];
  return {
    gameServers: behind.length,
    p50: round(percentile(samples, 50), 1),
    p99: round(percentile(samples, 99), 1),
    max: round(percentile(samples, 100), 1),
    never,
  };
}

/**
 * The ready signal of a system that has one, over the game servers that were reachable: p50 and
 * p99 (s) from reachable to told, how many were never told, and how many were told before
 * players could reach them (which must be none). Undefined for a system that told none.
 */
export function readySignalStats(result: RunResult) {
  const reached = result.outcomes.filter((o) => o.reachableMs !== undefined);
  const told = result.outcomes.filter((o) => o.toldEarly !== undefined);
  if (told.length === 0) return undefined;
  const delays = reached.flatMap((o) => (o.toldMs === undefined ? [] : [o.toldMs / 1000]));
  return {
    told: told.length,
    p50: round(percentile(delays, 50), 1),
    p99: round(percentile(delays, 99), 1),
    neverTold: reached.length - delays.length,
    toldEarly: told.filter((o) => o.toldEarly).length,
  };
}
