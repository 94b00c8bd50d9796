/**
 * The slot chains' share of the fronts pass (`fronts.nlb.mode: slots`): reads the game nodes,
 * plans (plan.ts) and carries the plan out through ELBv2, each step recorded in the chain before
 * the next is taken, so a pass that stops anywhere leaves a chain the next pass finishes:
 * - a new chain is claimed in the store first (so a listener berth makes is always a chain's),
 *   then made: CreateTargetGroup (TCP_UDP, the configured health check), its seat's target
 *   (node address, host port) registered, CreateListener (TCP_UDP, one listener serves a UDP,
 *   TCP or TCP and UDP game port alike); each is idempotent for the same settings, so making
 *   again after a crash finds what was made. Spares (no seat) wait for the next node;
 * - a free chain given to a seat has the seat's target registered;
 * - a chain whose node is gone is marked releasing (no binding is told it from then on), its
 *   target deregistered, and then it is free for the next node;
 * - a registered target is asked for its health until it is first seen healthy (`servingAt`).
 * It stops starting steps at `deadline`: the rest is the next pass's.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { forEachBounded } from '../../concurrency/bounded.js';
import type { PortRange } from '../../net/port-range.js';
import type { Elbv2Api, HealthCheck } from '../elbv2.js';
import { FRONT_TAGS, ignoreGone } from '../nlb-front.js';
import type { PlacementPolicy } from '../nlb-placement.js';
import type { SlotFront } from '../readiness.js';
import type { ListenerSlot } from '../work.js';
import { planSlots, type SlotNode, type SlotSeat } from './plan.js';
import {
  type ChainHolder,
  chainGroupName,
  revised,
  type SlotChain,
  type SlotChainStore,
  servesNode,
  slotKey,
} from './store.js';

/** A pool member as the chains need it. */
export interface ChainPoolMember {
  readonly arn: string;
  readonly dnsName: string;
  readonly vpcId: string;
  /** Listener ports someone other than berth holds on it. */
  readonly foreignPorts: ReadonlySet<number>;
}

/** What the chains' pass needs. */
export interface SlotChainsDeps {
  readonly cluster: string;
  readonly chains: SlotChainStore;
  readonly elbv2: Elbv2Api;
  readonly members: () => Promise<readonly ChainPoolMember[]>;
  readonly listenerPorts: PortRange;
  readonly placement: PlacementPolicy;
  /** The host ports of `fronts.nlb.range`. */
  readonly hostPorts: readonly number[];
  readonly healthCheck: HealthCheck;
  readonly random: () => number;
  readonly now: () => number;
}

/** What the pass read of the cluster. */
export interface SlotChainsView {
  /** The game nodes (`scale.nodeSelector`). */
  readonly nodes: readonly V1Node[];
  /** Every live pod. */
  readonly pods: readonly V1Pod[];
  /** Listener ports of the pool berth holds otherwise (a game server's own listeners). */
  readonly otherSlots: readonly ListenerSlot[];
}

/** What the chains' share of one pass did. */
export interface SlotChainsSummary {
  readonly created: number;
  readonly assigned: number;
  readonly released: number;
  readonly finished: number;
  /** Chains first seen serving this pass. */
  readonly serving: number;
  /** Seats left without a chain: the pool is full. */
  readonly unseated: number;
  /** Steps that failed (budget spent, throttled, a race lost): the next pass takes them. */
  readonly failed: number;
}

/** Chains whose steps run at once; the budget paces the calls. */
const CHAIN_CONCURRENCY = 8;
/**
 * Target groups whose health one pass reads at most, the first registered first: the reads share
 * berth's describe budget with the rest of the pass (as readiness.ts's bound does).
 */
export const MAX_CHAIN_HEALTH_READS = 100;

/** The tags of a chain's target group and listener: the cluster's, and the slot's. */
function chainTags(cluster: string, slot: ListenerSlot) {
  return [
    { key: FRONT_TAGS.cluster, value: cluster },
    { key: FRONT_TAGS.chain, value: slotKey(slot) },
  ];
}

/** What the chains' share of a pass did, and each seat's front as it left the chains. */
export interface SlotChainsOutcome {
  readonly summary: SlotChainsSummary;
  readonly front: SlotFront;
  /** Seats whose chain serves, and of those the seats no live pod's host port takes. */
  readonly seats: { readonly serving: number; readonly free: number };
}

/** A game node as the plan reads it. */
function slotNodeOf(node: V1Node): SlotNode {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const since = ready?.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : NaN;
  return {
    name: node.metadata?.name ?? '',
    address: node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address,
    ready: ready?.status === 'True',
    ...(Number.isFinite(since) ? { readySince: since } : {}),
  };
}

/** `<node>#<host port>` of every host port a live pod's containers bind. */
export function heldHostPortsOf(pods: readonly V1Pod[]): Set<string> {
  const held = new Set<string>();
  for (const pod of pods) {
    const node = pod.spec?.nodeName;
    if (!node) continue;
    for (const container of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])])
      for (const port of container.ports ?? [])
        if (port.hostPort !== undefined) held.add(`${node}#${port.hostPort}`);
  }
  return held;
}

/** The chains' share of one pass; steps start only before `deadline` (epoch ms). */
export async function runSlotChains(
  deps: SlotChainsDeps,
  view: SlotChainsView,
  deadline: number,
): Promise<SlotChainsOutcome> {
  const members = await deps.members();
  const chains = await deps.chains.listChains();
  const taken = new Map<string, Set<number>>(
    members.map((m) => [m.arn, new Set(m.foreignPorts)] as const),
  );
  for (const { slot } of [...chains, ...view.otherSlots.map((slot) => ({ slot }))]) {
    taken.get(slot.loadBalancerArn)?.add(slot.port);
  }
  const nodes = view.nodes.map(slotNodeOf);
  const plan = planSlots({
    nodes,
    chains,
    hostPorts: deps.hostPorts,
    heldHostPorts: heldHostPortsOf(view.pods),
    pool: members.map((m) => {
      const ports = taken.get(m.arn) ?? new Set<number>();
      return { arn: m.arn, listeners: ports.size, takenPorts: ports };
    }),
    listenerPorts: deps.listenerPorts,
    placement: deps.placement,
    random: deps.random,
    // One node's seats: the next node to join needs no CreateTargetGroup or CreateListener.
    spare: deps.hostPorts.length,
  });
  const vpcOf = new Map(members.map((m) => [m.arn, m.vpcId]));
  const steps = new ChainSteps(deps, vpcOf);
  let failed = 0;
  /** Runs each item's steps (up to the deadline); answers how many got through. */
  const counted = async <T>(items: readonly T[], run: (item: T) => Promise<void>) => {
    let done = 0;
    await forEachBounded(items, CHAIN_CONCURRENCY, async (item) => {
      if (deps.now() >= deadline) return;
      try {
        await run(item);
        done++;
      } catch {
        failed++;
      }
    });
    return done;
  };
  // Releases first: a chain freed now serves a seat below, and a gone node's target must be off
  // its chain before another seat's is on it.
  const released = await counted(plan.release, (chain) => steps.release(chain));
  const finished = await counted(plan.unfinished, (chain) => steps.finish(chain));
  const assigned = await counted(plan.assign, ({ chain, seat }) => steps.seat(chain, seat));
  const created = await counted(plan.create, ({ slot, seat }) => steps.create(slot, seat));
  const serving = await steps.markServing(chains, deadline);
  const now = steps.chainsNow(chains);
  return {
    summary: { created, assigned, released, finished, serving, unseated: plan.unseated, failed },
    front: frontOf(now, members, nodes),
    seats: seatsOf(now, heldHostPortsOf(view.pods)),
  };
}

/** The seats whose chains serve and are not leaving, and those no pod's host port takes. */
function seatsOf(chains: readonly SlotChain[], held: ReadonlySet<string>) {
  const serving = chains.flatMap(({ holder }) =>
    holder?.servingAt !== undefined && holder.releasingAt === undefined ? [holder] : [],
  );
  const free = serving.filter((seat) => !held.has(`${seat.node}#${seat.hostPort}`)).length;
  return { serving: serving.length, free };
}

/** Each seat's chain that may be told: made, held by the node at its address, not leaving. */
function frontOf(
  chains: readonly SlotChain[],
  members: readonly ChainPoolMember[],
  nodes: readonly SlotNode[],
): SlotFront {
  const dnsNames = new Map(members.map((m) => [m.arn, m.dnsName]));
  const addresses = new Map(nodes.map((n) => [n.name, n.address]));
  const bySeat = new Map<string, SlotChain>();
  for (const chain of chains) {
    if (chain.holder) bySeat.set(`${chain.holder.node}#${chain.holder.hostPort}`, chain);
  }
  return (node, hostPort) => {
    const chain = bySeat.get(`${node}#${hostPort}`);
    const address = addresses.get(node);
    const dnsName = chain && dnsNames.get(chain.slot.loadBalancerArn);
    if (address === undefined || dnsName === undefined || !servesNode(chain, node, address)) {
      return undefined;
    }
    return {
      address: `${dnsName}:${chain.slot.port}`,
      serving: chain.holder.servingAt !== undefined,
    };
  };
}

/** A write that lost its race: the chain changed under the pass, which leaves it to the next. */
class ChainChangedError extends Error {
  constructor(slot: ListenerSlot) {
    super(`slot chain ${slotKey(slot)} changed meanwhile`);
    this.name = 'ChainChangedError';
  }
}

/** The ELBv2 steps of chains, each recorded before the next; tracks every chain as last written. */
class ChainSteps {
  readonly #deps: SlotChainsDeps;
  readonly #vpcOf: ReadonlyMap<string, string>;
  readonly #latest = new Map<string, SlotChain>();

  constructor(deps: SlotChainsDeps, vpcOf: ReadonlyMap<string, string>) {
    this.#deps = deps;
    this.#vpcOf = vpcOf;
  }

  async #write(previous: SlotChain | undefined, next: SlotChain): Promise<SlotChain> {
    if (!(await this.#deps.chains.write(previous, next))) throw new ChainChangedError(next.slot);
    this.#latest.set(slotKey(next.slot), next);
    return next;
  }

  #current(chain: SlotChain): SlotChain {
    return this.#latest.get(slotKey(chain.slot)) ?? chain;
  }

  /** The chains as this pass left them: those listed, as last written, and those it claimed. */
  chainsNow(listed: readonly SlotChain[]): SlotChain[] {
    const now = new Map(listed.map((c) => [slotKey(c.slot), c] as const));
    for (const [key, chain] of this.#latest) now.set(key, chain);
    return [...now.values()];
  }

  /** Claims a new chain, for a seat or spare, makes it and registers the seat's target. */
  async create(slot: ListenerSlot, seat: SlotSeat | undefined): Promise<void> {
    const now = this.#deps.now();
    const claimed = await this.#write(undefined, {
      slot,
      claimedAt: now,
      ...(seat ? { holder: { ...seat, assignedAt: now } } : {}),
      version: 1,
    });
    await this.finish(claimed);
  }

  /** Gives the (free, or just freed) chain to a seat and registers its target. */
  async seat(given: SlotChain, seat: SlotSeat): Promise<void> {
    const free = this.#current(given);
    if (free.holder !== undefined || free.madeAt === undefined) {
      // Its release did not get through this pass: the next pass seats it.
      throw new ChainChangedError(free.slot);
    }
    const held = await this.#write(
      free,
      revised(free, { holder: { ...seat, assignedAt: this.#deps.now() } }),
    );
    await this.finish(held);
  }

  /** Takes a chain's next steps until it is made and registered, or released and free. */
  async finish(given: SlotChain): Promise<void> {
    const chain = this.#current(given);
    if (chain.holder?.releasingAt !== undefined) {
      await this.#deregister(chain, chain.holder);
      await this.#write(chain, revised(chain, { holder: undefined }));
      return;
    }
    const { holder } = chain;
    const target = holder && { ip: holder.address, port: holder.hostPort };
    if (chain.madeAt === undefined) {
      // The target is registered before the listener is made: it serves only minutes after its
      // registration, and that wait starts now rather than after CreateListener.
      const group = await this.#makeGroup(chain);
      if (target) await this.#deps.elbv2.registerTargets(group, [target]);
      await this.#listen(chain, group);
      const now = this.#deps.now();
      await this.#write(
        chain,
        revised(chain, {
          madeAt: now,
          targetGroupArn: group,
          ...(holder ? { holder: { ...holder, registeredAt: holder.registeredAt ?? now } } : {}),
        }),
      );
      return;
    }
    if (holder !== undefined && target && holder.registeredAt === undefined) {
      await this.#deps.elbv2.registerTargets(await this.#groupArn(chain), [target]);
      await this.#write(
        chain,
        revised(chain, { holder: { ...holder, registeredAt: this.#deps.now() } }),
      );
    }
  }

  /** Marks the chain releasing (told to no binding from now), deregisters, and frees it. */
  async release(given: SlotChain): Promise<void> {
    const chain = this.#current(given);
    const { holder } = chain;
    if (holder === undefined) return;
    const releasing = await this.#write(
      chain,
      revised(chain, { holder: { ...holder, releasingAt: this.#deps.now() } }),
    );
    await this.finish(releasing);
  }

  async #deregister(chain: SlotChain, holder: ChainHolder): Promise<void> {
    // No target group (a chain released before it was made): nothing is registered.
    const arn = chain.targetGroupArn ?? (await this.#findGroup(chain));
    if (arn === undefined) return;
    await this.#deps.elbv2
      .deregisterTargets(arn, [{ ip: holder.address, port: holder.hostPort }])
      .catch(ignoreGone);
  }

  /** CreateTargetGroup: answered with the existing group when made already. */
  async #makeGroup(chain: SlotChain): Promise<string> {
    const { slot } = chain;
    const vpcId = this.#vpcOf.get(slot.loadBalancerArn);
    if (vpcId === undefined) throw new Error(`${slot.loadBalancerArn} is no member of the pool`);
    const group = await this.#deps.elbv2.createTargetGroup({
      name: chainGroupName(this.#deps.cluster, slot),
      protocol: 'TCP_UDP',
      // Fixed by the slot, so every attempt asks for the same group whoever the chain's seat is
      // by then (another setting is DuplicateTargetGroupName); targets carry their own port.
      port: slot.port,
      vpcId,
      healthCheck: this.#deps.healthCheck,
      tags: chainTags(this.#deps.cluster, slot),
    });
    return group.arn;
  }

  /** CreateListener on the chain's slot: answered with the existing listener when made already. */
  async #listen(chain: SlotChain, targetGroupArn: string): Promise<void> {
    const { slot } = chain;
    await this.#deps.elbv2.createListener({
      loadBalancerArn: slot.loadBalancerArn,
      port: slot.port,
      protocol: 'TCP_UDP',
      targetGroupArn,
      tags: chainTags(this.#deps.cluster, slot),
    });
  }

  /** The target group of a chain made before its ARN was kept, if there is one. */
  async #findGroup(chain: SlotChain): Promise<string | undefined> {
    const name = chainGroupName(this.#deps.cluster, chain.slot);
    try {
      return (await this.#deps.elbv2.describeTargetGroups({ names: [name] })).items[0]?.arn;
    } catch (error) {
      ignoreGone(error);
      return undefined;
    }
  }

  async #groupArn(chain: SlotChain): Promise<string> {
    const arn = chain.targetGroupArn ?? (await this.#findGroup(chain));
    if (arn === undefined) throw new Error(`slot chain ${slotKey(chain.slot)} has no target group`);
    return arn;
  }

  /** Asks the registered, not yet serving chains' health; answers how many now serve. */
  async markServing(listed: readonly SlotChain[], deadline: number): Promise<number> {
    const pending = listed
      .map((c) => this.#current(c))
      .filter(
        (c) =>
          c.holder?.registeredAt !== undefined &&
          c.holder.servingAt === undefined &&
          c.holder.releasingAt === undefined,
      )
      .sort((a, b) => (a.holder?.registeredAt ?? 0) - (b.holder?.registeredAt ?? 0))
      .slice(0, MAX_CHAIN_HEALTH_READS);
    let serving = 0;
    for (const chain of pending) {
      if (this.#deps.now() >= deadline) break;
      const holder = chain.holder;
      if (holder === undefined) continue;
      try {
        const targets = await this.#deps.elbv2.describeTargets(await this.#groupArn(chain));
        const healthy = targets.some(
          (t) => t.ip === holder.address && t.port === holder.hostPort && t.state === 'healthy',
        );
        if (!healthy) continue;
        await this.#write(
          chain,
          revised(chain, { holder: { ...holder, servingAt: this.#deps.now() } }),
        );
        serving++;
      } catch {
        // Read again next pass (or changed meanwhile: the next pass reads it as it is).
      }
    }
    return serving;
  }
}
