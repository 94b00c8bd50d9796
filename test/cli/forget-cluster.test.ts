/**
 * `berth forget-cluster`: two clusters share a table, each with real items written by berth's
 * own code (admission of a Service and a game server, a lease); forgetting one lists, then
 * deletes exactly its items, and the other's still answer.
 */
import { ScanCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { main } from '../../cli/main.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { clusterItems } from '../../shared/store/cluster-items.js';
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { DynamoLease } from '../../shared/store/dynamo-lease.js';
import { DynamoRateBudget } from '../../shared/store/dynamo-rate-budget.js';
import { review } from '../../sim/reviews.js';
import { gamePod } from '../hostports/support.js';
import { captureOutput } from '../support/capture.js';
import { freshTable } from '../support/dynamo.js';

afterEach(() => {
  vi.restoreAllMocks();
});

async function populate(
  client: Parameters<typeof createRuntime>[0]['dynamo'],
  tableName: string,
  cluster: string,
) {
  const runtime = createRuntime({ config: parseConfig({ cluster }), dynamo: client, tableName });
  const service = {
    metadata: { name: 'web', namespace: 'default' },
    spec: { type: 'NodePort', ports: [{ port: 80 }] },
  };
  await runtime.admission.services(
    parseAdmissionReview(
      review({
        resource: 'services',
        operation: 'CREATE',
        namespace: 'default',
        name: 'web',
        object: service,
      }),
    ),
  );
  await runtime.admission.pods(
    parseAdmissionReview(
      review({
        resource: 'pods',
        operation: 'CREATE',
        namespace: 'games',
        name: 'gs-1',
        object: gamePod('gs-1'),
      }),
    ),
  );
  await new DynamoLease({ client, tableName, cluster, now: Date.now }).acquireLease(
    'repair',
    'me',
    60_000,
  );
  return runtime;
}

async function count(
  client: Parameters<typeof clusterItems>[0],
  tableName: string,
  cluster: string,
) {
  let n = 0;
  for await (const _ of clusterItems(client, tableName, cluster)) n++;
  return n;
}

describe('berth forget-cluster', () => {
  it('lists a cluster’s items on a dry run, deletes exactly them with --yes, and leaves the other cluster whole', async () => {
    const { client, tableName } = await freshTable();
    await populate(client, tableName, 'games-a');
    const other = await populate(client, tableName, 'games-b');
    const before = {
      a: await count(client, tableName, 'games-a'),
      b: await count(client, tableName, 'games-b'),
    };
    expect(before.a).toBeGreaterThanOrEqual(3);
    const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', tableName];

    let io = captureOutput();
    expect(await main(['forget-cluster', 'games-a', '--json', ...store])).toBe(0);
    const dry = JSON.parse(io.out());
    expect(dry).toMatchObject({ cluster: 'games-a', items: before.a, deleted: 0, dryRun: true });
    expect(Object.keys(dry.byKind)).toEqual(expect.arrayContaining(['lease']));
    expect(await count(client, tableName, 'games-a')).toBe(before.a);
    vi.restoreAllMocks();

    io = captureOutput();
    expect(await main(['forget-cluster', 'games-a', '--yes', ...store])).toBe(0);
    expect(io.out()).toMatch(
      new RegExp(`^cluster games-a owns ${before.a} items in ${tableName}:\\n`),
    );
    expect(io.out()).toMatch(/deleted \d+; the table holds nothing of games-a now\n$/);
    expect(await count(client, tableName, 'games-a')).toBe(0);
    expect(await count(client, tableName, 'games-b')).toBe(before.b);
    // games-b's values still answer.
    const status = await other.status();
    expect(status.ranges.find((r) => r.kind === 'nodePort')?.used).toBe(1);
  });

  it('leaves what the clusters share, whatever the forgotten cluster is called', async () => {
    const { client, tableName } = await freshTable();
    // The account's EC2 budget and the subnet marks, written by berth's own stores.
    const budget = new DynamoRateBudget({
      client,
      tableName,
      cluster: 'games-a',
      scope: 'eu-west-1',
      now: () => 1,
    });
    await budget.take('interfaces');
    await new DynamoEniStore({ client, tableName, cluster: 'games-a' }).markSubnetShort(
      'subnet-0abc',
      'prefixes',
      Date.now() + 60_000,
    );
    const shared = async () => {
      const out = await client.send(new ScanCommand({ TableName: tableName }));
      return (out.Items ?? []).map((item) => item.pk?.S).sort();
    };
    const before = await shared();
    expect(before).toHaveLength(2);
    for (const name of ['eni', 'ec2-budget', 'games-a']) {
      expect(await count(client, tableName, name)).toBe(0);
      captureOutput();
      const store = ['--dynamodb-endpoint', inject('dynamodbEndpoint'), '--table', tableName];
      expect(await main(['forget-cluster', name, '--yes', ...store])).toBe(0);
      vi.restoreAllMocks();
    }
    expect(await shared()).toEqual(before);
  });

  it('refuses a name that is not a cluster name, saying why', async () => {
    const io = captureOutput();
    expect(
      await main([
        'forget-cluster',
        'Games_A',
        '--table',
        't',
        '--dynamodb-endpoint',
        inject('dynamodbEndpoint'),
      ]),
    ).toBe(2);
    expect(io.err()).toMatch(/forget-cluster: "Games_A" is not a cluster name/);
  });
});
