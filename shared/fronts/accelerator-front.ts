/**
 * Game servers behind a Global Accelerator custom routing endpoint group.
 *
 * The group's port mappings are fixed once a subnet is its endpoint, so they are listed once
 * (every page of ListCustomRoutingPortMappings) and kept in the store as runs
 * (port-mappings.ts): the public port of (node address, host port) is then a lookup, with no call
 * per game server. Destinations are allowed and denied per endpoint subnet by a plan over what
 * live game servers want and what berth has allowed (destination-plan.ts), so a burst of bindings
 * is one AllowCustomRoutingTraffic. OpenKruise Game's plugin calls the API once per pod instead.
 */
import { type Lease, withLease } from '../lease/lease.js';
import type { CustomRoutingApi, DestinationBatch, PortMapping } from './accelerator.js';
import {
  cellsOf,
  type DestinationPlan,
  isEmptyPlan,
  planDestinations,
} from './destination-plan.js';
import { SubnetReconcileBusyError } from './errors.js';
import {
  buildMappingRuns,
  decodeMappingRuns,
  encodeMappingRuns,
  type MappingRun,
  publicPortOf,
} from './port-mappings.js';
import type { FrontStore } from './store.js';

/** Where a destination sits and the address a player dials for it. */
export interface Located {
  readonly subnetId: string;
  /** `accelerator IP:accelerator port`. */
  readonly publicAddress: string;
}

/** What the worker and the binding need of the accelerator. */
export interface AcceleratorFront {
  /** The subnet and public address of `address:port`, or undefined outside the endpoint subnets. */
  locate(address: string, port: number): Promise<Located | undefined>;
  /**
   * Brings the subnets' allowed destinations in line with the wanted ones, one process at a time
   * per subnet. A subnet another process is reconciling is waited for (`wait`: then
   * `SubnetReconcileBusyError` past the wait) or left to it (`skip`).
   */
  reconcile(subnetIds: readonly string[], whenBusy?: 'wait' | 'skip'): Promise<void>;
  /**
   * Reads the port mappings now (listed and kept in the table the first time), so a binding
   * finds them kept rather than listing them inside its webhook's few seconds.
   */
  warm(): Promise<void>;
}

/**
 * One reconcile of a subnet at a time. Two that cross can leave the table saying "allowed" where
 * the accelerator denies (one's allow lands, the other's deny lands, the deny's record lands, the
 * allow's record lands last), and a plan trusts the table: that game server would stay
 * unreachable until its address emptied.
 */
export interface ReconcileExclusion {
  readonly lease: Lease;
  /** This process, as the lease's holder. */
  readonly holder: string;
  readonly sleep: (ms: number) => Promise<void>;
}

/** What the front needs. */
export interface CustomRoutingFrontDeps {
  readonly api: CustomRoutingApi;
  readonly store: FrontStore;
  readonly endpointGroupArn: string;
  readonly exclusion: ReconcileExclusion;
}

/** Plans applied per subnet before the rest is left to the next pass: concurrent workers converge. */
const RECONCILE_ROUNDS = 3;
/**
 * A subnet's reconcile lease, renewed before every call: longer than one call may wait for the
 * budget (20 s) and take, so a renewed lease covers the call it precedes; short enough that a
 * process that died holding it delays the next reconcile by well under a minute.
 */
const SUBNET_LEASE_MS = 45_000;
/** How long a reconcile waits for another process's, and how often it looks. */
const SUBNET_WAIT_MS = 10_000;
const SUBNET_WAIT_STEP_MS = 250;

/** The accelerator's ARN: the endpoint group's up to `/listener/`. */
export function acceleratorArnOf(endpointGroupArn: string): string {
  const at = endpointGroupArn.indexOf('/listener/');
  return at < 0 ? endpointGroupArn : endpointGroupArn.slice(0, at);
}

interface Mapped {
  readonly ip: string;
  readonly runs: ReadonlyMap<string, readonly MappingRun[]>;
}

/** The accelerator front over the API and the store; mappings are read once per process. */
export class CustomRoutingFront implements AcceleratorFront {
  readonly #deps: CustomRoutingFrontDeps;
  #mapped: Promise<Mapped> | undefined;

  constructor(deps: CustomRoutingFrontDeps) {
    this.#deps = deps;
  }

  async locate(address: string, port: number): Promise<Located | undefined> {
    const { ip, runs } = await this.#mappings();
    for (const [subnetId, subnetRuns] of runs) {
      const publicPort = publicPortOf(subnetRuns, address, port);
      if (publicPort !== undefined) return { subnetId, publicAddress: `${ip}:${publicPort}` };
    }
    return undefined;
  }

  async warm(): Promise<void> {
    await this.#mappings();
  }

  async reconcile(subnetIds: readonly string[], whenBusy: 'wait' | 'skip' = 'wait'): Promise<void> {
    const { lease, holder, sleep } = this.#deps.exclusion;
    for (const subnetId of subnetIds) {
      // A look without the lease first: a subnet in step (most, on most passes) costs one read,
      // and nothing it skips could cross another reconcile.
      if (isEmptyPlan(await this.#planOf(subnetId))) continue;
      const request = { name: `fronts-accelerator#${subnetId}`, holder, ttlMs: SUBNET_LEASE_MS };
      for (let waited = 0; ; waited += SUBNET_WAIT_STEP_MS) {
        const run = await withLease(lease, request, (renew) =>
          this.#reconcileSubnet(subnetId, renew),
        );
        // Skipped: the holder's plan is read after this process recorded its wants, or the next
        // pass's is.
        if (run.ran || whenBusy === 'skip') break;
        if (waited >= SUBNET_WAIT_MS) throw new SubnetReconcileBusyError(subnetId, run.holder);
        await sleep(SUBNET_WAIT_STEP_MS);
      }
    }
  }

  async #reconcileSubnet(subnetId: string, renew: () => Promise<unknown>): Promise<void> {
    for (let round = 0; round < RECONCILE_ROUNDS; round++) {
      const plan = await this.#planOf(subnetId);
      if (isEmptyPlan(plan)) break;
      for (const batch of plan.allow) await this.#allow(subnetId, batch, renew);
      for (const batch of plan.deny) await this.#deny(subnetId, batch, renew);
    }
  }

  /** The subnet's plan from what the table holds now. */
  async #planOf(subnetId: string): Promise<DestinationPlan> {
    const { wanted, allowed } = await this.#deps.store.listDestinations(subnetId);
    return planDestinations({
      endpointGroupArn: this.#deps.endpointGroupArn,
      endpointId: subnetId,
      wanted: cellsOf(wanted),
      allowed,
    });
  }

  async #allow(
    subnetId: string,
    batch: DestinationBatch,
    renew: () => Promise<unknown>,
  ): Promise<void> {
    await renew();
    await this.#deps.api.allowTraffic(batch);
    for (const address of batch.addresses) {
      await this.#deps.store.recordAllowed(subnetId, address, batch.ports ?? []);
    }
  }

  async #deny(
    subnetId: string,
    batch: DestinationBatch,
    renew: () => Promise<unknown>,
  ): Promise<void> {
    await renew();
    await this.#deps.api.denyTraffic(batch);
    for (const address of batch.addresses) await this.#deps.store.recordDenied(subnetId, address);
  }

  #mappings(): Promise<Mapped> {
    this.#mapped ??= this.#loadMappings().catch((error: unknown) => {
      // A failed read is not kept: the next caller reads again.
      this.#mapped = undefined;
      throw error;
    });
    return this.#mapped;
  }

  async #loadMappings(): Promise<Mapped> {
    const { api, store, endpointGroupArn } = this.#deps;
    const acceleratorArn = acceleratorArnOf(endpointGroupArn);
    const [accelerator, group] = await Promise.all([
      api.describeAccelerator(acceleratorArn),
      api.describeEndpointGroup(endpointGroupArn),
    ]);
    const ip = accelerator.ipAddresses[0] ?? accelerator.dnsName;
    const kept = new Map<string, readonly MappingRun[]>();
    for (const subnetId of group.subnetIds) {
      const text = await store.getMappings(subnetId);
      if (text !== undefined) kept.set(subnetId, decodeMappingRuns(text));
    }
    if (kept.size === group.subnetIds.length) return { ip, runs: kept };
    // A subnet not read yet: one listing covers every subnet of the group.
    const pages: PortMapping[][] = [];
    let token: string | undefined;
    do {
      const page = await api.listPortMappings(acceleratorArn, endpointGroupArn, token);
      pages.push([...page.mappings]);
      token = page.nextToken;
    } while (token !== undefined);
    const runs = buildMappingRuns(pages);
    for (const [subnetId, subnetRuns] of runs) {
      await store.putMappings(subnetId, encodeMappingRuns(subnetRuns));
    }
    return { ip, runs };
  }
}
