/**
 * Fuzzed admission requests, as anyone who may create pods or Services can send them through the
 * apiserver (and anyone who reaches the URL can send directly): well-formed reviews with every
 * field of every kind wrong, deep and oversized JSON, ids of every shape, and bodies that are not
 * reviews at all. Shared by the fuzz test (a fixed-seed slice) and `npm run bench -- fuzz`.
 */

import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import fc from 'fast-check';
import { rangeKey } from '../../shared/allocation/allocator.js';
import { type BerthRuntime, createRuntime } from '../../shared/app/runtime.js';
import { parseConfig } from '../../shared/config/schema.js';
import type { RunningServer } from '../../shared/local/server.js';
import { BLOCK_SIZE } from '../../shared/net/offset.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { serveRuntime } from './serve-runtime.js';

/** One request body, and the uid the answer must carry when it is a review. */
export interface FuzzCase {
  readonly body: string;
  /** Set when the body is a well-formed review: a 200 must answer with this uid. */
  readonly uid?: string;
  readonly dryRun: boolean;
}

const junk = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 12 }),
  fc.constant(''),
  fc.constant(-1),
  fc.constant(2 ** 53),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 3 }),
);

/** Mostly a value of the right shape, sometimes junk: deep enough to reach every handler. */
const maybe = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<T | unknown> =>
  fc.oneof({ weight: 8, arbitrary: valid }, { weight: 1, arbitrary: junk });

/** A JSON value nested `depth` deep: arrays or objects. */
const deep = (depth: number, asObject: boolean): string =>
  asObject
    ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`
    : `${'['.repeat(depth)}${']'.repeat(depth)}`;

const allocationId = fc.oneof(
  fc.constant(''),
  fc.constant('x'.repeat(1500)),
  fc.constant('a'.repeat(20)),
  fc.stringMatching(/^[a-z2-7]{20}$/),
  fc.string({ maxLength: 40 }),
  fc.constant('../../etc/passwd'),
);

const portSpec = fc.record(
  {
    name: maybe(fc.constantFrom('game', 'query', 'rcon', 'GAME', 'a-b', '')),
    container: maybe(fc.constantFrom('server', 'sidecar', 'nope')),
    containerPort: maybe(fc.integer({ min: -5, max: 70_000 })),
    portPolicy: maybe(fc.constantFrom('Dynamic', 'Static', 'Passthrough', 'None', '')),
    protocol: maybe(fc.constantFrom('UDP', 'TCP', 'TCPUDP', 'SCTP')),
    hostPort: maybe(fc.integer({ min: -5, max: 70_000 })),
    range: maybe(fc.constantFrom('default', 'other')),
    extra: junk,
  },
  { requiredKeys: [] },
);

const portsAnnotation = fc.oneof(
  fc.array(portSpec, { maxLength: 4 }).map((specs) => JSON.stringify(specs)),
  fc.constant(JSON.stringify([{ name: 'game', containerPort: 7777 }])),
  fc.integer({ min: 1_000, max: 20_000 }).map((depth) => deep(depth, false)),
  fc.integer({ min: 1_000, max: 20_000 }).map((depth) => deep(depth, true)),
  fc.constant(JSON.stringify([{ name: 'x'.repeat(5000), containerPort: 1 }])),
  fc.constant(
    JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ name: `p${i}`, containerPort: 1 }))),
  ),
  fc.string({ maxLength: 30 }),
  fc.constant('{"name":"game"}'),
  fc.constant('[{"name":"game","containerPort":7777}'),
);

const container = fc.record(
  {
    name: maybe(fc.constantFrom('server', 'sidecar')),
    image: fc.constant('game:1'),
    ports: fc.array(
      fc.oneof(
        fc.record({ name: junk, containerPort: junk, protocol: junk }, { requiredKeys: [] }),
        // Entries that are no port at all: the patch carries them along.
        junk,
      ),
      { maxLength: 2 },
    ),
    env: maybe(fc.constant([])),
  },
  { requiredKeys: ['name'] },
);

/**
 * A value far larger than Kubernetes allows and than a DynamoDB item holds (400 KB): mutating
 * admission sees it before the apiserver validates anything.
 */
const oversized = (letter: string) => fc.constant(letter.repeat(450_000));

const metadata = (kind: 'pod' | 'service') =>
  fc.record(
    {
      name: maybe(
        fc.oneof(
          { weight: 60, arbitrary: fc.constantFrom('a', 'b', 'gs-1', '') },
          { weight: 10, arbitrary: fc.string({ maxLength: 300 }) },
          { weight: 1, arbitrary: oversized('n') },
        ),
      ),
      namespace: maybe(
        fc.oneof(
          { weight: 60, arbitrary: fc.constantFrom('default', 'games') },
          { weight: 1, arbitrary: oversized('s') },
        ),
      ),
      uid: maybe(fc.uuid()),
      generateName: maybe(
        fc.oneof(
          { weight: 60, arbitrary: fc.constantFrom('gs-', 'game-') },
          { weight: 1, arbitrary: oversized('g') },
        ),
      ),
      annotations: maybe(
        fc.record(
          {
            'berth.dev/allocation-id': allocationId,
            ...(kind === 'pod'
              ? {
                  'berth.dev/ports': portsAnnotation,
                  'berth.dev/scheduling': maybe(fc.constant('Distributed')),
                }
              : {}),
          },
          { requiredKeys: [] },
        ),
      ),
      labels: maybe(fc.constant({ app: 'x' })),
    },
    { requiredKeys: [] },
  );

const pod = fc.record(
  {
    apiVersion: fc.constant('v1'),
    kind: fc.constant('Pod'),
    metadata: maybe(metadata('pod')),
    spec: maybe(
      fc.record(
        {
          containers: maybe(fc.array(container, { maxLength: 3 })),
          initContainers: maybe(fc.array(container, { maxLength: 1 })),
          affinity: junk,
          nodeName: maybe(fc.constant('node-1')),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

const servicePort = fc.record(
  {
    name: maybe(fc.constantFrom('http', 'game', '')),
    port: maybe(fc.integer({ min: -1, max: 70_000 })),
    protocol: maybe(fc.constantFrom('TCP', 'UDP', 'SCTP')),
    nodePort: fc.oneof(
      fc.integer({ min: -1, max: 70_000 }),
      fc.integer({ min: 30_000, max: 30_100 }),
    ),
    targetPort: junk,
  },
  { requiredKeys: [] },
);

const ip = fc.oneof(
  fc.constantFrom(
    '',
    'None',
    '10.100.0.10',
    '10.100.255.255',
    '10.200.0.1',
    'fd00::1',
    '::',
    '1.2.3',
  ),
  fc.ipV4(),
  fc.ipV6(),
  fc.string({ maxLength: 20 }),
);

const service = fc.record(
  {
    apiVersion: fc.constant('v1'),
    kind: fc.constant('Service'),
    metadata: maybe(metadata('service')),
    spec: maybe(
      fc.record(
        {
          type: fc.oneof(fc.constantFrom('ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName')),
          clusterIP: maybe(ip),
          clusterIPs: maybe(fc.array(ip, { maxLength: 3 })),
          ipFamilies: fc.oneof(fc.array(fc.constantFrom('IPv4', 'IPv6', 'IPv5'), { maxLength: 3 })),
          ipFamilyPolicy: fc.oneof(
            fc.constantFrom('SingleStack', 'PreferDualStack', 'RequireDualStack'),
          ),
          ports: maybe(fc.array(servicePort, { maxLength: 4 })),
          externalTrafficPolicy: maybe(fc.constantFrom('Local', 'Cluster')),
          healthCheckNodePort: maybe(fc.integer({ min: -1, max: 70_000 })),
          allocateLoadBalancerNodePorts: maybe(fc.boolean()),
          externalName: maybe(fc.constant('example.com')),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { requiredKeys: [] },
);

const binding = fc.record({
  apiVersion: fc.constant('v1'),
  kind: fc.constant('Binding'),
  metadata: maybe(fc.record({ name: maybe(fc.constant('gs-1')) })),
  target: maybe(fc.record({ kind: fc.constant('Node'), name: maybe(fc.constant('node-1')) })),
});

const target = fc.oneof(
  fc.record({
    resource: fc.constant('pods'),
    subResource: fc.constant(''),
    object: pod,
    oldObject: pod,
  }),
  fc.record({
    resource: fc.constant('services'),
    subResource: fc.constant(''),
    object: service,
    oldObject: service,
  }),
  fc.record({
    resource: fc.constant('pods'),
    subResource: fc.constant('binding'),
    object: binding,
    oldObject: maybe(fc.constant(null)),
  }),
  fc.record({
    resource: fc.constantFrom('configmaps', 'services'),
    subResource: fc.constantFrom('status', ''),
    object: maybe(fc.constant({ kind: 'ConfigMap', data: { a: 'b' } })),
    oldObject: maybe(fc.constant(null)),
  }),
);

const fuzzedReview = fc
  .record({
    target,
    operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT'),
    namespace: fc.oneof(
      { weight: 30, arbitrary: fc.constantFrom('default', 'games') },
      { weight: 30, arbitrary: fc.string({ maxLength: 300 }) },
      { weight: 1, arbitrary: oversized('s') },
    ),
    name: fc.oneof(
      { weight: 50, arbitrary: fc.constantFrom('a', 'b', 'gs-1', '') },
      { weight: 10, arbitrary: fc.string({ maxLength: 300 }) },
      { weight: 1, arbitrary: oversized('n') },
    ),
    dryRun: fc.boolean(),
    dropObject: fc.boolean(),
  })
  .map(({ target: t, operation, namespace, name, dryRun, dropObject }): FuzzCase => {
    const uid = randomUUID();
    const request = {
      uid,
      kind: { group: '', version: 'v1', kind: 'Object' },
      resource: { group: '', version: 'v1', resource: t.resource },
      ...(t.subResource ? { subResource: t.subResource } : {}),
      name,
      namespace,
      operation,
      userInfo: { username: 'fuzz' },
      object: dropObject && operation === 'DELETE' ? null : t.object,
      oldObject: operation === 'CREATE' ? null : t.oldObject,
      dryRun,
    };
    return {
      body: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }),
      uid,
      dryRun,
    };
  });

const malformed: fc.Arbitrary<FuzzCase> = fc
  .oneof(
    fc.string({ maxLength: 50 }),
    fc.constant(''),
    fc.constant('null'),
    fc.constant('[]'),
    fc.integer({ min: 1_000, max: 50_000 }).map((depth) => deep(depth, true)),
    fc.constant(JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' })),
    fc.constant(
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { uid: '' },
      }),
    ),
    junk.map((request) =>
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }),
    ),
    fc
      .record({ uid: junk, resource: junk, operation: junk })
      .map((request) =>
        JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }),
      ),
  )
  .map((body) => ({ body, dryRun: false }));

/**
 * Well-formed CREATEs of game-server pods and Services, named or with generateName, some asking
 * for values others hold: the cases that allocate, so the held-by-denied rule is put to work.
 */
const plausible: fc.Arbitrary<FuzzCase> = fc
  .record({
    pod: fc.boolean(),
    named: fc.boolean(),
    namespace: fc.constantFrom('default', 'games'),
    clusterIP: fc.option(fc.constantFrom('10.100.0.10', '10.100.0.11')),
    nodePort: fc.option(fc.integer({ min: 30_000, max: 30_003 })),
    dryRun: fc.boolean(),
  })
  .map(({ pod: isPod, named, namespace, clusterIP, nodePort, dryRun }): FuzzCase => {
    const uid = randomUUID();
    const name = named ? `fuzz-${uid.slice(0, 8)}` : '';
    const metadata = {
      ...(named ? { name } : { generateName: 'fuzz-' }),
      namespace,
      ...(isPod
        ? { annotations: { 'berth.dev/ports': '[{"name":"game","containerPort":7777}]' } }
        : {}),
    };
    const object = isPod
      ? { apiVersion: 'v1', kind: 'Pod', metadata, spec: { containers: [{ name: 'server' }] } }
      : {
          apiVersion: 'v1',
          kind: 'Service',
          metadata,
          spec: {
            type: 'NodePort',
            ...(clusterIP ? { clusterIP } : {}),
            ports: [{ name: 'game', port: 80, ...(nodePort ? { nodePort } : {}) }],
          },
        };
    const request = {
      uid,
      kind: { group: '', version: 'v1', kind: isPod ? 'Pod' : 'Service' },
      resource: { group: '', version: 'v1', resource: isPod ? 'pods' : 'services' },
      name,
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'fuzz' },
      object,
      oldObject: null,
      dryRun,
    };
    return {
      body: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }),
      uid,
      dryRun,
    };
  });

/** Every kind of body, reviews most of the time. */
export const fuzzCase: fc.Arbitrary<FuzzCase> = fc.oneof(
  { weight: 8, arbitrary: fuzzedReview },
  { weight: 2, arbitrary: malformed },
  { weight: 1, arbitrary: plausible },
);

/** What one answer was, for the counts. */
export interface FuzzOutcome {
  readonly status: number;
  /** `allowed`, `denied <code>`, or `http` for a non-review answer. */
  readonly verdict: string;
  /** Why the answer breaks the rules, if it does. */
  readonly violation?: string;
  /** Allocation ids an allowed, stored (not dry-run) answer patched onto its object. */
  readonly ids: readonly string[];
}

/** Posts one case and judges the answer. */
export async function sendCase(url: string, fuzz: FuzzCase): Promise<FuzzOutcome> {
  const response = await fetch(`${url}/admission`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: fuzz.body,
  });
  const text = await response.text();
  const status = response.status;
  if (status >= 500)
    return { status, verdict: 'http', violation: `HTTP ${status}: ${text.slice(0, 200)}`, ids: [] };
  if (status !== 200) return { status, verdict: 'http', ids: [] };
  let answer: {
    response?: { uid?: string; allowed?: boolean; patch?: string; status?: { code?: number } };
  };
  try {
    answer = JSON.parse(text);
  } catch {
    return { status, verdict: 'http', violation: 'a 200 that is not JSON', ids: [] };
  }
  const reply = answer.response;
  if (!reply || (fuzz.uid !== undefined && reply.uid !== fuzz.uid)) {
    return { status, verdict: 'http', violation: 'a 200 without the request uid', ids: [] };
  }
  if (!reply.allowed) return { status, verdict: `denied ${reply.status?.code ?? '?'}`, ids: [] };
  const patched = fuzz.dryRun ? '' : JSON.stringify(decodePatch(reply.patch));
  return { status, verdict: 'allowed', ids: patched.match(/[a-z2-7]{20}/g) ?? [] };
}

/** The server the cases go to: berth's HTTP surface on loopback, on a table of its own. */
export interface FuzzTarget {
  readonly server: RunningServer;
  readonly runtime: BerthRuntime;
  /** Internal faults the server answered 500 for (there must be none). */
  readonly internalFaults: unknown[];
}

/** Starts the real HTTP surface over `tableName`, with two host port ranges to aim at. */
export async function startFuzzTarget(
  dynamo: DynamoDBClient,
  tableName: string,
): Promise<FuzzTarget> {
  const runtime = createRuntime({
    config: parseConfig({
      cluster: 'fuzz',
      hostPortRanges: { default: '7000-7100', other: '8100-8110' },
    }),
    dynamo,
    tableName,
  });
  const { server, internalFaults } = await serveRuntime(runtime);
  return { server, runtime, internalFaults };
}

/** Allocation ids held in the store after a run: owner records, block holders and pod records. */
export async function heldAllocationIds(runtime: BerthRuntime): Promise<string[]> {
  const held = new Set<string>();
  for await (const owner of runtime.allocationStore.listOwners()) held.add(owner.id);
  // A named Service's CREATE writes no owner record: its id is in the blocks it claimed.
  for (const range of [...runtime.ranges.clusterIps, runtime.ranges.nodePorts]) {
    const last = Math.floor((range.size - 1) / BLOCK_SIZE);
    for await (const block of runtime.allocationStore.scanBlocks(rangeKey(range), 0, last)) {
      for (const id of block.holders.values()) held.add(id);
    }
  }
  for await (const record of runtime.hostPortStore.listRecords()) held.add(record.id);
  return [...held];
}

/** What one generateName round did. */
export interface GenerateNameRound {
  /** Copies admitted as the original (its id or values): two live owners of one value. */
  readonly twoOwners: readonly string[];
  /** Answers that were not a 200 review (a 5xx among them is berth's fault). */
  readonly failures: readonly string[];
  /** Allocation ids the round's allowed answers patched on, for the held-by-denied check. */
  readonly ids: readonly string[];
}

type Json = Record<string, unknown>;

/** Posts one review; the answer's `response`, or why there is none. */
async function post(url: string, body: unknown): Promise<Json | string> {
  const answer = await fetch(`${url}/admission`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await answer.text();
  if (answer.status !== 200) return `HTTP ${answer.status}: ${text.slice(0, 200)}`;
  return (JSON.parse(text) as { response: Json }).response;
}

const idOf = (object: Json): string =>
  ((object.metadata as Json | undefined)?.annotations as Json | undefined)?.[
    'berth.dev/allocation-id'
  ] as string;

/**
 * One round of generateName identity over HTTP: a Service and a game-server pod created with
 * generateName, the same request seen again (same uid, the patched object), then a copy of each
 * stored object (`kubectl get -o json`, name, uid and resourceVersion dropped, generateName kept)
 * under another request. A copy is a new object: the Service is denied 409 (its values are
 * taken), the pod gets an id of its own.
 */
export async function generateNameRound(url: string, round: number): Promise<GenerateNameRound> {
  const twoOwners: string[] = [];
  const failures: string[] = [];
  const ids: string[] = [];
  const objects: [resource: 'pods' | 'services', object: Json][] = [
    [
      'services',
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { generateName: 'game-', namespace: 'default' },
        spec: { type: 'NodePort', ports: [{ name: 'game', port: 80, protocol: 'TCP' }] },
      },
    ],
    [
      'pods',
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          generateName: 'gs-',
          namespace: 'default',
          annotations: { 'berth.dev/ports': JSON.stringify([{ name: 'game', containerPort: 7 }]) },
        },
        spec: { containers: [{ name: 'server', image: 'game:1' }] },
      },
    ],
  ];
  for (const [resource, object] of objects) {
    const first = review({ resource, operation: 'CREATE', object });
    const created = await post(url, first);
    if (typeof created === 'string' || created.allowed !== true) {
      failures.push(`${resource} CREATE: ${JSON.stringify(created).slice(0, 200)}`);
      continue;
    }
    const admitted = applyPatch(object, decodePatch(created.patch as string | undefined)) as Json;
    const id = idOf(admitted);
    ids.push(id);
    const again = await post(
      url,
      review({ resource, operation: 'CREATE', object: admitted, uid: first.request.uid }),
    );
    if (typeof again === 'string' || again.allowed !== true) {
      failures.push(`${resource} seen again: ${JSON.stringify(again).slice(0, 200)}`);
    }
    // The stored object less its name, uid and resourceVersion is the admitted one.
    const copy = structuredClone(admitted);
    const copied = await post(url, review({ resource, operation: 'CREATE', object: copy }));
    if (typeof copied === 'string') {
      failures.push(`${resource} copy: ${copied}`);
      continue;
    }
    if (copied.allowed !== true) {
      const code = (copied.status as Json | undefined)?.code;
      if (resource === 'pods' || code !== 409) failures.push(`${resource} copy denied ${code}`);
      continue;
    }
    const copyId = idOf(applyPatch(copy, decodePatch(copied.patch as string | undefined)) as Json);
    ids.push(copyId);
    if (resource === 'services' || copyId === id) {
      twoOwners.push(`round ${round}: a copy of ${resource} ${id} was admitted as ${copyId}`);
    }
  }
  return { twoOwners, failures, ids };
}
