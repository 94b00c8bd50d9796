/**
 * The ENI runners of one process, one per cluster, over one EC2 account (DynamoDB Local for the
 * table, the EC2 fake for the account): instance-type limits are learned once for them all, and
 * each cluster still pays its calls from its own share of the budget.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { eniRunner, localEc2Account } from '../../shared/app/eni-pass.js';
import { parseConfig } from '../../shared/config/schema.js';
import type { Ec2Network } from '../../shared/ec2/network.js';
import { SUBNET_CIDR, SUBNET_ID } from '../../sim/eni-world.js';
import { InProcessCapacityLedger } from '../../sim/fakes/capacity-ledger.js';
import { ec2Node, FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeEc2 } from '../../sim/fakes/ec2.js';
import { seededRandom } from '../../sim/random.js';
import { freshTable } from '../support/dynamo.js';

let table: Awaited<ReturnType<typeof freshTable>>;
beforeAll(async () => {
  table = await freshTable();
});

/** The fake, with every DescribeInstanceTypes call recorded by the types it asked for. */
function countedEc2(): { ec2: Ec2Network; described: string[][] } {
  const now = () => Date.parse('2025-06-01T00:00:00Z');
  const fake = new FakeEc2({ now, random: seededRandom(7) });
  fake.addSubnet(SUBNET_ID, SUBNET_CIDR);
  const described: string[][] = [];
  const ec2 = new Proxy(fake, {
    get(target, property, receiver) {
      if (property === 'describeInstanceTypes') {
        return (types: readonly string[]) => {
          described.push([...types]);
          return target.describeInstanceTypes(types);
        };
      }
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { ec2, described };
}

describe('the ENI runners of one process', () => {
  it('learn an instance type once for every cluster they serve', async () => {
    const { ec2, described } = countedEc2();
    const fake = ec2 as unknown as FakeEc2;
    const account = localEc2Account(ec2);
    const summaries = [];
    for (const name of ['games-a', 'games-b']) {
      const cluster = new FakeClusterApi();
      const instance = fake.launchInstance({ instanceType: 'c5.large', subnetId: SUBNET_ID });
      cluster.withNodes(ec2Node(`${name}-node`, instance));
      const runner = eniRunner(
        {
          config: parseConfig({ cluster: name, eni: { mode: 'ip' } }),
          dynamo: table.client,
          tableName: table.tableName,
          clusterApi: cluster,
        },
        account,
      );
      summaries.push(await runner.pass());
    }
    // Both pools were made: the second cluster's from limits the first one's pass learned.
    expect(summaries.map((s) => s.poolsCreated)).toEqual([1, 1]);
    expect(described).toEqual([['c5.large']]);
  });
});

describe('an ENI pass', () => {
  it('records the addresses it leaves free for the capacity view', async () => {
    const { ec2 } = countedEc2();
    const fake = ec2 as unknown as FakeEc2;
    const cluster = new FakeClusterApi();
    const instance = fake.launchInstance({ instanceType: 'c5.large', subnetId: SUBNET_ID });
    cluster.withNodes(ec2Node('capacity-node', instance));
    const capacity = new InProcessCapacityLedger();
    const runner = eniRunner(
      {
        config: parseConfig({ cluster: 'games-c', eni: { mode: 'ip' } }),
        dynamo: table.client,
        tableName: table.tableName,
        clusterApi: cluster,
      },
      localEc2Account(ec2),
      undefined,
      { capacity },
    );
    const summary = await runner.pass();
    expect(summary.idleIps).toBeGreaterThan(0);
    expect((await capacity.read(['games-c'])).get('games-c')?.eni).toMatchObject({
      source: 'eni',
      freeAddresses: summary.idleIps,
      pools: summary.pools,
    });
  });
});
