/**
 * The binding handler over the real `@kubernetes/client-node` adapter, talking HTTP to the
 * loopback fake of the Kubernetes API: every precedence case end to end.
 */

import type { V1NodeAddress } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { podBindingAdmission } from '../../shared/admission/binding.js';
import type { AdmissionHandler } from '../../shared/admission/dispatch.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import type { NodeAddressType } from '../../shared/config/schema.js';
import { ClientNodeClusterApi } from '../../shared/k8s/client-node-cluster-api.js';
import { ADDRESS_ANNOTATION, NODE_ANNOTATION } from '../../shared/vocabulary/labels.js';
import { type KubeApiServer, startKubeApiServer } from '../../sim/fakes/kube-api-server.js';
import { admittedGameServer } from '../hostports/support.js';

const TOKEN = 'berth-test-token';
let fake: KubeApiServer;
let api: ClientNodeClusterApi;

beforeAll(async () => {
  fake = await startKubeApiServer({ token: TOKEN });
  api = new ClientNodeClusterApi({ kubeConfig: fake.kubeConfig(TOKEN) });
  fake.addPod(admittedGameServer('gs', 'games'));
  fake.addPod({
    metadata: { name: 'web', namespace: 'games' },
    spec: { containers: [{ name: 'web', image: 'example/web:1' }] },
  });
});

afterAll(async () => {
  await fake.stop();
});

let seq = 0;
async function bind(handler: AdmissionHandler, pod: string, node: string) {
  return handler(
    parseAdmissionReview({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: `k-${seq++}`,
        resource: { group: '', version: 'v1', resource: 'pods' },
        subResource: 'binding',
        name: pod,
        namespace: 'games',
        operation: 'CREATE',
        object: {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name: pod, namespace: 'games' },
          target: { apiVersion: 'v1', kind: 'Node', name: node },
        },
      },
    }),
  );
}

function handlerFor(types: NodeAddressType[]): AdmissionHandler {
  return podBindingAdmission({ cluster: api, nodeAddressTypes: types, now: Date.now });
}

const a = (type: string, address: string): V1NodeAddress => ({ type, address });

describe('podBindingAdmission against the loopback Kubernetes API', () => {
  const cases: [string, NodeAddressType[], V1NodeAddress[], string | undefined][] = [
    [
      'ExternalIP before InternalIP',
      ['ExternalIP', 'InternalIP'],
      [a('InternalIP', '10.0.0.5'), a('ExternalIP', '203.0.113.7')],
      '203.0.113.7',
    ],
    [
      'InternalIP when there is no ExternalIP',
      ['ExternalIP', 'InternalIP'],
      [a('InternalIP', '10.0.0.5')],
      '10.0.0.5',
    ],
    [
      'the first valid of a type in status order',
      ['ExternalIP'],
      [a('ExternalIP', 'x'), a('ExternalIP', '198.51.100.2'), a('ExternalIP', '198.51.100.3')],
      '198.51.100.2',
    ],
    [
      'a non-IP value of an IP type skipped',
      ['ExternalIP', 'InternalIP'],
      [a('ExternalIP', 'host.example'), a('InternalIP', '10.0.0.6')],
      '10.0.0.6',
    ],
    [
      'ExternalDNS first when listed first',
      ['ExternalDNS', 'ExternalIP'],
      [a('ExternalIP', '203.0.113.9'), a('ExternalDNS', 'gs-node.example.com')],
      'gs-node.example.com',
    ],
    [
      'InternalDNS when it is the only listed type present',
      ['ExternalDNS', 'InternalDNS'],
      [a('InternalDNS', 'ip-10-0-0-7.ec2.internal')],
      'ip-10-0-0-7.ec2.internal',
    ],
    ['no usable address', ['ExternalIP', 'InternalIP'], [a('Hostname', 'node-x')], undefined],
  ];

  cases.forEach(([title, types, addresses, expected], i) => {
    it(`annotates with ${title}`, async () => {
      const node = `node-${i}`;
      fake.addNode({ metadata: { name: node }, status: { addresses } });
      const verdict = await bind(handlerFor(types), 'gs', node);
      expect(verdict.allowed).toBe(true);
      if (!verdict.allowed) return;
      expect(verdict.patch).toEqual([
        {
          op: 'add',
          path: '/metadata/annotations',
          value: {
            [NODE_ANNOTATION]: node,
            ...(expected ? { [ADDRESS_ANNOTATION]: expected } : {}),
          },
        },
      ]);
      expect(verdict.warnings?.length ?? 0).toBe(expected ? 0 : 1);
    });
  });

  it('allows a node that does not exist, with a warning', async () => {
    const verdict = await bind(handlerFor(['ExternalIP', 'InternalIP']), 'gs', 'nowhere');
    expect(verdict.allowed && verdict.warnings).toEqual([
      'berth.dev/address: node nowhere was not found; no address annotation',
    ]);
  });

  it('leaves a pod without an allocation id untouched', async () => {
    expect(await bind(handlerFor(['InternalIP']), 'web', 'node-0')).toEqual({ allowed: true });
  });
});

describe('a binding whose reads the Kubernetes API answers with an unexpected status', () => {
  const ID = 'abcdefghijklmnopqrst';
  beforeAll(() => {
    // Named by the apiserver from generateName: a binding teaches its record the name.
    fake.addPod({
      metadata: {
        name: 'gs-x7k2p',
        generateName: 'gs-',
        namespace: 'games',
        annotations: { 'berth.dev/allocation-id': ID },
      },
      spec: { containers: [{ name: 'game', image: 'example/game:1' }] },
    });
  });

  it.each([431, 403, 500, 503])(
    'allows the binding unchanged when the pod read is answered %i, naming the status',
    async (status) => {
      const asked: string[] = [];
      const handler = podBindingAdmission({
        cluster: api,
        nodeAddressTypes: ['InternalIP'],
        now: Date.now,
        records: {
          getRecord: async (id) => void asked.push(id),
          learnName: async () => true,
        },
      });
      // Read, the pod's record is looked up to learn its name.
      expect((await bind(handler, 'gs-x7k2p', 'node-0')).allowed).toBe(true);
      expect(asked).toEqual([ID]);
      fake.failNext({ path: '/api/v1/namespaces/games/pods/gs-x7k2p', status });
      const verdict = await bind(handler, 'gs-x7k2p', 'node-0');
      expect(verdict).toEqual({
        allowed: true,
        warnings: [
          expect.stringMatching(
            new RegExp(
              `^berth\\.dev/node: pod games/gs-x7k2p could not be read \\(the Kubernetes API answered ${status} \\w+: injected failure ${status}\\), so berth added no annotations$`,
            ),
          ),
        ],
      });
      // Nothing was looked up or learned from a pod berth could not read.
      expect(asked).toEqual([ID]);
    },
  );

  it('allows the binding with its node annotation when the node read is answered 431', async () => {
    fake.addNode({
      metadata: { name: 'node-431' },
      status: { addresses: [a('InternalIP', '10.0.0.9')] },
    });
    fake.failNext({ path: '/api/v1/nodes/node-431', status: 431 });
    const verdict = await bind(handlerFor(['InternalIP']), 'gs', 'node-431');
    expect(verdict.allowed).toBe(true);
    if (!verdict.allowed) return;
    expect(verdict.patch).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { [NODE_ANNOTATION]: 'node-431' } },
    ]);
    expect(verdict.warnings).toEqual([
      expect.stringMatching(
        /^berth\.dev\/address: node node-431 could not be read \(the Kubernetes API answered 431 /,
      ),
    ]);
  });
});
