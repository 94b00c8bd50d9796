/**
 * The fronts benchmark's cluster and game servers: a few nodes in one subnet, game servers
 * created in a burst (all at once) or over a steady stretch, bound by a scheduler model (kube-
 * scheduler's packing, one scheduling cycle at a time) and started by the kubelet a little later.
 * Every system runs on exactly these events.
 */
import type { FrontKind } from '../../shared/fronts/model.js';
import { seededRandom } from '../../sim/random.js';
import { scheduleOnto } from '../../sim/scheduler.js';
import type { GameServer, Placement } from './seam.js';

/** The subnet every node and pod is in (one endpoint subnet of the accelerator). */
export const SUBNET = { subnetId: 'subnet-a', cidr: '10.0.1.0/24' } as const;
/** The VPC of the subnet and of the load balancers. */
export const VPC = { vpcId: 'vpc-fronts', cidr: '10.0.0.0/16' } as const;
/** Nodes of 8 vCPUs; a game server asks for half a vCPU. */
export const NODE_CPU_MILLIS = 8_000;
export const GAME_SERVER_CPU_MILLIS = 500;
/** The port a game server's container listens on. */
export const CONTAINER_PORT = 7777;
/** Host port ranges berth hands out per node: the accelerator's, and the others. */
export const ACCELERATOR_HOST_PORTS = { from: 7000, to: 7099 } as const;
export const NLB_HOST_PORTS = { from: 8000, to: 8099 } as const;
/**
 * berth's NLB slots in slots mode: the first 16 ports of the NLB range, as many as a node holds
 * game servers (the scheduler hands each the lowest free port of its range).
 */
export const SLOT_HOST_PORTS = {
  from: 8000,
  to: 8000 + NODE_CPU_MILLIS / GAME_SERVER_CPU_MILLIS - 1,
} as const;
/**
 * One scheduling cycle per pod, bound one after another (an assumption: kube-scheduler schedules
 * a pod at a time; a cycle for a small cluster is milliseconds).
 */
export const SCHEDULE_CYCLE_MS = 10;
/** From binding to a running pod with its VPC CNI address: sandbox and CNI ADD (assumed 1–3 s). */
export const POD_START_MS = { min: 1_000, max: 3_000 } as const;
/** Pods' VPC CNI addresses: hosts .100 to .254 of the subnet. */
const POD_IPS = { from: 100, to: 254 } as const;
/** A released pod address is handed out again only after this (the VPC CNI's IP cooldown, 30 s). */
const POD_IP_COOLDOWN_MS = 30_000;
/** From a DELETE to the pod gone from the API (a game server's short graceful stop). */
export const GRACEFUL_STOP_MS = 5_000;
export const SEED = 20261127;

/** A node of the cluster. */
export interface NodeSpec {
  readonly name: string;
  readonly address: string;
  /** When it joins, Ready (ms from the start; from the start when absent). */
  readonly readyAt?: number;
  /** When it leaves the cluster, its Node deleted (ms from the start; never when absent). */
  readonly goneAt?: number;
}

/** Whether the node is in the cluster, Ready, at `at` (ms from the start). */
export function nodeUp(node: NodeSpec, at: number): boolean {
  return (node.readyAt ?? 0) <= at && at < (node.goneAt ?? Number.POSITIVE_INFINITY);
}

/** One game server's life: created, maybe never persisted, maybe deleted. */
export interface GameServerPlan {
  readonly gs: GameServer;
  readonly createAt: number;
  /** Its CREATE was admitted but another webhook refused it: the pod never appears. */
  readonly neverAppears?: boolean;
  readonly deleteAt?: number;
}

/** `count` nodes, `10.0.1.10` onwards. */
export function makeNodes(count: number): NodeSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `node-${i}`,
    address: `10.0.1.${10 + i}`,
  }));
}

/** A game server named `<prefix>-<index>` behind `front`. */
export function gameServer(prefix: string, index: number, front: FrontKind): GameServer {
  return {
    name: `${prefix}-${String(index).padStart(3, '0')}`,
    namespace: 'games',
    allocationId: `uid-${prefix}-${index}`,
    front,
    containerPort: CONTAINER_PORT,
  };
}

/** `count` game servers behind `front`, all created at `at`. */
export function burst(
  prefix: string,
  count: number,
  front: FrontKind,
  at: number,
): GameServerPlan[] {
  return Array.from({ length: count }, (_, i) => ({
    gs: gameServer(prefix, i, front),
    createAt: at,
  }));
}

/** When and where each planned game server is bound, and when it runs. */
export interface Scheduled {
  readonly plan: GameServerPlan;
  readonly boundAt: number;
  readonly startedAt: number;
  readonly placement: Placement;
}

/**
 * Binds the plans that appear, in creation order, one scheduling cycle each, onto the fullest
 * node with room; hands each a host port of its front's range free on that node and a pod IP
 * (`10.0.1.100` onwards, reused after the VPC CNI's cooldown). A node's slots and host ports are taken back at
 * deletion. Plans that find no node, port or address are left out (none do at these sizes).
 */
export function schedule(
  plans: readonly GameServerPlan[],
  nodes: readonly NodeSpec[],
): Scheduled[] {
  const random = seededRandom(SEED);
  const used = new Map<string, { cpu: number; ports: Set<number> }>(
    nodes.map((n) => [n.name, { cpu: 0, ports: new Set<number>() }]),
  );
  const events = plans
    .filter((plan) => !plan.neverAppears)
    .flatMap((plan) => [
      { at: plan.createAt, kind: 'create' as const, plan },
      // A deleted pod keeps its node slot, host port and address until it is gone.
      ...(plan.deleteAt !== undefined
        ? [{ at: plan.deleteAt + GRACEFUL_STOP_MS, kind: 'delete' as const, plan }]
        : []),
    ])
    .sort((a, b) => a.at - b.at || (a.kind === 'delete' ? -1 : 1));
  const placed = new Map<GameServerPlan, Scheduled>();
  let schedulerFreeAt = 0;
  // Pod IPs from 10.0.1.100 up; a freed one is reused once its pod is gone and the CNI's
  // cooldown has passed.
  const podIps = new Map<string, number>();
  const podIpFor = (at: number): string | undefined => {
    for (let host = POD_IPS.from; host <= POD_IPS.to; host++) {
      const ip = `10.0.1.${host}`;
      const freeFrom = podIps.get(ip);
      if (freeFrom === undefined || freeFrom <= at) {
        podIps.set(ip, Number.POSITIVE_INFINITY);
        return ip;
      }
    }
    return undefined;
  };
  for (const event of events) {
    if (event.kind === 'delete') {
      const done = placed.get(event.plan);
      const node = done && used.get(done.placement.node);
      if (done && node) {
        node.cpu -= GAME_SERVER_CPU_MILLIS;
        node.ports.delete(done.placement.hostPort);
        podIps.set(done.placement.podIp, event.at + POD_IP_COOLDOWN_MS);
      }
      continue;
    }
    const range = event.plan.gs.front === 'accelerator' ? ACCELERATOR_HOST_PORTS : NLB_HOST_PORTS;
    const target = scheduleOnto(
      { cpuMillis: GAME_SERVER_CPU_MILLIS, hostPorts: [] },
      nodes
        .filter((n) => nodeUp(n, event.at))
        .map((n) => ({
          name: n.name,
          cpuMillis: NODE_CPU_MILLIS,
          usedCpuMillis: used.get(n.name)?.cpu ?? 0,
          cordoned: false,
          boundPorts: new Set<string>(),
        })),
    );
    const node = nodes.find((n) => n.name === target);
    const slot = node && used.get(node.name);
    if (!node || !slot) continue;
    let hostPort = range.from;
    while (slot.ports.has(hostPort)) hostPort++;
    const podIp = hostPort <= range.to ? podIpFor(event.at) : undefined;
    if (podIp === undefined) continue;
    slot.cpu += GAME_SERVER_CPU_MILLIS;
    slot.ports.add(hostPort);
    schedulerFreeAt = Math.max(schedulerFreeAt, event.at) + SCHEDULE_CYCLE_MS;
    const boundAt = schedulerFreeAt;
    const startedAt =
      boundAt + POD_START_MS.min + Math.floor(random() * (POD_START_MS.max - POD_START_MS.min));
    placed.set(event.plan, {
      plan: event.plan,
      boundAt,
      startedAt,
      placement: {
        node: node.name,
        nodeAddress: node.address,
        subnetId: SUBNET.subnetId,
        hostPort,
        podIp,
      },
    });
  }
  return [...placed.values()];
}

/**
 * A steady stretch: game servers arriving one at a time (exponential gaps, `meanGapMs` apart on
 * average), alternately behind an NLB and the accelerator, each playing a session of 10 to 20
 * minutes; none arrive in the last 20 minutes, so every one ends inside the stretch.
 */
export function steady(durationMs: number, meanGapMs: number, seed = SEED): GameServerPlan[] {
  const random = seededRandom(seed);
  const plans: GameServerPlan[] = [];
  const lastArrival = durationMs - SESSION_MS.max;
  for (let at = 1_000, i = 0; at < lastArrival; at += -Math.log(1 - random()) * meanGapMs, i++) {
    const front: FrontKind = i % 2 === 0 ? 'nlb' : 'accelerator';
    const session = SESSION_MS.min + random() * (SESSION_MS.max - SESSION_MS.min);
    plans.push({
      gs: gameServer('day', i, front),
      createAt: Math.round(at),
      deleteAt: Math.round(at + session),
    });
  }
  return plans;
}

/** A steady stretch's sessions. */
const SESSION_MS = { min: 10 * 60_000, max: 20 * 60_000 } as const;
