/**
 * The fronts of a game server at its binding: the node is known now, so the addresses a player
 * dials are (an NLB listener's was claimed at CREATE; an accelerator destination's public port is
 * a lookup in the kept port mappings), and the work that makes them reachable is queued. The
 * binding is never refused for a front: a game server whose front cannot be made yet is told so
 * in a warning and made by the fronts pass.
 */
import { ownValueOf } from '../vocabulary/opaque.js';
import type { AcceleratorFront } from './accelerator-front.js';
import type { NlbPoolDirectory } from './listener-claim.js';
import { type SlotChainStore, servesNode } from './slots/store.js';
import type { FrontStore } from './store.js';
import type { FrontedPortWork, FrontQueue } from './work.js';

/** What the binding needs for fronts. */
export interface BindingFrontsDeps {
  readonly cluster: string;
  readonly store: FrontStore;
  readonly pool?: NlbPoolDirectory;
  /** Slots mode: a port behind an NLB is told its node seat's chain. */
  readonly chains?: SlotChainStore;
  readonly accelerator?: AcceleratorFront;
  readonly queue: FrontQueue;
  readonly now: () => number;
}

/** The game server being bound. */
export interface BoundGameServer {
  readonly namespace: string;
  readonly pod: string;
  readonly allocationId: string;
  readonly node: string;
  /** The node's private address, undefined when it has none. */
  readonly nodeAddress: string | undefined;
  readonly ports: readonly FrontedPortWork[];
  /** The addresses the pod was told at CREATE (`berth.dev/fronts`): its NLB listeners'. */
  readonly told: Readonly<Record<string, string>>;
  readonly dryRun: boolean;
}

/** Port name → `host:port`, and a warning per port left without an address. */
export interface BindingFronts {
  readonly addresses: ReadonlyMap<string, string>;
  readonly warnings: readonly string[];
}

/** Addresses for the binding's annotation; the bind work queued unless it is a dry run. */
export async function frontsAtBinding(
  deps: BindingFrontsDeps,
  server: BoundGameServer,
): Promise<BindingFronts> {
  const addresses = new Map<string, string>();
  const warnings: string[] = [];
  // An NLB listener's address was claimed and told at CREATE: the pod carries it, with no read.
  // A slot's is its node seat's, known only now: whatever the pod carries is not its own.
  const nlbPorts = server.ports.filter((port) => {
    const told = deps.chains ? undefined : ownValueOf(server.told, port.name);
    if (port.front === 'nlb' && told !== undefined) addresses.set(port.name, told);
    return port.front === 'nlb' && told === undefined;
  });
  if (server.nodeAddress === undefined) {
    return {
      addresses,
      warnings: [`node ${server.node} has no InternalIP: its game servers' fronts cannot reach it`],
    };
  }
  if (nlbPorts.length > 0 && deps.pool !== undefined && deps.chains !== undefined) {
    const members = await deps.pool.members();
    for (const port of nlbPorts) {
      const chain = await deps.chains.chainAt(server.node, port.hostPort);
      const member = members.find((m) => m.arn === chain?.slot.loadBalancerArn);
      if (!servesNode(chain, server.node, server.nodeAddress) || member === undefined) {
        warnings.push(
          `port ${port.name}: node ${server.node} host port ${port.hostPort} has no NLB slot yet; the fronts pass writes the address once it serves`,
        );
      } else {
        addresses.set(port.name, `${member.dnsName}:${chain.slot.port}`);
      }
    }
  } else if (nlbPorts.length > 0 && deps.pool !== undefined) {
    const members = await deps.pool.members();
    const slots = (await deps.store.listSlots()).filter(
      (record) => record.owner.allocationId === server.allocationId,
    );
    for (const port of nlbPorts) {
      const record = slots.find((slot) => slot.portName === port.name);
      const member = members.find((m) => m.arn === record?.slot.loadBalancerArn);
      if (record === undefined || member === undefined) {
        warnings.push(`port ${port.name}: no NLB listener is held for it; no public address`);
      } else {
        addresses.set(port.name, `${member.dnsName}:${record.slot.port}`);
      }
    }
  }
  for (const port of server.ports.filter((p) => p.front === 'accelerator')) {
    const located = await deps.accelerator?.locate(server.nodeAddress, port.hostPort);
    if (located === undefined) {
      warnings.push(
        `port ${port.name}: ${server.nodeAddress}:${port.hostPort} is no destination of the accelerator's endpoint subnets; no public address`,
      );
    } else {
      addresses.set(port.name, located.publicAddress);
    }
  }
  // A slot's chain is in place before any binding: only the other fronts have work to queue.
  const queued = deps.chains ? server.ports.filter((port) => port.front !== 'nlb') : server.ports;
  if (!server.dryRun && queued.length > 0) {
    await deps.queue.submit(
      {
        kind: 'bind',
        cluster: deps.cluster,
        namespace: server.namespace,
        pod: server.pod,
        allocationId: server.allocationId,
        node: server.node,
        nodeAddress: server.nodeAddress,
        ports: queued,
        boundAt: deps.now(),
      },
      0,
    );
  }
  return { addresses, warnings };
}
