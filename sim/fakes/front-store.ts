/**
 * `FrontStore` in memory: the tests' and the benchmark's store, with the same conditions as the
 * DynamoDB adapter (a claim is all or none, a slot is freed only by its owner, a load balancer
 * never passes its listener limit).
 */
import { MAX_LISTENERS_PER_NLB } from '../../shared/fronts/elbv2.js';
import { ListenerSlotTakenError, LoadBalancerFullError } from '../../shared/fronts/errors.js';
import type {
  DestinationCell,
  FrontStore,
  ListenerSlotRecord,
  SlotFree,
  SubnetDestinations,
  WantedDestination,
} from '../../shared/fronts/store.js';
import type { ListenerSlot } from '../../shared/fronts/work.js';

const slotKey = (slot: ListenerSlot): string => `${slot.loadBalancerArn}#${slot.port}`;
const cellKey = (cell: DestinationCell): string => `${cell.subnetId}#${cell.address}#${cell.port}`;

/** The in-memory store. */
export class MemoryFrontStore implements FrontStore {
  readonly #slots = new Map<string, ListenerSlotRecord>();
  readonly #pool: string[] = [];
  readonly #mappings = new Map<string, string>();
  readonly #wanted = new Map<string, WantedDestination>();
  /** subnet → address → allowed ports. */
  readonly #allowed = new Map<string, Map<string, Set<number>>>();

  async listSlots(): Promise<ListenerSlotRecord[]> {
    return [...this.#slots.values()];
  }

  async claimSlots(records: readonly ListenerSlotRecord[]): Promise<void> {
    const adding = new Map<string, number>();
    const claiming = new Set<string>();
    for (const record of records) {
      // A slot named twice in one claim is taken by the claim itself (DynamoDB refuses a
      // transaction that writes one item twice).
      const key = slotKey(record.slot);
      if (this.#slots.has(key) || claiming.has(key)) throw new ListenerSlotTakenError(record.slot);
      claiming.add(key);
      const arn = record.slot.loadBalancerArn;
      adding.set(arn, (adding.get(arn) ?? 0) + 1);
    }
    for (const [arn, count] of adding) {
      const held = [...this.#slots.values()].filter((r) => r.slot.loadBalancerArn === arn).length;
      if (held + count > MAX_LISTENERS_PER_NLB) {
        throw new LoadBalancerFullError(arn, MAX_LISTENERS_PER_NLB);
      }
    }
    for (const record of records) this.#slots.set(slotKey(record.slot), record);
  }

  async markBound(
    slot: ListenerSlot,
    allocationId: string,
    bound: { target: { ip: string; port: number }; boundAt: number; pod: string },
  ): Promise<boolean> {
    const record = this.#slots.get(slotKey(slot));
    if (record?.owner.allocationId !== allocationId) return false;
    const { makingUntil: _done, ...rest } = record;
    this.#slots.set(slotKey(slot), {
      ...rest,
      state: 'bound',
      target: bound.target,
      boundAt: bound.boundAt,
      owner: { ...record.owner, pod: record.owner.pod || bound.pod },
    });
    return true;
  }

  async markServing(slot: ListenerSlot, allocationId: string, at: number): Promise<boolean> {
    const record = this.#slots.get(slotKey(slot));
    if (record?.owner.allocationId !== allocationId || record.state !== 'bound') return false;
    this.#slots.set(slotKey(slot), { ...record, servingAt: record.servingAt ?? at });
    return true;
  }

  async beginMaking(slot: ListenerSlot, allocationId: string, until: number): Promise<boolean> {
    const record = this.#slots.get(slotKey(slot));
    if (record?.owner.allocationId !== allocationId) return false;
    this.#slots.set(slotKey(slot), { ...record, makingUntil: until });
    return true;
  }

  async freeSlot(slot: ListenerSlot, allocationId: string, now: number): Promise<SlotFree> {
    const record = this.#slots.get(slotKey(slot));
    if (record?.owner.allocationId !== allocationId) return 'not-held';
    if (record.makingUntil !== undefined && record.makingUntil >= now) return 'making';
    this.#slots.delete(slotKey(slot));
    return 'freed';
  }

  async listPoolAdditions(): Promise<string[]> {
    return [...this.#pool];
  }

  async addToPool(loadBalancerArn: string): Promise<void> {
    if (!this.#pool.includes(loadBalancerArn)) this.#pool.push(loadBalancerArn);
  }

  async getMappings(subnetId: string): Promise<string | undefined> {
    return this.#mappings.get(subnetId);
  }

  async putMappings(subnetId: string, encoded: string): Promise<void> {
    this.#mappings.set(subnetId, encoded);
  }

  async want(destinations: readonly WantedDestination[]): Promise<void> {
    const named = new Set<string>();
    for (const destination of destinations) {
      const key = cellKey(destination);
      // A cell named twice in one call: the first naming is the want.
      if (named.has(key)) continue;
      named.add(key);
      // The same owner's again changes nothing; another owner's takes the cell over (the
      // scheduler binds a host port only once its previous pod is gone).
      if (this.#wanted.get(key)?.owner.allocationId !== destination.owner.allocationId) {
        this.#wanted.set(key, destination);
      }
    }
  }

  async unwant(allocationId: string, cells: readonly DestinationCell[]): Promise<void> {
    for (const cell of cells) {
      const key = cellKey(cell);
      if (this.#wanted.get(key)?.owner.allocationId === allocationId) this.#wanted.delete(key);
    }
  }

  async listDestinations(subnetId: string): Promise<SubnetDestinations> {
    return {
      wanted: [...this.#wanted.values()].filter((w) => w.subnetId === subnetId),
      allowed: new Map(
        [...(this.#allowed.get(subnetId) ?? new Map<string, Set<number>>())].map(
          ([address, ports]) => [address, new Set(ports)] as const,
        ),
      ),
    };
  }

  async listDestinationSubnets(): Promise<string[]> {
    const subnets = new Set<string>(this.#allowed.keys());
    for (const wanted of this.#wanted.values()) subnets.add(wanted.subnetId);
    return [...subnets];
  }

  async recordAllowed(subnetId: string, address: string, ports: readonly number[]): Promise<void> {
    // Allowing no port records nothing (DynamoDB keeps no empty number set).
    if (ports.length === 0) return;
    const subnet = this.#allowed.get(subnetId) ?? new Map<string, Set<number>>();
    this.#allowed.set(subnetId, subnet);
    const allowed = subnet.get(address) ?? new Set<number>();
    subnet.set(address, allowed);
    for (const port of ports) allowed.add(port);
  }

  async recordDenied(subnetId: string, address: string): Promise<void> {
    const subnet = this.#allowed.get(subnetId);
    subnet?.delete(address);
    // A subnet with nothing allowed is no longer a destination subnet.
    if (subnet?.size === 0) this.#allowed.delete(subnetId);
  }
}
