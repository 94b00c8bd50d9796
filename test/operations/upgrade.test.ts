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
import { createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import { ItemSchemaTooNewError } from '../../shared/store/errors.js';
import { SCHEMA_VERSION, SCHEMA_VERSION_ATTRIBUTE } from '../../shared/store/schema-version.js';
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
