/**
 * The pool of Network Load Balancers as admission and the worker see it: the config's, then
 * those added at runtime (`berth fronts add-nlb`), each with its DNS name, VPC, and the listener
 * ports someone other than berth holds on it. Read through ELBv2 and kept for a minute per
 * process: a pool changes by hand, and a cold start of every webhook container must not cost a
 * Describe per pod.
 *
 * A member ELBv2 no longer knows (someone deleted it: `LoadBalancerNotFound`) is skipped, and
 * said so in the log and in `berth status`: the others still serve. Its one bad ARN fails the
 * whole DescribeLoadBalancers call it is in, so that call's ARNs are asked one by one.
 */
import { awsErrorCode, isNotFound } from '../aws/error-codes.js';
import type { Elbv2Api, NetworkLoadBalancer } from './elbv2.js';
import type { NlbPoolDirectory, PoolMember } from './listener-claim.js';
import { taggedFor, tagsOf } from './nlb-front.js';
import type { FrontStore } from './store.js';

/** How long a reading of the pool is used. */
export const POOL_TTL_MS = 60_000;

/** A pool member with its VPC. */
export interface PoolMemberDetail extends PoolMember {
  readonly vpcId: string;
}

/** A member of the pool ELBv2 no longer knows, and why it was left out. */
export interface MissingPoolMember {
  readonly arn: string;
  /** ELBv2's answer for it: `LoadBalancerNotFound`, it was deleted outside berth. */
  readonly why: string;
}

/** One reading of the pool: the members that serve, and the ones that are gone. */
export interface PoolReading {
  readonly members: readonly PoolMemberDetail[];
  readonly missing: readonly MissingPoolMember[];
}

/** The pool as `berth status` and `/v1/status` show it. */
export interface NlbPoolStatus {
  readonly members: readonly { readonly arn: string; readonly dnsName: string }[];
  readonly missing: readonly MissingPoolMember[];
  /** Why the pool could not be read, when it could not (the rest of the status still is). */
  readonly unreadable?: string;
}

/** What the directory reads. */
export interface PoolDirectoryDeps {
  readonly api: Elbv2Api;
  readonly store: FrontStore;
  /** `fronts.nlb.loadBalancers`. */
  readonly configured: readonly string[];
  readonly cluster: string;
  readonly now: () => number;
  /** Told, once per reading, of each member that is gone. */
  readonly warn?: (line: string) => void;
}

/** The pool over ELBv2 and the store. */
export class Elbv2PoolDirectory implements NlbPoolDirectory {
  readonly #deps: PoolDirectoryDeps;
  #reading: { readonly at: number; readonly pool: Promise<PoolReading> } | undefined;

  constructor(deps: PoolDirectoryDeps) {
    this.#deps = deps;
  }

  /** The members' ARNs, config first. */
  async arns(): Promise<string[]> {
    const added = await this.#deps.store.listPoolAdditions();
    return [...new Set([...this.#deps.configured, ...added])];
  }

  async members(): Promise<readonly PoolMemberDetail[]> {
    return (await this.reading()).members;
  }

  /** The pool as last read (at most a minute ago): its members, and the ones that are gone. */
  async reading(): Promise<PoolReading> {
    const now = this.#deps.now();
    if (this.#reading === undefined || now - this.#reading.at >= POOL_TTL_MS) {
      const pool = this.#read().catch((error: unknown) => {
        this.#reading = undefined;
        throw error;
      });
      this.#reading = { at: now, pool };
    }
    return this.#reading.pool;
  }

  /** What status shows of the pool. */
  async status(): Promise<NlbPoolStatus> {
    const { members, missing } = await this.reading();
    return { members: members.map(({ arn, dnsName }) => ({ arn, dnsName })), missing };
  }

  /** The VPC of a member, where its target groups are made. */
  async vpcIdOf(loadBalancerArn: string): Promise<string> {
    const member = (await this.members()).find((m) => m.arn === loadBalancerArn);
    if (member === undefined) throw new Error(`${loadBalancerArn} is not in the NLB pool`);
    return member.vpcId;
  }

  async #read(): Promise<PoolReading> {
    const { api, cluster } = this.#deps;
    const arns = await this.arns();
    const members: PoolMemberDetail[] = [];
    const missing: MissingPoolMember[] = [];
    const gone = (arn: string, error: unknown) => missing.push({ arn, why: awsErrorCode(error) });
    for (let i = 0; i < arns.length; i += 20) {
      for (const lb of await this.#described(arns.slice(i, i + 20), gone)) {
        const foreignPorts = new Set<number>();
        let marker: string | undefined;
        try {
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
        } catch (error) {
          // Deleted between its description and its listeners.
          if (!isNotFound(error)) throw error;
          gone(lb.arn, error);
          continue;
        }
        members.push({ arn: lb.arn, dnsName: lb.dnsName, vpcId: lb.vpcId, foreignPorts });
      }
    }
    for (const { arn, why } of missing) {
      const fix = this.#deps.configured.includes(arn)
        ? 'remove it from fronts.nlb.loadBalancers'
        : 'it was added with berth fronts --add-nlb';
      this.#deps.warn?.(
        `NLB pool: ${arn} is gone (${why}); skipped, the other load balancers serve; ${fix}`,
      );
    }
    // Config order, whatever order the API answered in.
    return { members: arns.flatMap((arn) => members.filter((m) => m.arn === arn)), missing };
  }

  /** The load balancers of `chunk` ELBv2 knows; each one it does not is told to `gone`. */
  async #described(
    chunk: readonly string[],
    gone: (arn: string, error: unknown) => void,
  ): Promise<readonly NetworkLoadBalancer[]> {
    try {
      return await this.#deps.api.describeLoadBalancers(chunk);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      if (chunk.length === 1) {
        gone(chunk[0] as string, error);
        return [];
      }
    }
    const found: NetworkLoadBalancer[] = [];
    for (const arn of chunk) found.push(...(await this.#described([arn], gone)));
    return found;
  }
}
