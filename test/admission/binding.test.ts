import type { V1Node, V1NodeAddress, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { chooseNodeAddress, podBindingAdmission } from '../../shared/admission/binding.js';
import { admit } from '../../shared/admission/dispatch.js';
import { allow } from '../../shared/admission/response.js';
import { type AdmissionRequest, parseAdmissionReview } from '../../shared/admission/review.js';
import type { NodeAddressType } from '../../shared/config/schema.js';
import type { ClusterApi } from '../../shared/k8s/cluster-api.js';
import {
  ADDRESS_ANNOTATION,
  ALLOCATION_ID_ANNOTATION,
  CORDONED_AT,
  NODE_ANNOTATION,
} from '../../shared/vocabulary/labels.js';

/** A hand fake of the two reads binding makes: stored objects, recorded calls, injected errors. */
class FakeClusterApi implements Pick<ClusterApi, 'getPod' | 'getNode'> {
  readonly pods = new Map<string, V1Pod>();
  readonly nodes = new Map<string, V1Node>();
  readonly calls: string[] = [];
  readonly failures: Error[] = [];

  async getPod(namespace: string, name: string): Promise<V1Pod | undefined> {
    this.calls.push(`getPod ${namespace}/${name}`);
    const failure = this.failures.shift();
    if (failure) throw failure;
    return this.pods.get(`${namespace}/${name}`);
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    this.calls.push(`getNode ${name}`);
    return this.nodes.get(name);
  }

  gamePod(name: string, namespace = 'default'): void {
    this.pods.set(`${namespace}/${name}`, {
      metadata: {
        name,
        namespace,
        annotations: { [ALLOCATION_ID_ANNOTATION]: 'abcdefghijklmnopqrst' },
      },
    });
  }

  node(name: string, addresses: V1NodeAddress[]): void {
    this.nodes.set(name, { metadata: { name }, status: { addresses } });
  }
}

let uid = 0;
function bindingRequest(
  pod: string,
  node: string,
  extra: Record<string, unknown> = {},
): AdmissionRequest {
  return parseAdmissionReview({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `b-${uid++}`,
      kind: { group: '', version: 'v1', kind: 'Binding' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      subResource: 'binding',
      name: pod,
      namespace: 'default',
      operation: 'CREATE',
      object: {
        apiVersion: 'v1',
        kind: 'Binding',
        metadata: { name: pod, namespace: 'default', ...extra },
        target: { apiVersion: 'v1', kind: 'Node', name: node },
      },
    },
  });
}

const address = (type: string, value: string): V1NodeAddress => ({ type, address: value });

function harness(types: NodeAddressType[] = ['ExternalIP', 'InternalIP']) {
  const cluster = new FakeClusterApi();
  let clock = 1_000_000;
  const handler = podBindingAdmission({ cluster, nodeAddressTypes: types, now: () => clock });
  return { cluster, handler, advance: (ms: number) => (clock += ms) };
}

describe('chooseNodeAddress', () => {
  const cases: [string, NodeAddressType[], V1NodeAddress[], string | undefined][] = [
    [
      'takes the first type in the list the node has',
      ['ExternalIP', 'InternalIP'],
      [address('InternalIP', '10.0.0.5'), address('ExternalIP', '203.0.113.7')],
      '203.0.113.7',
    ],
    [
      'falls back to the next type when the first is absent',
      ['ExternalIP', 'InternalIP'],
      [address('Hostname', 'ip-10-0-0-5'), address('InternalIP', '10.0.0.5')],
      '10.0.0.5',
    ],
    [
      'takes the first valid address of the type in status order',
      ['ExternalIP'],
      [
        address('ExternalIP', 'pending'),
        address('ExternalIP', '203.0.113.7'),
        address('ExternalIP', '203.0.113.8'),
      ],
      '203.0.113.7',
    ],
    [
      'skips an IP type whose values are not IPs and uses the next type',
      ['ExternalIP', 'InternalIP'],
      [address('ExternalIP', 'a.example.com'), address('InternalIP', '10.0.0.5')],
      '10.0.0.5',
    ],
    [
      'accepts IPv6 addresses for IP types',
      ['ExternalIP', 'InternalIP'],
      [address('ExternalIP', '2001:db8::7'), address('InternalIP', '10.0.0.5')],
      '2001:db8::7',
    ],
    [
      'honours DNS types first when the list says so',
      ['ExternalDNS', 'InternalDNS', 'ExternalIP', 'InternalIP'],
      [address('ExternalIP', '203.0.113.7'), address('InternalDNS', 'ip-10-0-0-5.ec2.internal')],
      'ip-10-0-0-5.ec2.internal',
    ],
    [
      'prefers ExternalDNS over InternalDNS by precedence, not by status order',
      ['ExternalDNS', 'InternalDNS'],
      [
        address('InternalDNS', 'internal.example'),
        address('ExternalDNS', 'ec2-203-0-113-7.compute.amazonaws.com'),
      ],
      'ec2-203-0-113-7.compute.amazonaws.com',
    ],
    [
      'skips a DNS value that is not a DNS name',
      ['ExternalDNS', 'InternalIP'],
      [address('ExternalDNS', 'not a name!'), address('InternalIP', '10.0.0.5')],
      '10.0.0.5',
    ],
    [
      'ignores types that are not in the list',
      ['InternalDNS'],
      [address('ExternalIP', '203.0.113.7'), address('Hostname', 'node-1')],
      undefined,
    ],
    ['finds nothing on a node without addresses', ['ExternalIP', 'InternalIP'], [], undefined],
  ];
  for (const [title, types, addresses, expected] of cases) {
    it(title, () => {
      expect(chooseNodeAddress(addresses, types)).toBe(expected);
    });
  }
});

describe('podBindingAdmission', () => {
  it('adds berth.dev/node and berth.dev/address to the Binding of a berth pod', async () => {
    const { cluster, handler } = harness();
    cluster.gamePod('gs');
    cluster.node('node-1', [
      address('InternalIP', '10.0.0.5'),
      address('ExternalIP', '203.0.113.7'),
    ]);
    expect(await handler(bindingRequest('gs', 'node-1'))).toEqual(
      allow([
        {
          op: 'add',
          path: '/metadata/annotations',
          value: { [NODE_ANNOTATION]: 'node-1', [ADDRESS_ANNOTATION]: '203.0.113.7' },
        },
      ]),
    );
  });

  it('adds single annotations when the Binding already has some', async () => {
    const { cluster, handler } = harness();
    cluster.gamePod('gs');
    cluster.node('node-1', [address('InternalIP', '10.0.0.5')]);
    const verdict = await handler(bindingRequest('gs', 'node-1', { annotations: { keep: 'me' } }));
    expect(verdict).toEqual(
      allow([
        { op: 'add', path: '/metadata/annotations/berth.dev~1node', value: 'node-1' },
        { op: 'add', path: '/metadata/annotations/berth.dev~1address', value: '10.0.0.5' },
      ]),
    );
  });

  it('adds the whole metadata when the Binding has none', async () => {
    const { cluster, handler } = harness();
    cluster.gamePod('gs');
    cluster.node('node-1', [address('InternalIP', '10.0.0.5')]);
    const request = parseAdmissionReview({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'b-no-metadata',
        kind: { group: '', version: 'v1', kind: 'Binding' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        subResource: 'binding',
        name: 'gs',
        namespace: 'default',
        operation: 'CREATE',
        object: { apiVersion: 'v1', kind: 'Binding', target: { kind: 'Node', name: 'node-1' } },
      },
    });
    expect(await handler(request)).toEqual(
      allow([
        {
          op: 'add',
          path: '/metadata',
          value: { annotations: { [NODE_ANNOTATION]: 'node-1', [ADDRESS_ANNOTATION]: '10.0.0.5' } },
        },
      ]),
    );
  });

  it('allows a pod without berth.dev/allocation-id untouched, without reading the node', async () => {
    const { cluster, handler } = harness();
    cluster.pods.set('default/web', { metadata: { name: 'web', namespace: 'default' } });
    expect(await handler(bindingRequest('web', 'node-1'))).toEqual({ allowed: true });
    expect(cluster.calls).toEqual(['getPod default/web']);
  });

  it('treats an allocation id not of the shape berth makes as absent', async () => {
    for (const id of ['', 'not-berth-shape', 'x'.repeat(300)]) {
      const { cluster, handler } = harness();
      cluster.pods.set('default/web', {
        metadata: {
          name: 'web',
          namespace: 'default',
          annotations: { [ALLOCATION_ID_ANNOTATION]: id },
        },
      });
      expect(await handler(bindingRequest('web', 'node-1')), id).toEqual({ allowed: true });
      expect(cluster.calls).toEqual(['getPod default/web']);
    }
  });

  it('allows with a warning and no address when the node has no usable address', async () => {
    const { cluster, handler } = harness();
    cluster.gamePod('gs');
    cluster.node('node-1', [address('ExternalIP', 'none'), address('Hostname', 'node-1')]);
    const verdict = await handler(bindingRequest('gs', 'node-1'));
    expect(verdict).toEqual({
      allowed: true,
      patch: [{ op: 'add', path: '/metadata/annotations', value: { [NODE_ANNOTATION]: 'node-1' } }],
      warnings: [
        'berth.dev/address: node node-1 has no usable address of type ExternalIP, InternalIP; no address annotation',
      ],
    });
  });

  it('allows with a warning when the node does not exist', async () => {
    const { cluster, handler } = harness();
    cluster.gamePod('gs');
    const verdict = await handler(bindingRequest('gs', 'ghost'));
    expect(verdict.allowed).toBe(true);
    expect(verdict.allowed && verdict.warnings).toEqual([
      'berth.dev/address: node ghost was not found; no address annotation',
    ]);
  });

  it('allows with a warning when the pod cannot be found', async () => {
    const { handler } = harness();
    const verdict = await handler(bindingRequest('gone', 'node-1'));
    expect(verdict).toEqual({
      allowed: true,
      warnings: ['berth.dev/node: pod default/gone was not found, so berth added no annotations'],
    });
  });

  it('lets an API failure propagate, so the webhook failurePolicy decides', async () => {
    const { cluster, handler } = harness();
    cluster.failures.push(new Error('apiserver unavailable'));
    await expect(handler(bindingRequest('gs', 'node-1'))).rejects.toThrow('apiserver unavailable');
  });

  it('reads a node once for a burst of bindings and again after the cache expires', async () => {
    const { cluster, handler, advance } = harness();
    cluster.node('node-1', [address('InternalIP', '10.0.0.5')]);
    for (const name of ['a', 'b', 'c']) cluster.gamePod(name);
    await Promise.all(['a', 'b', 'c'].map((name) => handler(bindingRequest(name, 'node-1'))));
    expect(cluster.calls.filter((c) => c.startsWith('getNode'))).toHaveLength(1);
    advance(60_000);
    await handler(bindingRequest('a', 'node-1'));
    expect(cluster.calls.filter((c) => c.startsWith('getNode'))).toHaveLength(2);
  });

  it('refuses a node berth drains only as the node is now, not as the cache last saw it', async () => {
    const { cluster, handler } = harness();
    cluster.node('node-1', [address('InternalIP', '10.0.0.5')]);
    const node = cluster.nodes.get('node-1') as V1Node;
    node.spec = { unschedulable: true };
    node.metadata = { ...node.metadata, annotations: { [CORDONED_AT]: '2026-11-26T03:00:00Z' } };
    cluster.gamePod('a');
    cluster.gamePod('b');
    expect(await handler(bindingRequest('a', 'node-1'))).toMatchObject({ allowed: false });
    // berth uncordons it (demand is rising): the next binding goes through at once.
    cluster.nodes.set('node-1', {
      metadata: { name: 'node-1' },
      status: { addresses: [address('InternalIP', '10.0.0.5')] },
    });
    expect(await handler(bindingRequest('b', 'node-1'))).toMatchObject({ allowed: true });
  });

  it('is reached through dispatch for pods/binding CREATE', async () => {
    const { cluster, handler } = harness();
    cluster.gamePod('gs');
    cluster.node('node-1', [address('InternalIP', '10.0.0.5')]);
    const noop = async () => allow();
    const review = await admit(bindingRequest('gs', 'node-1'), {
      services: noop,
      pods: noop,
      podBinding: handler,
    });
    expect(review.response.allowed).toBe(true);
    const patch = JSON.parse(Buffer.from(review.response.patch ?? '', 'base64').toString());
    expect(patch[0].value).toEqual({
      [NODE_ANNOTATION]: 'node-1',
      [ADDRESS_ANNOTATION]: '10.0.0.5',
    });
  });
});
