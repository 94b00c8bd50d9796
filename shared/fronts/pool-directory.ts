/**
 * The pool of Network Load Balancers as admission and the worker see it: the config's, then
 * those added at runtime (`berth fronts add-nlb`), each with its DNS name, VPC, and the listener
 * ports someone other than berth holds on it. Read through ELBv2 and kept for a minute per
 * process: a pool changes by hand, and a cold start of every webhook container must not cost a
 * Describe per pod.
 */
import type { Elbv2Api } from './elbv2.js';
import type { NlbPoolDirectory, PoolMember } from './listener-claim.js';
import { taggedFor, tagsOf } from './nlb-front.js';
import type { FrontStore } from './store.js';

/** How long a reading of the pool is used. */
export const POOL_TTL_MS = 60_000;

/** A pool member with its VPC. */
export interface PoolMemberDetail extends PoolMember {
  readonly vpcId: string;
}

/** What the directory reads. */
export interface PoolDirectoryDeps {
  readonly api: Elbv2Api;
  readonly store: FrontStore;
  /** `fronts.nlb.loadBalancers`. */
  readonly configured: readonly string[];
  readonly cluster: string;
  readonly now: () => number;
}

/** The pool over ELBv2 and the store. */
export class Elbv2PoolDirectory implements NlbPoolDirectory {
  readonly #deps: PoolDirectoryDeps;
  #reading: { readonly at: number; readonly members: Promise<PoolMemberDetail[]> } | undefined;

  constructor(deps: PoolDirectoryDeps) {
    this.#deps = deps;
  }

  /** The members' ARNs, config first. */
  async arns(): Promise<string[]> {
    const added = await this.#deps.store.listPoolAdditions();
    return [...new Set([...this.#deps.configured, ...added])];
  }

  async members(): Promise<readonly PoolMemberDetail[]> {
    const now = this.#deps.now();
    if (this.#reading === undefined || now - this.#reading.at >= POOL_TTL_MS) {
      const members = this.#read().catch((error: unknown) => {
        this.#reading = undefined;
        throw error;
      });
      this.#reading = { at: now, members };
    }
    return this.#reading.members;
  }

  /** The VPC of a member, where its target groups are made. */
  async vpcIdOf(loadBalancerArn: string): Promise<string> {
    const member = (await this.members()).find((m) => m.arn === loadBalancerArn);
    if (member === undefined) throw new Error(`${loadBalancerArn} is not in the NLB pool`);
    return member.vpcId;
  }

  async #read(): Promise<PoolMemberDetail[]> {
    const { api, cluster } = this.#deps;
    const arns = await this.arns();
    const members: PoolMemberDetail[] = [];
    for (let i = 0; i < arns.length; i += 20) {
      for (const lb of await api.describeLoadBalancers(arns.slice(i, i + 20))) {
        const foreignPorts = new Set<number>();
        let marker: string | undefined;
        do {
          const page = await api.describeListeners(lb.arn, marker);
          const tags = await tagsOf(
            api,
            page.items.map((l) => l.arn),
          );
          for (const listener of page.items) {
            if (!taggedFor(tags.get(listener.arn), cluster)) foreignPorts.add(listener.port);
          }
          marker = page.nextMarker;
        } while (marker !== undefined);
        members.push({ arn: lb.arn, dnsName: lb.dnsName, vpcId: lb.vpcId, foreignPorts });
      }
    }
    // Config order, whatever order the API answered in.
    return arns.flatMap((arn) => members.filter((m) => m.arn === arn));
  }
}
