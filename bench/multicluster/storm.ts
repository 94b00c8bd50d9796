/**
 * A node storm in one account: games-a's autoscaler adds 150 nodes within half a minute (VPC CNI
 * #2730: 150 nodes arriving together took 15 minutes because of EC2 throttling) while games-b and
 * games-c each add ten for a matchmaking wave. Each cluster is wired by `eniRunner`, as the ENI
 * function is, over in-memory stores. Every node's "running" event runs berth's real ENI pass for
 * its instance as an invocation of its own, waiting for budget as the ENI function does
 * (`NODE_WORK_BACKOFF`, never past its deadline, `ENI_INVOCATIONS`; a failed one is not retried,
 * as the stack configures the function), and each cluster's scheduled pass runs every minute, at
 * the same instants for every cluster (none happens to fall just after its own nodes join), all
 * at once on simulated time (`VirtualClock`): one invocation waiting for budget tokens holds back
 * no other.
 *
 * Measured, per cluster: how long after joining each node's pool first had an address for a pod,
 * how many nodes their own event served (the rest waited for a pass), and how often the budget
 * refused the cluster a token. With the fair budget of one berth (shared/ec2/fair-share.ts), with
 * one first-come bucket for the account, and for each cluster alone in an account. The quiet
 * clusters join an emptied bucket, so they cannot be as quick as alone; starved would be waiting
 * for a pass behind the storm.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { eniRunner, localEc2Account } from '../../shared/app/eni-pass.js';
import { parseConfig } from '../../shared/config/schema.js';
import { InProcessSharedBudget } from '../../shared/ec2/fair-share.js';
import type { RateBudget } from '../../shared/ec2/rate-budget.js';
import { InProcessCapacityLedger } from '../../sim/fakes/capacity-ledger.js';
import { ec2Node, FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeEc2 } from '../../sim/fakes/ec2.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';
import { seededRandom } from '../../sim/random.js';
import { SUBNETS } from '../eni/day.js';
import { CallLedger } from '../eni/ledger.js';
import { BERTH_PASS_S, SEED, START } from '../eni/workload.js';
import { median, round } from '../support/stats.js';
import { VirtualClock } from '../support/virtual-time.js';

/** One cluster's part in the storm: how many nodes join, from when, over how many seconds. */
export interface StormWave {
  readonly cluster: string;
  readonly nodes: number;
  readonly fromS: number;
  readonly overS: number;
}

/** The storm of the benchmark: games-a's 150 nodes, and the others' waves amid them. */
export const STORM: readonly StormWave[] = [
  { cluster: 'games-a', nodes: 150, fromS: 0, overS: 30 },
  { cluster: 'games-b', nodes: 10, fromS: 10, overS: 5 },
  { cluster: 'games-c', nodes: 10, fromS: 20, overS: 5 },
];

/** How the account's clusters share its EC2 budget. */
export type BudgetSharing = 'fair' | 'first-come';

/** Seconds simulated: long enough for the storm to be served whole. */
const HORIZON_S = 1_800;
const NODE_TYPE = 'c5.4xlarge';

/** What one cluster saw of the storm. */
export interface StormOutcome {
  readonly nodes: number;
  /** Seconds from joining until the node's pool had an address, over its nodes. */
  readonly readyP50S: number;
  readonly readyMaxS: number;
  /** Nodes still without an address at the horizon. */
  readonly notReady: number;
  /** Nodes whose own "running" event gave them an address (the others waited for a pass). */
  readonly servedByEvent: number;
  /** Budget tokens the cluster was refused: each a read of the budget, then a wait or a give-up. */
  readonly refusedTakes: number;
  readonly mutatingCalls: number;
}

/** `inner`, counting the takes it refuses. */
function counting(inner: RateBudget, refused: { count: number }): RateBudget {
  return {
    take: async (family, count) => {
      const grant = await inner.take(family, count);
      if (!grant.granted) refused.count++;
      return grant;
    },
  };
}

/** The storm's waves through one account, its budget shared as `sharing` says. */
export async function runStorm(
  waves: readonly StormWave[],
  sharing: BudgetSharing,
): Promise<Record<string, StormOutcome>> {
  const clock = new VirtualClock(START);
  const random = seededRandom(SEED + 3);
  const fake = new FakeEc2({ now: clock.now, random, recordCalls: false });
  for (const { subnetId, cidr } of SUBNETS) fake.addSubnet(subnetId, cidr);
  const budget = new InProcessSharedBudget(clock.now);
  const refused = new Map(waves.map((wave) => [wave.cluster, { count: 0 }]));
  // One berth's clusters share its EC2 client and instance-type cache, as the ENI function's do.
  const account = localEc2Account(fake);
  // Every store is in memory: the virtual clock cannot wait on a table.
  const unused = new DynamoDBClient({ region: 'us-east-1' });
  const horizon = START + HORIZON_S * 1000;
  const clusters = waves.map((wave) => {
    const cluster = new FakeClusterApi();
    const store = new InMemoryEniStore();
    const ledger = new CallLedger();
    const eni = eniRunner(
      // Every cluster at the config's defaults.
      {
        config: parseConfig({ cluster: wave.cluster }),
        dynamo: unused,
        tableName: 'unused',
        clusterApi: cluster,
        now: clock.now,
      },
      account,
      { sleep: clock.sleep, random },
      {
        store,
        capacity: new InProcessCapacityLedger(),
        // First come: every cluster draws as one, so nobody's recent draws count.
        budget: counting(
          budget.for(sharing === 'fair' ? wave.cluster : 'account'),
          refused.get(wave.cluster) ?? { count: 0 },
        ),
        onCall: (call) => ledger.record(call.action, call.at, call.outcome === 'throttled'),
      },
    );
    const joinedAt = new Map<string, number>();
    const served = { byEvent: 0 };
    for (let i = 0; i < wave.nodes; i++) {
      const name = `${wave.cluster}-node-${String(i).padStart(3, '0')}`;
      const at = START + (wave.fromS + (wave.overS * i) / wave.nodes) * 1000;
      void clock.at(at, async () => {
        const instanceId = fake.launchInstance({
          instanceType: NODE_TYPE,
          subnetId: SUBNETS[i % SUBNETS.length]?.subnetId ?? '',
        });
        cluster.withNodes(ec2Node(name, instanceId, 'us-east-1a', 110));
        joinedAt.set(name, clock.now());
        try {
          await eni.instanceStateChange({ instanceId, state: 'running' });
        } catch {
          // Lambda does not retry the ENI function: the node is the next pass's to serve.
        }
        if ((await store.loadNode(name)).ips.length > 0) served.byEvent++;
      });
    }
    // The scheduled pass; a pass still running skips its turn.
    let passing = false;
    for (let at = START; at < horizon; at += BERTH_PASS_S * 1000) {
      void clock.at(at, async () => {
        if (passing) return;
        passing = true;
        try {
          await eni.pass();
        } catch {
          // A failed pass is the next one's to make up.
        } finally {
          passing = false;
        }
      });
    }
    return { wave, store, ledger, joinedAt, served };
  });
  await clock.runUntil(horizon);

  const outcomes: Record<string, StormOutcome> = {};
  for (const { wave, store, ledger, joinedAt, served } of clusters) {
    const ready: number[] = [];
    let notReady = 0;
    for (const [node, joined] of joinedAt) {
      const { ips } = await store.loadNode(node);
      if (ips.length === 0) notReady++;
      else ready.push((Math.min(...ips.map((ip) => ip.createdAt)) - joined) / 1000);
    }
    outcomes[wave.cluster] = {
      nodes: wave.nodes,
      readyP50S: round(median(ready), 1),
      readyMaxS: round(Math.max(0, ...ready), 1),
      notReady,
      servedByEvent: served.byEvent,
      refusedTakes: refused.get(wave.cluster)?.count ?? 0,
      mutatingCalls: ledger.mutating(),
    };
  }
  return outcomes;
}
