/**
 * An upgrade as it happens in AWS: today's code deployed over a table the last released version
 * wrote. The fixture is that table, captured from the released code (a simulated day stopped
 * midway: live pods' host ports, Services' blocks and owner records, ENI pools, the scale pass's
 * memory, the EC2 budget), with what `berth status` read from it then.
 */
import { readFile } from 'node:fs/promises';
import { isDeepStrictEqual } from 'node:util';
import { type AttributeValue, QueryCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, inject, it } from 'vitest';
import { putRaw as putRawItems, scanRaw as scanRawItems } from '../../scripts/raw-table.js';
import { admit } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { eniRunner, localEc2Account } from '../../shared/app/eni-pass.js';
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { podAddressesOf, primaryInterfaceOf } from '../../shared/ec2/network.js';
import {
  foreignAddresses,
  type NodeState,
  type PoolRecord,
  prefixesOf,
} from '../../shared/eni/model.js';
import { eniTags } from '../../shared/eni/pool-actions.js';
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { ItemSchemaTooNewError } from '../../shared/store/errors.js';
import { SCHEMA_VERSION, SCHEMA_VERSION_ATTRIBUTE } from '../../shared/store/schema-version.js';
import { boundPod, ec2Node, FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeEc2 } from '../../sim/fakes/ec2.js';
import { seededRandom } from '../../sim/random.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

type Item = Record<string, AttributeValue>;

interface Layout {
  readonly layout: string;
  readonly status: {
    ranges: { name: string; kind: string; size: number; used: number }[];
    pools: { node: string; instanceId: string; enis: number; capacity: number; assigned: number }[];
  };
  readonly items: Item[];
}

/** Every released layout; a release adds its own, captured by scripts/layout-fixture.ts. */
const RELEASED = ['0.1.0', '0.2.0'];

const putRaw = (tableName: string, items: readonly Item[]) =>
  putRawItems(inject('dynamodbEndpoint'), tableName, items);
const scanRaw = (tableName: string) => scanRawItems(inject('dynamodbEndpoint'), tableName);

const keyOf = (item: Item) => `${item.pk?.S} ${item.sk?.S}`;

async function tableWrittenBy(version: string) {
  const layout = JSON.parse(
    await readFile(new URL(`../fixtures/layout/${version}.json`, import.meta.url), 'utf8'),
  ) as Layout;
  const { client, tableName } = await freshTable();
  await putRaw(tableName, layout.items);
  // The config the fixture was written under: every key at its default.
  const runtime = createRuntime({ config: parseConfig({}), dynamo: client, tableName });
  return { layout, runtime, client, tableName };
}

const poolFacts = (pools: Layout['status']['pools']) =>
  pools
    .map(({ node, instanceId, enis, capacity, assigned }) => ({
      node,
      instanceId,
      enis,
      capacity,
      assigned,
    }))
    .sort((a, b) => a.node.localeCompare(b.node));

describe.each(RELEASED)('today’s code over a table written by %s', (version) => {
  it('reads the same usage of every range and pool', async () => {
    const { layout, runtime } = await tableWrittenBy(version);
    const status = (await runtime.status()) as unknown as Layout['status'];
    expect(status.ranges.map(({ name, kind, size, used }) => ({ name, kind, size, used }))).toEqual(
      layout.status.ranges.map(({ name, kind, size, used }) => ({ name, kind, size, used })),
    );
    expect(poolFacts(status.pools)).toEqual(poolFacts(layout.status.pools));
  });

  it('gives new Services values no old owner holds, and leaves every old claim in place', async () => {
    const { layout, runtime, client, tableName } = await tableWrittenBy(version);
    const before = (await runtime.status()) as unknown as Layout['status'];
    const rangeItems = (items: Item[]) =>
      items.filter((item) => item.pk?.S?.startsWith('local#range#'));
    const created = 20;
    for (let i = 0; i < created; i += 1) {
      const { response } = await createService(`svc-${i}`, runtime);
      expect(response.allowed, response.status?.message).toBe(true);
    }
    const after = (await runtime.status()) as unknown as Layout['status'];
    for (const kind of ['clusterIP', 'nodePort']) {
      const used = (status: Layout['status']) => status.ranges.find((r) => r.kind === kind)?.used;
      expect(used(after)).toBe((used(before) ?? 0) + created);
    }
    // Every slot the old code claimed still names its old owner.
    for (const old of rangeItems(layout.items)) {
      const pk = old.pk?.S as string;
      const now = await client.send(
        new QueryCommand({
          TableName: tableName,
          KeyConditionExpression: 'pk = :pk AND sk = :sk',
          ExpressionAttributeValues: { ':pk': { S: pk }, ':sk': old.sk as AttributeValue },
        }),
      );
      const [item] = now.Items ?? [];
      for (const [attribute, value] of Object.entries(old)) {
        if (/^v\d+$/.test(attribute)) expect(item?.[attribute]).toEqual(value);
      }
    }
  });

  it("releases an old game server's host ports at its DELETE", async () => {
    const { layout, runtime } = await tableWrittenBy(version);
    const record = layout.items.find((item) => item.pk?.S === 'local#pods') as Item;
    const ports = record.ports?.L?.length ?? 0;
    expect(ports).toBeGreaterThan(0);
    const hostUsed = async () =>
      ((await runtime.status()) as unknown as Layout['status']).ranges.find(
        (r) => r.kind === 'hostPort',
      )?.used ?? 0;
    const before = await hostUsed();
    const { response } = await deletePod(record, runtime);
    expect(response.allowed).toBe(true);
    expect(await hostUsed()).toBe(before - ports);
  });

  it('stamps the schema version on every item it writes or rewrites', async () => {
    const { layout, runtime, tableName } = await tableWrittenBy(version);
    const record = layout.items.find((item) => item.pk?.S === 'local#pods') as Item;
    expect((await deletePod(record, runtime)).response.allowed).toBe(true);
    expect((await createService('svc-new', runtime)).response.allowed).toBe(true);
    const before = new Map(layout.items.map((item) => [keyOf(item), item]));
    const written = (await scanRaw(tableName)).filter(
      (item) => !isDeepStrictEqual(item, before.get(keyOf(item))),
    );
    // The pod's counts and the Service's owner record and range blocks, at least.
    expect(written.length).toBeGreaterThanOrEqual(3);
    for (const item of written) {
      expect(item[SCHEMA_VERSION_ATTRIBUTE], keyOf(item)).toEqual({ N: String(SCHEMA_VERSION) });
    }
  });

  it('refuses items a newer berth wrote, naming each and the fix, and leaves them as they were', async () => {
    const { layout, runtime, tableName } = await tableWrittenBy(version);
    const record = layout.items.find((item) => item.pk?.S === 'local#pods') as Item;
    const counts = layout.items.find((item) => item.pk?.S === 'local#hostports#default') as Item;
    const newer = { N: String(SCHEMA_VERSION + 1) };
    const planted = [record, counts].map((item) => ({
      ...item,
      [SCHEMA_VERSION_ATTRIBUTE]: newer,
    }));
    await putRaw(tableName, planted);
    const before = await scanRaw(tableName);

    const status = await runtime.status().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(status).toBeInstanceOf(ItemSchemaTooNewError);
    expect((status as Error).message).toBe(
      `table item ${counts.pk?.S} / ${counts.sk?.S} has schema version ${SCHEMA_VERSION + 1}, newer than this berth understands (${SCHEMA_VERSION}): upgrade berth to the version that wrote it (a downgrade reads and writes nothing it cannot understand; nothing was changed)`,
    );
    const deletion = await deletePod(record, runtime).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(deletion).toBeInstanceOf(ItemSchemaTooNewError);
    expect((deletion as ItemSchemaTooNewError).key).toBe(`${record.pk?.S} / ${record.sk?.S}`);

    const after = await scanRaw(tableName);
    expect(after.sort(byKey)).toEqual(before.sort(byKey));
  });
});

describe.each(RELEASED)(
  'ENI pools written by %s, once the primary ENI is the pool’s first',
  (version) => {
    /**
     * The table, and an EC2 world that matches it: each pool's instance running with the berth
     * ENIs and addresses its records name, and a primary ENI the old code never recorded, on
     * which the VPC CNI left two addresses before berth served the node; each node in the
     * cluster with the pods that hold its addresses.
     */
    async function upgradedWorld() {
      const { client, tableName } = await tableWrittenBy(version);
      const store = new DynamoEniStore({ client, tableName, cluster: 'local' });
      const pools: PoolRecord[] = [];
      for await (const pool of store.listPools()) pools.push(pool);
      const before = new Map<string, NodeState>();
      for (const pool of pools) before.set(pool.node, await store.loadNode(pool.node));
      const states = [...before.values()];
      // Just after the old code's last write: nothing has rested long enough to be trimmed.
      const clock = {
        now:
          Math.max(
            ...states.flatMap((state) =>
              state.ips.map((ip) => Math.max(ip.createdAt, ip.releasedAt, ip.assignedAt ?? 0)),
            ),
          ) + 60_000,
      };
      const fake = new FakeEc2({ now: () => clock.now });
      const cluster = new FakeClusterApi();
      for (const subnet of new Set(pools.map((pool) => `${pool.subnetId} ${pool.subnetCidr}`))) {
        const [subnetId = '', cidr = ''] = subnet.split(' ');
        fake.addSubnet(subnetId, cidr);
      }
      for (const pool of pools) {
        const state = before.get(pool.node);
        for (const eni of state?.enis ?? []) {
          const ips = state?.ips.filter((ip) => ip.eniId === eni.eniId) ?? [];
          fake.restoreInterface({
            eniId: eni.eniId,
            subnetId: eni.subnetId,
            primaryIp: eni.primaryIp ?? '',
            macAddress: eni.macAddress ?? '',
            secondaryIps: ips.filter((ip) => ip.prefix === undefined).map((ip) => ip.ip),
            ipv4Prefixes: [...prefixesOf(ips)],
            securityGroupIds: pool.securityGroupIds,
            tags: eniTags('local', pool, eni.createdAt),
            attachment: {
              attachmentId: eni.attachmentId,
              instanceId: pool.instanceId,
              deviceIndex: eni.deviceIndex,
            },
          });
        }
        for (const ip of state?.ips ?? []) {
          const [namespace = '', name = ''] =
            ip.state === 'assigned' ? (ip.pod ?? '/').split('/') : [];
          if (name) cluster.withPods(boundPod(namespace, name, pool.node));
        }
      }
      const theirs = new Map<string, string[]>();
      for (const pool of pools) {
        fake.launchInstance({
          instanceType: pool.instanceType,
          subnetId: pool.subnetId,
          instanceId: pool.instanceId,
        });
        theirs.set(pool.node, fake.occupyPrimary(pool.instanceId, 2));
        cluster.withNodes(ec2Node(pool.node, pool.instanceId, pool.availabilityZone, pool.maxPods));
      }
      const runner = eniRunner(
        {
          config: parseConfig({}),
          dynamo: client,
          tableName,
          clusterApi: cluster,
          now: () => clock.now,
        },
        localEc2Account(fake),
        {
          sleep: async (ms) => {
            clock.now += ms;
          },
          random: seededRandom(1),
        },
      );
      return { store, pools, before, theirs, fake, runner };
    }

    /**
     * Every address berth records lies on the ENI its record names in EC2, no address is on two
     * ENIs, and none berth records is one the primary ENI holds for another owner.
     */
    function expectNoAddressHeldTwice(fake: FakeEc2, states: readonly NodeState[]) {
      const onEni = new Map<string, string>();
      for (const eni of fake.allInterfaces()) {
        for (const ip of [eni.primaryIp, ...podAddressesOf(eni).keys()]) {
          expect(onEni.get(ip), ip).toBeUndefined();
          onEni.set(ip, eni.eniId);
        }
      }
      for (const state of states) {
        const foreign = new Set(state.enis.flatMap((eni) => [...foreignAddresses(eni)]));
        for (const ip of state.ips) {
          expect(onEni.get(ip.ip), ip.ip).toBe(ip.eniId);
          expect(foreign.has(ip.ip), ip.ip).toBe(false);
        }
      }
    }

    it('adopt the primary ENI, keep every old ENI and address, and grow on the primary first', async () => {
      const { store, pools, before, theirs, fake, runner } = await upgradedWorld();
      expect(pools.length).toBeGreaterThan(0);
      const summary = await runner.pass();
      expect(summary.failures).toEqual([]);
      expect(summary).toMatchObject({ enisCreated: 0, enisDeleted: 0, ipsUnassigned: 0 });
      expect(summary.reconcile.primaryEnisAdopted).toBe(pools.length);
      const after = new Map<string, NodeState>();
      for (const pool of pools) {
        const state = await store.loadNode(pool.node);
        after.set(pool.node, state);
        const old = before.get(pool.node);
        const instance = fake.instance(pool.instanceId);
        const primary = instance && primaryInterfaceOf(instance);
        expect(state.enis.filter((eni) => !eni.primary)).toEqual(old?.enis);
        expect(state.enis.find((eni) => eni.primary)).toMatchObject({
          eniId: primary?.eniId,
          deviceIndex: 0,
          foreign: theirs.get(pool.node),
        });
        const kept = new Map(state.ips.map((ip) => [ip.ip, ip]));
        for (const ip of old?.ips ?? []) {
          expect(kept.get(ip.ip), ip.ip).toMatchObject({ eniId: ip.eniId, state: ip.state });
        }
      }
      expectNoAddressHeldTwice(fake, [...after.values()]);

      // New growth goes to the primary ENI, though the old ENI has room.
      const pool = pools.reduce((a, b) =>
        (after.get(a.node)?.ips.length ?? 0) <= (after.get(b.node)?.ips.length ?? 0) ? a : b,
      );
      const primaryId = after.get(pool.node)?.enis.find((eni) => eni.primary)?.eniId;
      const api = runner.nodeIps({ request: async () => undefined });
      const free = after.get(pool.node)?.ips.filter((ip) => ip.state === 'free').length ?? 0;
      for (let i = 0; i <= free; i++) {
        const answer = await api.assign(pool.node, { namespace: 'upgrade', pod: `gs-${i}` });
        expect(answer).toMatchObject({ ip: expect.any(String) });
      }
      const grown = await store.loadNode(pool.node);
      const added = grown.ips.filter(
        (ip) => !before.get(pool.node)?.ips.some((o) => o.ip === ip.ip),
      );
      expect(added.length).toBeGreaterThan(0);
      expect(new Set(added.map((ip) => ip.eniId))).toEqual(new Set([primaryId]));
      expect(fake.counts.get('CreateNetworkInterface') ?? 0).toBe(0);
      after.set(pool.node, grown);
      expectNoAddressHeldTwice(fake, [...after.values()]);
    });
  },
);

const byKey = (a: Item, b: Item) => keyOf(a).localeCompare(keyOf(b));

type Runtime = Awaited<ReturnType<typeof tableWrittenBy>>['runtime'];

/** The DELETE of the game server whose owner record is `record`. */
function deletePod(record: Item, runtime: Runtime) {
  return admit(
    parseAdmissionReview(
      review({
        resource: 'pods',
        operation: 'DELETE',
        namespace: record.namespace?.S as string,
        name: record.name?.S as string,
        oldObject: {
          kind: 'Pod',
          metadata: {
            name: record.name?.S,
            namespace: record.namespace?.S,
            labels: { 'berth.dev/game-server': 'true' },
            annotations: { 'berth.dev/allocation-id': record.sk?.S },
          },
          spec: { containers: [{ name: 'server' }] },
        },
      }),
    ),
    runtime.admission,
  );
}

/** The CREATE of a NodePort Service. */
function createService(name: string, runtime: Runtime) {
  return admit(
    parseAdmissionReview(
      review({
        resource: 'services',
        operation: 'CREATE',
        namespace: 'upgrade',
        name,
        object: {
          kind: 'Service',
          metadata: { name, namespace: 'upgrade' },
          spec: { type: 'NodePort', ports: [{ port: 80, protocol: 'TCP' }] },
        },
      }),
    ),
    runtime.admission,
  );
}
