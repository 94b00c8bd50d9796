import { randomBytes } from 'node:crypto';
import type { V1Service } from '@kubernetes/client-node';
import { beforeEach, describe, expect, it } from 'vitest';
import { type AdmissionHandlers, admit } from '../../shared/admission/dispatch.js';
import { allow } from '../../shared/admission/response.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { serviceAdmission } from '../../shared/admission/services.js';
import { ExclusiveAllocator, rangeKey } from '../../shared/allocation/allocator.js';
import { OwnerVersionConflictError } from '../../shared/allocation/store.js';
import { exclusiveRangeUsage } from '../../shared/allocation/usage.js';
import { parseCidr } from '../../shared/net/ip.js';
import { type PortRange, parsePortRange } from '../../shared/net/port-range.js';
import { clusterIpRange, nodePortRange, type ValueRange } from '../../shared/net/value-range.js';
import type { ServiceRanges } from '../../shared/services/plan.js';
import { settleTiming } from '../../shared/settle/policy.js';
import { settleStep } from '../../shared/settle/step.js';
import type { SettleTask } from '../../shared/settle/task.js';
import { DynamoAllocationStore } from '../../shared/store/dynamo-allocation-store.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { applyPatch, decodePatch } from '../../sim/fakes/json-patch.js';
import { review } from '../../sim/reviews.js';
import { freshTable } from '../support/dynamo.js';

/** The Service fields these tests read and write; everything else passes through untyped. */
interface Obj {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    generateName?: string;
    annotations?: Record<string, string>;
  };
  spec: {
    type?: string;
    clusterIP?: string;
    clusterIPs?: string[];
    ipFamilies?: string[];
    ipFamilyPolicy?: string;
    ports: Array<{
      name?: string;
      port: number;
      protocol?: string;
      nodePort?: number;
      targetPort?: unknown;
    }>;
    healthCheckNodePort?: number;
    [field: string]: unknown;
  };
}
type Ports = Obj['spec']['ports'];

const ipRange = (text: string) =>
  clusterIpRange(
    parseCidr(text) ??
      (() => {
        throw new Error(text);
      })(),
  );
const portRange = (text: string) => nodePortRange(parsePortRange(text) as PortRange);

let handlers: AdmissionHandlers;
let store: DynamoAllocationStore;
let allocator: ExclusiveAllocator;
let ranges: ServiceRanges;
/** The test's clock, epoch ms. */
let clock: number;
/** Settle tasks admission handed over, in order. */
let tasks: SettleTask[];

async function setUp(cidrs: string[] = ['10.100.0.0/16'], ports = '30000-32767') {
  const { client, tableName } = await freshTable();
  store = new DynamoAllocationStore({ client, tableName, cluster: 'test' });
  clock = Date.parse('2026-11-24T12:00:00Z');
  tasks = [];
  allocator = new ExclusiveAllocator({ store, random: Math.random, now: () => clock });
  ranges = { clusterIps: cidrs.map(ipRange), nodePorts: portRange(ports) };
  handlers = {
    services: serviceAdmission({
      allocator,
      ranges,
      randomBytes: (n) => randomBytes(n),
      now: () => clock,
      settler: {
        track: async (task) => {
          tasks.push(task);
        },
      },
    }),
    pods: async () => allow(),
    podBinding: async () => allow(),
  };
}

/**
 * Runs the settle step once for every task handed over so far, against `stored`: the Services
 * the apiserver has committed. Tasks that ask for another look stay queued.
 */
async function settle(...stored: Obj[]) {
  const cluster = new FakeClusterApi().withServices(...(stored as V1Service[]));
  const deps = { allocator, cluster, ranges, timing: settleTiming(5), now: () => clock };
  const looked = tasks;
  tasks = [];
  for (const task of looked) {
    const outcome = await settleStep(deps, task);
    if (outcome.recheckAfter !== undefined) tasks.push({ ...task, attempt: task.attempt + 1 });
  }
}

function service(
  name: string,
  spec: Partial<Obj['spec']> = {},
  metadata: Partial<Obj['metadata']> = {},
): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', ...metadata },
    spec: {
      selector: { app: name },
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
      ...spec,
    },
  };
}

async function send(
  operation: 'CREATE' | 'UPDATE' | 'DELETE',
  object: Obj | undefined,
  oldObject?: Obj,
  dryRun = false,
  uid?: string,
) {
  const body = review({
    resource: 'services',
    operation,
    object,
    oldObject,
    dryRun,
    name: (object ?? oldObject)?.metadata.name,
  });
  // The same request seen again (an apiserver's retry of its call) carries the same uid.
  if (uid !== undefined) (body.request as { uid: string }).uid = uid;
  const { response } = await admit(parseAdmissionReview(body), handlers);
  expect(response.uid).toBe(body.request.uid);
  return response;
}

/** CREATE, and the object as the apiserver would store it (patched, with a uid). */
async function create(object: Obj, dryRun = false): Promise<Obj> {
  const response = await send('CREATE', object, undefined, dryRun);
  expect(response.status?.message).toBeUndefined();
  expect(response.allowed).toBe(true);
  const stored = applyPatch(object, decodePatch(response.patch));
  stored.metadata.uid = `uid-${stored.metadata.name}`;
  return stored;
}

async function denial(operation: 'CREATE' | 'UPDATE', object: Obj, oldObject?: Obj) {
  const response = await send(operation, object, oldObject);
  expect(response.allowed).toBe(false);
  return response.status;
}

describe('Service admission', () => {
  beforeEach(async () => {
    await setUp();
  });

  it('allocates a cluster IP from the upper band and writes every IP field', async () => {
    const stored = await create(service('web'));
    const range = ipRange('10.100.0.0/16');
    expect(range.offsetOf(stored.spec.clusterIP ?? '')).toBeGreaterThanOrEqual(256);
    expect(stored.spec.clusterIPs).toEqual([stored.spec.clusterIP]);
    expect(stored.spec.ipFamilies).toEqual(['IPv4']);
    expect(stored.spec.ipFamilyPolicy).toBe('SingleStack');
    expect(stored.metadata.annotations?.['berth.dev/allocation-id']).toMatch(/^[a-z2-7]{20}$/);
  });

  it('honours a requested cluster IP and denies it to a second Service with 409', async () => {
    const stored = await create(service('a', { clusterIP: '10.100.0.10' }));
    expect(stored.spec.clusterIPs).toEqual(['10.100.0.10']);
    expect(await denial('CREATE', service('b', { clusterIP: '10.100.0.10' }))).toEqual({
      code: 409,
      message: 'spec.clusterIPs[0]: Invalid value: "10.100.0.10": provided IP is already allocated',
    });
  });

  it('starts the denial of a malformed Service with the path of what is wrong, the whole object included', async () => {
    const body = review({ resource: 'services', operation: 'CREATE', object: null, name: 'x' });
    const { response } = await admit(parseAdmissionReview(body), handlers);
    expect(response.status).toMatchObject({
      code: 422,
      message: expect.stringMatching(/^object: /),
    });
    const badPorts = service('p', { ports: [null] as unknown as Obj['spec']['ports'] });
    expect((await denial('CREATE', badPorts))?.message).toMatch(/^spec\.ports\[0\]: /);
  });

  it('denies a requested cluster IP outside the range with 422 and the kube text', async () => {
    expect(await denial('CREATE', service('c', { clusterIPs: ['10.200.0.1'] }))).toEqual({
      code: 422,
      message:
        'spec.clusterIPs[0]: Invalid value: "10.200.0.1": the provided IP (10.200.0.1) is not in the valid range. The range of valid IPs is 10.100.0.0/16',
    });
    expect((await denial('CREATE', service('d', { clusterIP: 'bogus' })))?.message).toMatch(
      /^spec.clusterIPs\[0\]: Invalid value: "bogus": must be a valid IP address/,
    );
  });

  it('allocates nothing for headless and ExternalName Services', async () => {
    expect(decodePatch((await send('CREATE', service('h', { clusterIP: 'None' }))).patch)).toEqual(
      [],
    );
    expect(
      decodePatch(
        (await send('CREATE', service('e', { type: 'ExternalName', externalName: 'x.example' })))
          .patch,
      ),
    ).toEqual([]);
  });

  it('answers range is full with 409 when the CIDR has no free address', async () => {
    await setUp(['10.7.0.0/29']);
    for (let i = 0; i < 6; i++) await create(service(`s${i}`));
    const status = await denial('CREATE', service('s6'));
    expect(status?.code).toBe(409);
    expect(status?.message).toBe(
      'spec.clusterIPs[0]: failed to allocate a serviceIP: range is full',
    );
  });

  it('allocates node ports from the upper band and honours requested ones', async () => {
    const stored = await create(
      service('np', {
        type: 'NodePort',
        ports: [
          { name: 'a', port: 80, protocol: 'TCP' },
          { name: 'b', port: 81, protocol: 'TCP', nodePort: 30005 },
        ],
      }),
    );
    expect(stored.spec.ports[0]?.nodePort).toBeGreaterThanOrEqual(30086);
    expect(stored.spec.ports[1]?.nodePort).toBe(30005);
    expect(
      await denial(
        'CREATE',
        service('np2', { type: 'NodePort', ports: [{ port: 1, nodePort: 30005 }] }),
      ),
    ).toEqual({
      code: 409,
      message: 'spec.ports[0].nodePort: Invalid value: 30005: provided port is already allocated',
    });
    expect(
      await denial(
        'CREATE',
        service('np3', { type: 'NodePort', ports: [{ port: 1, nodePort: 80 }] }),
      ),
    ).toEqual({
      code: 422,
      message:
        'spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767',
    });
  });

  it('shares one node port between entries with the same port number and different protocols', async () => {
    const stored = await create(
      service('dns', {
        type: 'NodePort',
        ports: [
          { name: 'dns-tcp', port: 53, protocol: 'TCP' },
          { name: 'dns-udp', port: 53, protocol: 'UDP' },
        ],
      }),
    );
    expect(stored.spec.ports[0]?.nodePort).toBe(stored.spec.ports[1]?.nodePort);
    // One node port held for the Service, in the blocks (its CREATE wrote no owner record).
    const id = stored.metadata.annotations?.['berth.dev/allocation-id'] ?? '';
    const held = [];
    for await (const block of store.scanBlocks(rangeKey(ranges.nodePorts), 0, 100)) {
      for (const holder of block.holders.values()) if (holder === id) held.push(holder);
    }
    expect(held).toHaveLength(1);
    expect(await store.getOwner(id)).toBeUndefined();
  });

  it('denies a duplicate port and protocol', async () => {
    const status = await denial(
      'CREATE',
      service('dup', { ports: [{ port: 80 }, { port: 80, protocol: 'TCP' }] }),
    );
    expect(status?.code).toBe(422);
    expect(status?.message).toMatch(/^spec.ports\[1\]: /);
  });

  it('allocates a health check node port for LoadBalancer with Local traffic policy, even without node ports', async () => {
    const lb = await create(
      service('lb', { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }),
    );
    expect(lb.spec.ports[0]?.nodePort).toBeGreaterThan(0);
    expect(lb.spec.healthCheckNodePort).toBeGreaterThan(0);
    expect(lb.spec.healthCheckNodePort).not.toBe(lb.spec.ports[0]?.nodePort);
    const bare = await create(
      service('lb2', {
        type: 'LoadBalancer',
        externalTrafficPolicy: 'Local',
        allocateLoadBalancerNodePorts: false,
      }),
    );
    expect(bare.spec.ports[0]?.nodePort).toBeUndefined();
    expect(bare.spec.healthCheckNodePort).toBeGreaterThan(0);
  });

  it('allocates one IP per family for PreferDualStack and the asked family for SingleStack', async () => {
    await setUp(['10.100.0.0/16', 'fd00:100::/108']);
    const dual = await create(service('dual', { ipFamilyPolicy: 'PreferDualStack' }));
    expect(dual.spec.ipFamilies).toEqual(['IPv4', 'IPv6']);
    expect(dual.spec.clusterIPs?.[1]).toMatch(/^fd00:100::/);
    const v6 = await create(service('v6', { ipFamilies: ['IPv6'] }));
    expect(v6.spec.clusterIPs).toHaveLength(1);
    expect(v6.spec.clusterIP).toMatch(/^fd00:100::/);
    expect(v6.spec.ipFamilyPolicy).toBe('SingleStack');
  });

  it('keeps both cluster IPs of a dual-stack Service whose update keeps clusterIP but leaves clusterIPs empty', async () => {
    await setUp(['10.100.0.0/16', 'fd00:100::/108']);
    const stored = await create(service('dual-upd', { ipFamilyPolicy: 'PreferDualStack' }));
    const updated = structuredClone(stored);
    delete updated.spec.clusterIPs;
    const response = await send('UPDATE', updated, stored);
    expect(response.allowed).toBe(true);
    expect(applyPatch(updated, decodePatch(response.patch)).spec.clusterIPs).toEqual(
      stored.spec.clusterIPs,
    );
  });

  it('downgrades a dual-stack Service whose update sets only ipFamilyPolicy: SingleStack, giving back its second IP', async () => {
    await setUp(['10.100.0.0/16', 'fd00:100::/108']);
    const stored = await create(service('down', { ipFamilyPolicy: 'PreferDualStack' }));
    const updated = structuredClone(stored);
    updated.spec.ipFamilyPolicy = 'SingleStack';
    const response = await send('UPDATE', updated, stored);
    expect(response.status?.message).toBeUndefined();
    const after = applyPatch(updated, decodePatch(response.patch));
    expect(after.spec.clusterIPs).toEqual(stored.spec.clusterIPs?.slice(0, 1));
    expect(after.spec.ipFamilies).toEqual(['IPv4']);
    // The second IP is given back once the apiserver has stored the Service without it.
    const second = stored.spec.clusterIPs?.[1] ?? '';
    await settle(after);
    await create(service('taker', { ipFamilies: ['IPv6'], clusterIP: second }));
  });

  it('names spec.ipFamilies in the denial of a family that does not fit', async () => {
    await setUp(['10.100.0.0/16', 'fd00:100::/108']);
    const mismatched = service('fam', { ipFamilies: ['IPv6'], clusterIP: '10.100.0.9' });
    expect((await denial('CREATE', mismatched))?.message).toMatch(
      /^spec\.ipFamilies\[0\]: Invalid value: "IPv6": must match the family of spec\.clusterIPs\[0\]/,
    );
    const twice = service('fam2', {
      ipFamilyPolicy: 'PreferDualStack',
      ipFamilies: ['IPv4', 'IPv4'],
    });
    expect((await denial('CREATE', twice))?.message).toMatch(/^spec\.ipFamilies\[1\]: /);
  });

  it('denies ipFamilies of more than two entries, or one family twice, as the apiserver does', async () => {
    await setUp(['10.100.0.0/16', 'fd00:100::/108']);
    const three = service('fam3', {
      ipFamilyPolicy: 'PreferDualStack',
      ipFamilies: ['IPv4', 'IPv6', 'IPv4'],
    });
    expect(await denial('CREATE', three)).toEqual({
      code: 422,
      message:
        'spec.ipFamilies: Invalid value: ["IPv4","IPv6","IPv4"]: may not have more than two entries, one per IP family',
    });
    // One family twice on a single-stack cluster: the duplicate, not dual-stack, is the problem.
    await setUp(['10.100.0.0/16']);
    for (const ipFamilyPolicy of ['SingleStack', 'PreferDualStack']) {
      const twice = service(`twice-${ipFamilyPolicy.toLowerCase()}`, {
        ipFamilyPolicy,
        ipFamilies: ['IPv4', 'IPv4'],
      });
      expect(await denial('CREATE', twice)).toEqual({
        code: 422,
        message:
          'spec.ipFamilies[1]: Invalid value: "IPv4": Duplicate value: each IP family may be listed once',
      });
    }
  });

  it('denies RequireDualStack on a single-stack cluster', async () => {
    expect(await denial('CREATE', service('req', { ipFamilyPolicy: 'RequireDualStack' }))).toEqual({
      code: 422,
      message:
        'spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services',
    });
  });

  it('denies a changed cluster IP on update and keeps the old ones when the update leaves them empty', async () => {
    const stored = await create(service('imm'));
    const changed = structuredClone(stored);
    changed.spec.clusterIP = '10.100.0.99';
    changed.spec.clusterIPs = ['10.100.0.99'];
    expect(await denial('UPDATE', changed, stored)).toEqual({
      code: 422,
      message: 'spec.clusterIPs[0]: Invalid value: "10.100.0.99": may not change once set',
    });
    const emptied = structuredClone(stored);
    delete emptied.spec.clusterIP;
    delete emptied.spec.clusterIPs;
    const response = await send('UPDATE', emptied, stored);
    expect(applyPatch(emptied, decodePatch(response.patch)).spec.clusterIPs).toEqual(
      stored.spec.clusterIPs,
    );
  });

  it('allocates added node ports and releases dropped ones on update', async () => {
    const stored = await create(
      service('upd', { type: 'NodePort', ports: [{ name: 'a', port: 80, nodePort: 30010 }] }),
    );
    const updated = structuredClone(stored);
    updated.spec.ports = [{ name: 'b', port: 81 }];
    const after = applyPatch(updated, decodePatch((await send('UPDATE', updated, stored)).patch));
    expect(after.spec.ports[0]?.nodePort).toBeGreaterThanOrEqual(30086);
    const taker = service('taker', { type: 'NodePort', ports: [{ port: 1, nodePort: 30010 }] });
    // Given back, but held until the apiserver has stored the Service without it.
    expect((await denial('CREATE', taker))?.code).toBe(409);
    await settle(after);
    await create(taker);
  });

  it('releases every node port when a NodePort Service becomes ClusterIP', async () => {
    const stored = await create(
      service('tc', { type: 'NodePort', ports: [{ name: 'a', port: 80, nodePort: 30020 }] }),
    );
    const updated = structuredClone(stored);
    updated.spec.type = 'ClusterIP';
    const after = applyPatch(updated, decodePatch((await send('UPDATE', updated, stored)).patch));
    expect(after.spec.ports[0]?.nodePort).toBeUndefined();
    expect(after.spec.clusterIP).toBe(stored.spec.clusterIP);
    await settle(after);
    await create(service('taker', { type: 'NodePort', ports: [{ port: 1, nodePort: 30020 }] }));
  });

  it('releases everything on DELETE, once', async () => {
    const stored = await create(
      service('del', {
        clusterIP: '10.100.0.50',
        type: 'NodePort',
        ports: [{ port: 80, nodePort: 30030 }],
      }),
    );
    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    const reuse = service('reuse', {
      clusterIP: '10.100.0.50',
      type: 'NodePort',
      ports: [{ port: 80, nodePort: 30030 }],
    });
    expect((await denial('CREATE', reuse))?.code).toBe(409);
    await settle();
    const again = await create(reuse);
    expect(again.spec.clusterIP).toBe('10.100.0.50');
  });

  it('changes nothing on a dry run, and a dry-run DELETE releases nothing', async () => {
    const dry = await create(service('dry', { clusterIP: '10.100.0.60' }), true);
    expect(dry.spec.clusterIP).toBe('10.100.0.60');
    expect(
      await store.getOwner(dry.metadata.annotations?.['berth.dev/allocation-id'] ?? ''),
    ).toBeUndefined();
    const real = await create(service('real', { clusterIP: '10.100.0.60' }));
    await send('DELETE', undefined, real, true);
    expect((await denial('CREATE', service('third', { clusterIP: '10.100.0.60' })))?.code).toBe(
      409,
    );
  });

  it("writes only the claims for a named Service's CREATE, and hands the settle step those claims", async () => {
    const stored = await create(service('one', { type: 'NodePort' }));
    const id = stored.metadata.annotations?.['berth.dev/allocation-id'] ?? '';
    expect(await store.getOwner(id)).toBeUndefined();
    expect(tasks).toEqual([
      expect.objectContaining({
        id,
        reason: 'create',
        unrecorded: expect.objectContaining({ namespace: 'default', name: 'one' }),
      }),
    ]);
    const claims = tasks[0]?.unrecorded?.claims ?? [];
    expect(claims.map((c) => c.range).sort()).toEqual(
      [rangeKey(ranges.clusterIps[0] as ValueRange), rangeKey(ranges.nodePorts)].sort(),
    );
    // A Service named only by generateName cannot be told apart by its id: it is recorded.
    tasks = [];
    const generated = await create(service('', {}, { generateName: 'gen-' }));
    const genId = generated.metadata.annotations?.['berth.dev/allocation-id'] ?? '';
    expect((await store.getOwner(genId))?.claims).toHaveLength(1);
    expect(tasks[0]?.unrecorded).toBeUndefined();
  });

  it('frees the values of an unrecorded CREATE the apiserver never stored, once its window has passed', async () => {
    await create(service('lost', { clusterIP: '10.100.0.20' }));
    await settle();
    expect(tasks).toHaveLength(1);
    expect(await denial('CREATE', service('again', { clusterIP: '10.100.0.20' }))).toMatchObject({
      code: 409,
    });
    clock += 91_000;
    await settle();
    expect(tasks).toHaveLength(0);
    await create(service('again', { clusterIP: '10.100.0.20' }));
  });

  it('keeps the values of an unrecorded CREATE the apiserver stored, with no record written', async () => {
    const stored = await create(service('kept', { clusterIP: '10.100.0.21' }));
    clock += 91_000;
    await settle(stored);
    expect(tasks).toHaveLength(0);
    expect(await denial('CREATE', service('other', { clusterIP: '10.100.0.21' }))).toMatchObject({
      code: 409,
    });
    const owners = [];
    for await (const owner of store.listOwners()) owners.push(owner);
    expect(owners).toHaveLength(0);
  });

  it('writes the record of an unrecorded Service at its first change, giving back what the blocks hold for it', async () => {
    const stored = await create(service('chg', { type: 'NodePort' }));
    const id = stored.metadata.annotations?.['berth.dev/allocation-id'] ?? '';
    const nodePort = stored.spec.ports[0]?.nodePort;
    tasks = [];
    // NodePort to ClusterIP: the node port is given back, and waits for the settle step.
    const changed = {
      ...stored,
      metadata: { ...stored.metadata, resourceVersion: '7' },
      spec: {
        ...stored.spec,
        type: 'ClusterIP',
        ports: stored.spec.ports.map(({ nodePort: _, ...port }) => port),
      },
    };
    expect((await send('UPDATE', changed, stored)).allowed).toBe(true);
    const record = await store.getOwner(id);
    expect(record?.claims.map((c) => c.range)).toEqual([
      rangeKey(ranges.clusterIps[0] as ValueRange),
    ]);
    expect(record?.releasing?.map((c) => ranges.nodePorts.valueAt(c.offset))).toEqual([
      String(nodePort),
    ]);
    expect(tasks.map((t) => t.reason)).toEqual(['release']);
    // Its DELETE gives back the rest.
    expect((await send('DELETE', undefined, changed)).allowed).toBe(true);
    expect((await store.getOwner(id))?.claims).toEqual([]);
  });

  it('gives back everything an unrecorded Service holds when it is deleted', async () => {
    const stored = await create(service('gone', { type: 'NodePort' }));
    const id = stored.metadata.annotations?.['berth.dev/allocation-id'] ?? '';
    tasks = [];
    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    expect((await store.getOwner(id))?.releasing).toHaveLength(2);
    await settle();
    expect(await create(service('next', { clusterIP: stored.spec.clusterIP }))).toBeDefined();
  });

  it('recognises a re-invocation and allocates nothing new', async () => {
    const stored = await create(service('re', { type: 'NodePort' }));
    delete stored.metadata.uid;
    const response = await send('CREATE', stored);
    expect(response.allowed).toBe(true);
    expect(decodePatch(response.patch)).toEqual([]);
    // Neither the CREATE nor its re-invocation wrote an owner record: the id names the Service,
    // and the blocks say what it holds.
    const owners = [];
    for await (const owner of store.listOwners()) owners.push(owner);
    expect(owners).toHaveLength(0);
  });

  it('treats a copied allocation id in another namespace as a new Service', async () => {
    const stored = await create(service('orig'));
    const copy = service(
      'copy',
      {},
      { namespace: 'other', annotations: { ...stored.metadata.annotations } },
    );
    const body = review({
      resource: 'services',
      operation: 'CREATE',
      object: copy,
      namespace: 'other',
    });
    const { response } = await admit(parseAdmissionReview(body), handlers);
    const copied = applyPatch(copy, decodePatch(response.patch));
    expect(copied.metadata.annotations?.['berth.dev/allocation-id']).not.toBe(
      stored.metadata.annotations?.['berth.dev/allocation-id'] ?? '',
    );
    expect(copied.spec.clusterIP).not.toBe(stored.spec.clusterIP);
  });

  it('denies a Service whose fields have the wrong type, naming the field', async () => {
    const status = await denial(
      'CREATE',
      service('bad', { ports: [{ port: 'eighty' }] as unknown as Ports }),
    );
    expect(status?.code).toBe(422);
    expect(status?.message).toMatch(/^spec.ports\[0\].port: /);
  });

  it('allows services/status and other resources untouched', async () => {
    const body = review({
      resource: 'services',
      subResource: 'status',
      operation: 'UPDATE',
      object: service('s'),
      oldObject: service('s'),
    });
    const { response } = await admit(parseAdmissionReview(body), handlers);
    expect(response).toEqual({ uid: body.request.uid, allowed: true });
  });
});

describe('Service admission: one value, one live owner', () => {
  beforeEach(async () => {
    await setUp();
  });
  const nodePortService = (name: string, nodePort: number, clusterIP?: string) =>
    service(name, {
      type: 'NodePort',
      ports: [{ name: 'game', port: 80, nodePort }],
      ...(clusterIP ? { clusterIP } : {}),
    });

  it('denies a copy of a Service under another name with 409, and deleting the copy frees nothing of the original', async () => {
    const a = await create(nodePortService('a', 30100, '10.100.0.70'));
    // kubectl get svc a -o yaml | rename to b | kubectl create: annotation, IP and port copied.
    const b = structuredClone(a);
    b.metadata.name = 'b';
    delete b.metadata.uid;
    const status = await denial('CREATE', b);
    expect(status?.code).toBe(409);
    expect(status?.message).toContain('provided IP is already allocated');

    // Had the copy been stored while berth was not in the path, its DELETE gives back nothing of a's.
    b.metadata.uid = 'uid-b';
    expect((await send('DELETE', undefined, b)).allowed).toBe(true);
    await settle(a);
    expect((await denial('CREATE', nodePortService('c', 30100)))?.code).toBe(409);
    expect((await denial('CREATE', service('d', { clusterIP: '10.100.0.70' })))?.code).toBe(409);
  });

  it("never lets a Service stored with another's annotation take that Service's id on UPDATE", async () => {
    const x = await create(nodePortService('x', 30120, '10.100.0.61'));
    // y was stored while berth was not in the path, with x's annotation and an IP of its own.
    const y = service('y', { clusterIP: '10.100.0.98', clusterIPs: ['10.100.0.98'] });
    y.metadata.uid = 'uid-y';
    y.metadata.annotations = { ...x.metadata.annotations };
    expect((await send('UPDATE', structuredClone(y), y)).allowed).toBe(true);
    // x is still x: its own UPDATE goes through, and y's DELETE gives back nothing of it.
    const response = await send('UPDATE', structuredClone(x), x);
    expect(response.status?.message).toBeUndefined();
    expect(response.allowed).toBe(true);
    expect((await send('DELETE', undefined, y)).allowed).toBe(true);
    await settle(x);
    expect((await denial('CREATE', nodePortService('z', 30120)))?.code).toBe(409);
    expect((await denial('CREATE', service('w', { clusterIP: '10.100.0.61' })))?.code).toBe(409);
  });

  it('keeps a node port an UPDATE dropped while the apiserver has not stored the change, and holds it again when the change was refused', async () => {
    const stored = await create(nodePortService('upd', 30110));
    const updated = structuredClone(stored);
    updated.spec.ports = [{ name: 'other', port: 81 }];
    expect((await send('UPDATE', updated, stored)).allowed).toBe(true);
    const rival = nodePortService('rival', 30110);
    expect((await denial('CREATE', rival))?.code).toBe(409);

    // The apiserver refused the UPDATE (stale resourceVersion): the stored Service still has the port.
    await settle(stored);
    expect((await denial('CREATE', rival))?.code).toBe(409);
    clock += 10 * 60_000;
    await settle(stored);
    expect(tasks).toEqual([]);
    const record = await store.getOwner(
      stored.metadata.annotations?.['berth.dev/allocation-id'] ?? '',
    );
    expect(record?.releasing).toBeUndefined();
    expect(record?.claims.map((c) => c.offset)).toContain(110);
    expect((await denial('CREATE', rival))?.code).toBe(409);
  });

  it('keeps every value of a Service held by a finalizer until it is gone from the API', async () => {
    const stored = await create(
      service('lb', { type: 'LoadBalancer', ports: [{ name: 'game', port: 80, nodePort: 30120 }] }),
    );
    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    const terminating = structuredClone(stored);
    (terminating.metadata as Record<string, unknown>).deletionTimestamp = '2026-11-24T12:00:01Z';
    (terminating.metadata as Record<string, unknown>).finalizers = ['service.k8s.aws/resources'];
    for (let look = 0; look < 4; look++) {
      clock += 60_000;
      await settle(terminating);
      expect((await denial('CREATE', nodePortService('next', 30120)))?.code).toBe(409);
    }
    expect(tasks.filter((t) => t.reason === 'release')).toHaveLength(1);
    await settle();
    await create(nodePortService('next', 30120));
  });

  it('frees the values of a CREATE the apiserver never stored once no write can still commit it', async () => {
    const never = await create(nodePortService('never', 30130));
    const kept = await create(nodePortService('kept', 30131));
    await settle(kept);
    expect(tasks.map((t) => t.reason)).toEqual(['create']);
    clock += 30_000;
    await settle(kept);
    expect((await denial('CREATE', nodePortService('again', 30130)))?.code).toBe(409);
    clock += 90_000;
    await settle(kept);
    expect(tasks).toEqual([]);
    await create(nodePortService('again', 30130));
    expect((await denial('CREATE', nodePortService('again2', 30131)))?.code).toBe(409);
    expect(never.metadata.name).toBe('never');
  });

  it('frees what a DELETE gave back once, however often the DELETE and the settle step repeat', async () => {
    const stored = await create(nodePortService('twice', 30140));
    await send('DELETE', undefined, stored);
    await send('DELETE', undefined, stored);
    await settle();
    const next = await create(nodePortService('next', 30140));
    await send('DELETE', undefined, stored);
    await settle(next);
    expect((await denial('CREATE', nodePortService('third', 30140)))?.code).toBe(409);
  });

  it('takes a value back when the change that dropped it is retried with it before the settle step', async () => {
    const stored = await create(nodePortService('back', 30150));
    const dropped = structuredClone(stored);
    dropped.spec.ports = [{ name: 'other', port: 81 }];
    const after = applyPatch(dropped, decodePatch((await send('UPDATE', dropped, stored)).patch));
    const again = structuredClone(stored);
    expect((await send('UPDATE', again, stored)).allowed).toBe(true);
    await settle(stored);
    expect((await denial('CREATE', nodePortService('rival', 30150)))?.code).toBe(409);
    expect(after.spec.ports[0]?.nodePort).not.toBe(30150);
  });

  it('counts a value given back as used until the settle step frees it', async () => {
    const stored = await create(nodePortService('count', 30160));
    const used = async () => (await exclusiveRangeUsage(store, ranges.nodePorts)).used;
    expect(await used()).toBe(1);
    await send('DELETE', undefined, stored);
    expect(await used()).toBe(1);
    await settle();
    expect(await used()).toBe(0);
  });

  it('answers a write whose record keeps changing under it with 409, and lets such a DELETE through', async () => {
    const stored = await create(nodePortService('busy', 30170));
    const contended = new ExclusiveAllocator({
      store: {
        getOwner: (id) => store.getOwner(id),
        putOwner: async (record) => {
          throw new OwnerVersionConflictError(record.id);
        },
        deleteOwner: (id, version) => store.deleteOwner(id, version),
        listOwners: () => store.listOwners(),
        scanBlocks: (range, from, to) => store.scanBlocks(range, from, to),
        claim: (range, offset, owner) => store.claim(range, offset, owner),
        release: (range, offset, owner) => store.release(range, offset, owner),
      },
      random: Math.random,
      now: () => clock,
    });
    const busy = serviceAdmission({
      allocator: contended,
      ranges,
      randomBytes: (n) => randomBytes(n),
      now: () => clock,
      settler: { track: async () => {} },
    });
    const updated = structuredClone(stored);
    updated.spec.ports = [{ name: 'other', port: 81 }];
    const update = await busy(
      parseAdmissionReview(
        review({
          resource: 'services',
          operation: 'UPDATE',
          name: 'busy',
          object: updated,
          oldObject: stored,
        }),
      ),
    );
    expect(update).toMatchObject({ allowed: false, code: 409 });
    expect(update.allowed ? '' : update.message).toMatch(
      /^metadata\.annotations\[berth\.dev\/allocation-id\]: .*retry$/,
    );
    const deleted = await busy(
      parseAdmissionReview(
        review({ resource: 'services', operation: 'DELETE', name: 'busy', oldObject: stored }),
      ),
    );
    expect(deleted.allowed).toBe(true);
  });

  it('treats an allocation id not of berth shape as absent', async () => {
    for (const id of ['', 'x'.repeat(1500), 'UPPERCASEUPPERCASEUP']) {
      const created = await create(
        service(`odd-${id.length}`, {}, { annotations: { 'berth.dev/allocation-id': id } }),
      );
      expect(created.metadata.annotations?.['berth.dev/allocation-id']).toMatch(/^[a-z2-7]{20}$/);
    }
  });
});

describe('Service admission: an object created with generateName', () => {
  beforeEach(async () => {
    await setUp();
  });
  const idOf = (object: Obj) => object.metadata.annotations?.['berth.dev/allocation-id'] ?? '';
  const unnamed = (spec: Partial<Obj['spec']> = {}) => {
    const object = service('', { type: 'NodePort', ...spec }, { generateName: 'game-' });
    object.metadata.name = '';
    return object;
  };
  /** The CREATE under a known request uid, and the object as the apiserver stores it: named. */
  async function createNamed(uid: string, name = 'game-x7k2p') {
    const object = unnamed();
    const response = await send('CREATE', object, undefined, false, uid);
    expect(response.allowed).toBe(true);
    const stored = applyPatch(object, decodePatch(response.patch));
    stored.metadata.name = name;
    stored.metadata.uid = `uid-${name}`;
    return stored;
  }
  /** `kubectl get svc -o json`, name, uid and resourceVersion dropped, generateName kept. */
  const copyOf = (stored: Obj): Obj => {
    const copy = structuredClone(stored);
    copy.metadata.name = '';
    delete copy.metadata.uid;
    return copy;
  };

  it('denies a copy of the stored object with 409: its values are taken', async () => {
    const stored = await createNamed('req-1');
    const status = await denial('CREATE', copyOf(stored));
    expect(status?.code).toBe(409);
    expect(status?.message).toContain('provided IP is already allocated');
  });

  it('denies such a copy even once the settle step has seen the original stored', async () => {
    const stored = await createNamed('req-1');
    await settle(stored);
    expect((await denial('CREATE', copyOf(stored)))?.code).toBe(409);
  });

  it('recognises the same request seen again (same request uid) and allocates nothing new', async () => {
    const object = unnamed();
    const first = await send('CREATE', object, undefined, false, 'req-1');
    const patched = applyPatch(object, decodePatch(first.patch));
    const again = await send('CREATE', patched, undefined, false, 'req-1');
    expect(again.allowed).toBe(true);
    expect(decodePatch(again.patch)).toEqual([]);
    expect((await exclusiveRangeUsage(store, ranges.nodePorts)).used).toBe(1);
  });

  it('allows an UPDATE of the stored Service (a label change) keeping its own IP and port', async () => {
    const stored = await createNamed('req-1');
    const labelled = structuredClone(stored);
    (labelled.metadata as Record<string, unknown>).labels = { team: 'blue' };
    const response = await send('UPDATE', labelled, stored);
    expect(response.status?.message).toBeUndefined();
    expect(response.allowed).toBe(true);
    // Also after the settle step has learned its name.
    await settle(stored);
    expect((await send('UPDATE', structuredClone(labelled), labelled)).allowed).toBe(true);
  });

  it('knows the stored Service by its values, whatever name it was stored under', async () => {
    const stored = await createNamed('req-1', 'renamed-by-a-test');
    expect((await send('UPDATE', structuredClone(stored), stored)).allowed).toBe(true);
    expect((await store.getOwner(idOf(stored)))?.owner.name).toBe('renamed-by-a-test');
  });

  it('frees what its DELETE gave back once the settle step reads it gone', async () => {
    const stored = await createNamed('req-1');
    const used = async () => (await exclusiveRangeUsage(store, ranges.nodePorts)).used;
    expect((await send('DELETE', undefined, stored)).allowed).toBe(true);
    expect(await used()).toBe(1);
    await settle();
    expect(await used()).toBe(0);
    expect(await create(service('next', { clusterIP: stored.spec.clusterIP }))).toBeDefined();
  });

  it('frees what its DELETE gave back after the settle step learned its name', async () => {
    const stored = await createNamed('req-1');
    await settle(stored);
    expect((await store.getOwner(idOf(stored)))?.owner.name).toBe('game-x7k2p');
    await send('DELETE', undefined, stored);
    await settle();
    expect((await exclusiveRangeUsage(store, ranges.nodePorts)).used).toBe(0);
  });

  it('gives back nothing of the original when another generateName Service carrying its id is deleted', async () => {
    const a = await createNamed('req-a', 'game-aaaaa');
    const b = await createNamed('req-b', 'game-bbbbb');
    // b stored with a's annotation (while berth was not in the path).
    const forged = structuredClone(b);
    forged.metadata.annotations = { ...a.metadata.annotations };
    expect((await send('DELETE', undefined, forged)).allowed).toBe(true);
    await settle(a);
    expect((await denial('CREATE', service('c', { clusterIP: a.spec.clusterIP })))?.code).toBe(409);
  });
});

describe('Service fields too large for the store', () => {
  beforeEach(async () => {
    await setUp();
  });

  it('denies a generateName longer than Kubernetes allows with 422 naming the field', async () => {
    const object = service('', {}, { generateName: `${'g'.repeat(500_000)}-` });
    object.metadata.name = '';
    const status = await denial('CREATE', object);
    expect(status?.code).toBe(422);
    expect(status?.message).toMatch(
      /^metadata\.generateName: .*must be no more than 63 characters/,
    );
    expect(status?.message?.length).toBeLessThan(1000);
    expect((await exclusiveRangeUsage(store, ranges.clusterIps[0] as ValueRange)).used).toBe(0);
  });

  it('denies more values than one owner record and settle task hold, naming spec.ports', async () => {
    const ports = Array.from({ length: 300 }, (_, i) => ({ name: `p${i}`, port: 1000 + i }));
    const status = await denial('CREATE', service('many', { type: 'NodePort', ports }));
    expect(status?.code).toBe(422);
    expect(status?.message).toMatch(/^spec\.ports: Too many: 301 values/);
  });

  it('lets the DELETE of a Service with an oversized name through', async () => {
    const stored = await create(service('kept'));
    const long = structuredClone(stored);
    long.metadata.name = 'x'.repeat(500_000);
    expect((await send('DELETE', undefined, long)).allowed).toBe(true);
    expect((await exclusiveRangeUsage(store, ranges.clusterIps[0] as ValueRange)).used).toBe(1);
  });
});
