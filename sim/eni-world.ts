/**
 * One ENI world for a test or a bench: a manual clock, the EC2 fake behind the rate budget, a fake cluster,
 * the in-memory store (or a given one) and `EniDeps` wired over them.
 */
import { parseConfig } from '../shared/config/schema.js';
import { InProcessSharedBudget } from '../shared/ec2/fair-share.js';
import { BudgetedEc2Network, DEFAULT_EC2_BUDGET } from '../shared/ec2/rate-budget.js';
import { eniDeps } from '../shared/eni/deps.js';
import type { RefillRequests } from '../shared/eni/refill.js';
import type { AssignDeps } from '../shared/eni/service.js';
import type { EniStore } from '../shared/eni/store.js';
import { ec2Node, FakeClusterApi } from './fakes/cluster-api.js';
import { FakeEc2, type FakeEc2Options } from './fakes/ec2.js';
import { InMemoryEniStore } from './fakes/eni-store.js';
import { seededRandom } from './random.js';

/** The subnet every test node lives in: 10.0.0.0/24 (251 usable addresses). */
export const SUBNET_ID = 'subnet-0a';
/** Its CIDR. */
export const SUBNET_CIDR = '10.0.0.0/24';

/** Everything a test touches. */
export interface EniWorld {
  readonly clock: { now: number };
  readonly ec2: FakeEc2;
  readonly cluster: FakeClusterApi;
  readonly store: EniStore;
  readonly deps: AssignDeps;
  /** The background refills assigns asked for, in order; a test runs them (`refillAhead`). */
  readonly refillRequests: string[];
  /** Launches an instance and registers its node (with its allocatable pods, when given). */
  addNode(name: string, instanceType?: string, maxPods?: number): string;
}

/** Builds a world; `eni` overrides config keys (mode `ip` unless given), `fake` the EC2 fake's options. */
export function eniWorld(
  options: {
    eni?: Record<string, number | string>;
    fake?: Partial<FakeEc2Options>;
    store?: EniStore;
    subnetCidr?: string;
    seed?: number;
    holder?: string;
  } = {},
): EniWorld {
  const clock = { now: Date.parse('2025-06-01T00:00:00Z') };
  const now = () => clock.now;
  const random = seededRandom(options.seed ?? 1);
  const ec2 = new FakeEc2({ now, random, ...options.fake });
  ec2.addSubnet(SUBNET_ID, options.subnetCidr ?? SUBNET_CIDR);
  const cluster = new FakeClusterApi();
  const store = options.store ?? new InMemoryEniStore();
  const sleep = async (ms: number) => {
    clock.now += ms;
  };
  const budgeted = new BudgetedEc2Network(ec2, {
    budget: new InProcessSharedBudget(now, DEFAULT_EC2_BUDGET).for('test'),
    now,
    sleep,
    random,
  });
  let ids = 0;
  // Single addresses unless a test asks for prefixes: most tests here are about the pool's
  // mechanics, which read most plainly one address at a time; prefix-mode.test.ts covers /28s.
  const config = parseConfig({ cluster: 'test', eni: { mode: 'ip', ...options.eni } });
  const refillRequests: string[] = [];
  const refills: RefillRequests = {
    request: async (node) => {
      refillRequests.push(node);
    },
  };
  const base = eniDeps({
    store,
    ec2: budgeted,
    cluster,
    clusterName: 'test',
    config: config.eni,
    now,
    sleep,
    random,
    holder: options.holder ?? 'test-holder',
    newId: () => `id-${++ids}`,
  });
  return {
    clock,
    ec2,
    cluster,
    store,
    deps: { ...base, refills },
    refillRequests,
    addNode(name, instanceType = 'c5.large', maxPods) {
      const id = ec2.launchInstance({ instanceType, subnetId: SUBNET_ID });
      cluster.withNodes(ec2Node(name, id, 'us-east-1a', maxPods));
      return id;
    },
  };
}
