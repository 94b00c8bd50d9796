/**
 * Claims NLB listener slots for a pod at its CREATE admission: placement over the pool as the
 * store has it (nlb-placement.ts), then one all-or-none conditional claim. Two admissions that
 * placed on the same slot or past a load balancer's 50 both write, and only one wins: the loser
 * reads again and places again, a bounded number of times. The address a player dials is known
 * from here on: the load balancer's DNS name and the listener port.
 */
import type { PortSpec } from '../hostports/spec.js';
import type { PortRange } from '../net/port-range.js';
import { FrontPoolFullError, ListenerSlotTakenError, LoadBalancerFullError } from './errors.js';
import { describePoolFull, type PlacementPolicy, placeListeners } from './nlb-placement.js';
import type { FrontOwner, FrontStore, ListenerSlotRecord } from './store.js';

/** A pool member as admission needs it. */
export interface PoolMember {
  readonly arn: string;
  readonly dnsName: string;
  /** Listener ports someone other than berth holds on it (they count toward the 50 too). */
  readonly foreignPorts: ReadonlySet<number>;
}

/** The pool: the config's load balancers, then those added at runtime. */
export interface NlbPoolDirectory {
  members(): Promise<readonly PoolMember[]>;
}

/** What a claim needs. */
export interface ListenerClaimDeps {
  readonly store: FrontStore;
  readonly pool: NlbPoolDirectory;
  readonly listenerPorts: PortRange;
  readonly placement: PlacementPolicy;
  readonly random: () => number;
  readonly now: () => number;
}

/** Placements tried before the pool is reported full: each loss is a fresh read. */
const CLAIM_ATTEMPTS = 4;

/** `host:port` of a slot. */
function addressOf(members: readonly PoolMember[], record: ListenerSlotRecord): string {
  const member = members.find((m) => m.arn === record.slot.loadBalancerArn);
  return `${member?.dnsName ?? record.slot.loadBalancerArn}:${record.slot.port}`;
}

/**
 * The listener addresses, port name → `host:port`, of the owner's NLB-fronted `ports`: the ones
 * it holds already (a re-invoked webhook), else freshly claimed. A dry run places without
 * claiming: its addresses were free at that moment, not reserved.
 */
export async function claimListeners(
  deps: ListenerClaimDeps,
  request: {
    readonly owner: FrontOwner;
    readonly ports: readonly Pick<PortSpec, 'name' | 'protocol'>[];
    readonly dryRun: boolean;
  },
): Promise<Map<string, string>> {
  const addresses = new Map<string, string>();
  if (request.ports.length === 0) return addresses;
  const members = await deps.pool.members();
  for (let attempt = 1; ; attempt++) {
    const slots = await deps.store.listSlots();
    // Held already: a re-invoked webhook, or this claim's own write whose answer was lost.
    const held = slots.filter((s) => s.owner.allocationId === request.owner.allocationId);
    if (held.length > 0) {
      for (const record of held) addresses.set(record.portName, addressOf(members, record));
      return addresses;
    }
    const placement = placeListeners({
      pool: members.map((member) => {
        const own = slots.filter((s) => s.slot.loadBalancerArn === member.arn);
        const taken = new Set([...member.foreignPorts, ...own.map((s) => s.slot.port)]);
        return { arn: member.arn, listeners: taken.size, takenPorts: taken };
      }),
      range: deps.listenerPorts,
      policy: deps.placement,
      random: deps.random,
      count: request.ports.length,
    });
    if (placement.kind === 'pool-full') throw new FrontPoolFullError(describePoolFull(placement));
    const records = request.ports.map((port, i): ListenerSlotRecord => {
      const slot = placement.slots[i];
      if (slot === undefined) throw new Error('placement answered fewer slots than asked');
      return {
        slot: { loadBalancerArn: slot.arn, port: slot.port },
        owner: request.owner,
        portName: port.name,
        protocol: port.protocol,
        claimedAt: deps.now(),
        state: 'claimed',
      };
    });
    try {
      if (!request.dryRun) await deps.store.claimSlots(records);
      for (const record of records) addresses.set(record.portName, addressOf(members, record));
      return addresses;
    } catch (error) {
      const lost =
        error instanceof ListenerSlotTakenError || error instanceof LoadBalancerFullError;
      if (!lost) throw error;
      if (attempt >= CLAIM_ATTEMPTS) {
        throw new FrontPoolFullError(
          `no NLB listener could be claimed in ${CLAIM_ATTEMPTS} tries: ${error.message}`,
        );
      }
    }
  }
}

/**
 * Frees the listener slots `allocationId` claimed and nothing has made yet: for a CREATE berth
 * itself refused after claiming them (a quota, a block that does not fit), whose pod will never
 * exist. Waiting for the fronts pass would let a namespace at its quota hold the whole pool.
 */
export async function releaseClaimedListeners(
  deps: Pick<ListenerClaimDeps, 'store' | 'now'>,
  allocationId: string,
): Promise<void> {
  const slots = await deps.store.listSlots();
  for (const record of slots) {
    if (record.owner.allocationId === allocationId && record.state === 'claimed') {
      await deps.store.freeSlot(record.slot, allocationId, deps.now());
    }
  }
}
