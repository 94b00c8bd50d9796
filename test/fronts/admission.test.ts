/**
 * Public fronts through the pod webhooks: NLB listener slots claimed at CREATE (the address in
 * the patch), the front field checked against the config, the release queued at DELETE, and the
 * binding writing every fronted port's address and queueing the bind.
 */
import { randomBytes } from 'node:crypto';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podBindingAdmission } from '../../shared/admission/binding.js';
import { hostPortRangesOf, podAdmission } from '../../shared/admission/pods.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { parseConfig } from '../../shared/config/schema.js';
import type { AcceleratorFront } from '../../shared/fronts/accelerator-front.js';
import type { PoolMember } from '../../shared/fronts/listener-claim.js';
import type { FrontWork } from '../../shared/fronts/work.js';
import type { PodPortRecord } from '../../shared/hostports/store.js';
import { CapacityMeter } from '../../shared/store/capacity.js';
import { DynamoHostPortStore } from '../../shared/store/dynamo-host-port-store.js';
import {
  FRONTS_ANNOTATION,
  FRONTS_READY_ANNOTATION,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';
import {
  allocationIdOf,
  containerEnv,
  denial,
  gamePod,
  hostPortsOf,
  patched,
  podRequest,
} from '../hostports/support.js';
import { freshTable } from '../support/dynamo.js';

const NLB: PoolMember = {
  arn: 'arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/net/games/0123456789abcdef',
  dnsName: 'games-0123456789abcdef.elb.us-east-1.amazonaws.com',
  foreignPorts: new Set([10_000]),
};

let clusterSeq = 0;

async function harness(options: { listenerPorts?: string; nlb?: boolean; slots?: boolean } = {}) {
  const { client, tableName } = await freshTable();
  const store = new DynamoHostPortStore({
    client,
    tableName,
    cluster: `fronts${clusterSeq++}`,
    meter: new CapacityMeter(),
  });
  const config = parseConfig({
    hostPortRanges: {
      default: '7000-7999',
      accel: '8000-8099',
      ...(options.slots ? { slots: '9000-9031' } : {}),
    },
  });
  const fronts = new MemoryFrontStore();
  const queued: { work: FrontWork; delay: number }[] = [];
  const queue = {
    submit: async (work: FrontWork, delay: number) => void queued.push({ work, delay }),
  };
  const [base, last] = (options.listenerPorts ?? '10000-10999').split('-').map(Number);
  const handler = podAdmission({
    config,
    store,
    random: Math.random,
    randomBytes: (size) => new Uint8Array(randomBytes(size)),
    now: () => 1_700_000_000_000,
    fronts: {
      offered: {
        nlb: options.nlb ?? true,
        acceleratorRange: 'accel',
        ...(options.slots ? { slotRange: 'slots' } : {}),
      },
      // Slots mode claims no listener at CREATE.
      ...(options.nlb === false || options.slots
        ? {}
        : {
            listeners: {
              store: fronts,
              pool: { members: async () => [NLB] },
              listenerPorts: { base: base ?? 0, size: (last ?? 0) - (base ?? 0) + 1 },
              placement: 'balanced' as const,
              random: Math.random,
              now: () => 1_700_000_000_000,
            },
          }),
      queue,
      cluster: 'prod',
      delaySeconds: 5,
    },
  });
  return { handler, fronts, queued, ranges: hostPortRangesOf(config) };
}

const annotations = (pod: Record<string, unknown>) =>
  (pod.metadata as { annotations: Record<string, string> }).annotations;

describe('fronts at pod CREATE', () => {
  it('claims an NLB listener and tells the pod the address a player dials', async () => {
    const h = await harness();
    const pod = await h
      .handler(podRequest(gamePod([{ name: 'game', containerPort: 7777, front: 'nlb' }])))
      .then((verdict) =>
        patched(gamePod([{ name: 'game', containerPort: 7777, front: 'nlb' }]), verdict),
      );
    const [slot] = await h.fronts.listSlots();
    expect(slot).toMatchObject({ portName: 'game', protocol: 'UDP', state: 'claimed' });
    expect(slot?.owner.allocationId).toBe(allocationIdOf(pod));
    expect(slot?.slot.port).not.toBe(10_000);
    const address = `${NLB.dnsName}:${slot?.slot.port}`;
    expect(JSON.parse(annotations(pod)[FRONTS_ANNOTATION] ?? '{}')).toEqual({ game: address });
    expect(containerEnv(pod)).toContainEqual({ name: 'BERTH_FRONT_GAME', value: address });
  });

  it('answers a re-invoked webhook with the listener it holds, claiming nothing more', async () => {
    const h = await harness();
    const first = await h
      .handler(podRequest(gamePod([{ name: 'game', containerPort: 7777, front: 'nlb' }])))
      .then((v) => patched(gamePod([{ name: 'game', containerPort: 7777, front: 'nlb' }]), v));
    const again = patched(first, await h.handler(podRequest(first)));
    expect(await h.fronts.listSlots()).toHaveLength(1);
    expect(annotations(again)[FRONTS_ANNOTATION]).toBe(annotations(first)[FRONTS_ANNOTATION]);
  });

  it('claims nothing on a dry run, and still answers an address', async () => {
    const h = await harness();
    const spec = [{ name: 'game', containerPort: 7777, front: 'nlb' }];
    const pod = patched(
      gamePod(spec),
      await h.handler(podRequest(gamePod(spec), { dryRun: true })),
    );
    expect(await h.fronts.listSlots()).toHaveLength(0);
    expect(annotations(pod)[FRONTS_ANNOTATION]).toContain(NLB.dnsName);
  });

  it('denies 409 when the pool has no listener port left', async () => {
    const h = await harness({ listenerPorts: '10000-10000' });
    const verdict = await h.handler(
      podRequest(gamePod([{ name: 'game', containerPort: 7777, front: 'nlb' }])),
    );
    expect(denial(verdict, 409)).toMatch(/^metadata\.annotations\[berth\.dev\/ports\]: /);
  });

  it('gives a port behind the accelerator its host port from the accelerator range', async () => {
    const h = await harness();
    const spec = [{ name: 'game', containerPort: 7777, front: 'accelerator' }];
    const pod = patched(gamePod(spec), await h.handler(podRequest(gamePod(spec))));
    expect(hostPortsOf(pod).game).toBeGreaterThanOrEqual(8000);
    expect(hostPortsOf(pod).game).toBeLessThanOrEqual(8099);
    // Known only at binding; written empty now, so a copied manifest's address never stays.
    expect(annotations(pod)[FRONTS_ANNOTATION]).toBe('{}');
  });

  it('in slots mode gives a port behind the NLB a host port of the slot range and claims no listener', async () => {
    const h = await harness({ slots: true });
    const spec = [{ name: 'game', containerPort: 7777, front: 'nlb' }];
    const copied = gamePod(spec, {
      annotations: { [FRONTS_ANNOTATION]: JSON.stringify({ game: 'other.example:10001' }) },
    });
    const pod = patched(copied, await h.handler(podRequest(copied)));
    expect(hostPortsOf(pod).game).toBeGreaterThanOrEqual(9000);
    expect(hostPortsOf(pod).game).toBeLessThanOrEqual(9031);
    expect(await h.fronts.listSlots()).toEqual([]);
    // Known only at binding, from the node's seat; the copied address does not stay.
    expect(annotations(pod)[FRONTS_ANNOTATION]).toBe('{}');
    expect(annotations(pod)[FRONTS_READY_ANNOTATION]).toBe('false');
    expect(containerEnv(pod).map((e) => e.name)).not.toContain('BERTH_FRONT_GAME');
  });

  it('in slots mode denies 422 a port of the slot range that did not ask for the NLB, and one naming another range', async () => {
    const h = await harness({ slots: true });
    const problems = denial(
      await h.handler(
        podRequest(
          gamePod([
            { name: 'a', containerPort: 7000, range: 'slots' },
            { name: 'b', containerPort: 7001, front: 'nlb', range: 'default' },
            { name: 'c', containerPort: 7002, front: 'nlb', portPolicy: 'Static', hostPort: 9500 },
          ]),
        ),
      ),
      422,
    ).split('\n');
    const p = 'metadata.annotations[berth.dev/ports]';
    expect(problems).toEqual([
      `${p}[0].range: Invalid value: "slots": this host port range is the NLB slots': its ports are public; set "front": "nlb" or name another range`,
      `${p}[1].range: Invalid value: "default": a port behind an NLB slot takes its host port from range "slots"; leave range out`,
      `${p}[2].front: Forbidden: "nlb" slots serve the host ports of range "slots", which berth hands out; use the Dynamic or Passthrough PortPolicy`,
    ]);
  });

  it('replaces the addresses and the readiness a copied manifest carries, and leaves a pod with no front without any', async () => {
    const h = await harness();
    const copied = gamePod([{ name: 'game', containerPort: 7777, front: 'accelerator' }], {
      annotations: {
        [FRONTS_ANNOTATION]: JSON.stringify({ game: '75.2.0.1:31000' }),
        [FRONTS_READY_ANNOTATION]: 'true',
      },
    });
    const own = annotations(patched(copied, await h.handler(podRequest(copied))));
    expect(own[FRONTS_ANNOTATION]).toBe('{}');
    // Not ready until the fronts pass sees its own front route.
    expect(own[FRONTS_READY_ANNOTATION]).toBe('false');
    const plain = gamePod([{ name: 'game', containerPort: 7777 }]);
    expect(
      annotations(patched(plain, await h.handler(podRequest(plain))))[FRONTS_ANNOTATION],
    ).toBeUndefined();
  });

  it('denies 422 a front that is not configured, a port in the accelerator range that did not ask for it, and a front on a block', async () => {
    const h = await harness({ nlb: false });
    const problems = denial(
      await h.handler(
        podRequest(
          gamePod([
            { name: 'a', containerPort: 7000, front: 'nlb' },
            { name: 'b', containerPort: 7001, range: 'accel' },
            { name: 'c', containerPort: 7002, front: 'accelerator', count: 4 },
            { name: 'd', containerPort: 7003, front: 'satellite' },
            { name: 'e', containerPort: 7004, front: 'accelerator', range: 'default' },
          ]),
        ),
      ),
      422,
    ).split('\n');
    const p = 'metadata.annotations[berth.dev/ports]';
    expect(problems).toEqual([
      `${p}[0].front: Invalid value: "nlb": no Network Load Balancer is configured; add one to fronts.nlb.loadBalancers`,
      `${p}[1].range: Invalid value: "accel": this host port range is the Global Accelerator's: its ports are public; set "front": "accelerator" or name another range`,
      `${p}[2].front: Forbidden: a front serves one port; not with a block of host ports (count)`,
      `${p}[3].front: Unsupported value: "satellite": supported values: "nlb", "accelerator"`,
      `${p}[4].range: Invalid value: "default": a port behind the Global Accelerator takes its host port from range "accel"; leave range out`,
    ]);
  });

  it('queues the release of a deleted pod’s fronts after the settle delay', async () => {
    const h = await harness();
    const spec = [{ name: 'game', containerPort: 7777, front: 'nlb' }];
    const pod = patched(gamePod(spec), await h.handler(podRequest(gamePod(spec))));
    await h.handler(podRequest(pod, { operation: 'DELETE' }));
    expect(h.queued).toEqual([
      {
        work: {
          kind: 'release',
          cluster: 'prod',
          namespace: 'default',
          pod: 'gs',
          allocationId: allocationIdOf(pod),
          admittedAt: 1_700_000_000_000,
          attempt: 0,
        },
        delay: 5,
      },
    ]);
    // The slot is not freed at admission: the apiserver may still refuse the DELETE.
    expect(await h.fronts.listSlots()).toHaveLength(1);
  });

  it('queues no release for a pod carrying another live pod’s id', async () => {
    const h = await harness();
    const spec = [{ name: 'game', containerPort: 7777, front: 'nlb' }];
    const live = patched(gamePod(spec), await h.handler(podRequest(gamePod(spec))));
    // Pods have no UPDATE webhook: anyone can write the live pod's id onto another and delete it.
    const other = gamePod(spec, {
      name: 'impostor',
      annotations: { 'berth.dev/allocation-id': allocationIdOf(live) ?? '' },
    });
    await h.handler(podRequest(other, { operation: 'DELETE' }));
    expect(h.queued).toEqual([]);
  });
});

describe('fronts at binding', () => {
  const ID = 'abcdefghijklmnopqrst';
  const pod: V1Pod = {
    metadata: {
      name: 'gs-1',
      namespace: 'default',
      annotations: {
        'berth.dev/allocation-id': ID,
        [PORTS_ANNOTATION]: JSON.stringify([
          { name: 'game', containerPort: 7777, front: 'nlb', protocol: 'TCPUDP' },
          { name: 'voice', containerPort: 7778, front: 'accelerator' },
          { name: 'admin', containerPort: 9000 },
        ]),
        [HOST_PORTS_ANNOTATION]: JSON.stringify({ game: 7100, voice: 8042, admin: 7200 }),
      },
    },
  };
  const node: V1Node = {
    metadata: { name: 'node-a' },
    status: {
      addresses: [
        { type: 'ExternalIP', address: '203.0.113.9' },
        { type: 'InternalIP', address: '10.0.1.20' },
      ],
    },
  };
  const accelerator: AcceleratorFront = {
    locate: async (address, port) =>
      address === '10.0.1.20'
        ? { subnetId: 'subnet-1', publicAddress: `75.2.0.1:${port + 30_000}` }
        : undefined,
    reconcile: async () => undefined,
    warm: async () => undefined,
  };

  /** What berth recorded for the pod at its CREATE: the host ports its fronts use. */
  const RECORD: PodPortRecord = {
    id: ID,
    pod: { kind: 'Pod', namespace: 'default', name: 'gs-1' },
    ports: [
      { name: 'game', range: 'default', port: 7100, protocol: 'TCPUDP' },
      { name: 'voice', range: 'default', port: 8042, protocol: 'UDP' },
      { name: 'admin', range: 'default', port: 7200, protocol: 'UDP' },
    ],
    createdAt: 0,
  };

  /** The pod as stored after a CREATE that told it `address` for its NLB port. */
  const toldAtCreate = (address: string): V1Pod => ({
    ...pod,
    metadata: {
      ...pod.metadata,
      annotations: {
        ...pod.metadata?.annotations,
        [FRONTS_ANNOTATION]: JSON.stringify({ game: address }),
      },
    },
  });

  async function bind(
    dryRun = false,
    stored: V1Pod = pod,
    onNode: V1Node = node,
    portName = 'game',
    record: PodPortRecord = RECORD,
  ) {
    const store = new MemoryFrontStore();
    await store.claimSlots([
      {
        slot: { loadBalancerArn: NLB.arn, port: 10_500 },
        owner: { allocationId: ID, namespace: 'default', pod: 'gs-1' },
        portName,
        protocol: 'TCPUDP',
        claimedAt: 0,
        state: 'claimed',
      },
    ]);
    const queued: FrontWork[] = [];
    const handler = podBindingAdmission({
      cluster: {
        getPod: async () => stored,
        getNode: async () => onNode,
      },
      nodeAddressTypes: ['ExternalIP', 'InternalIP'],
      now: () => 42,
      records: { getRecord: async () => record, learnName: async () => true },
      fronts: {
        cluster: 'prod',
        store,
        pool: { members: async () => [NLB] },
        accelerator,
        queue: { submit: async (work) => void queued.push(work) },
        now: () => 42,
      },
    });
    const verdict = await handler(
      parseAdmissionReview({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: 'b-1',
          kind: { group: '', version: 'v1', kind: 'Binding' },
          resource: { group: '', version: 'v1', resource: 'pods' },
          subResource: 'binding',
          name: 'gs-1',
          namespace: 'default',
          operation: 'CREATE',
          dryRun,
          object: {
            apiVersion: 'v1',
            kind: 'Binding',
            metadata: { name: 'gs-1', namespace: 'default' },
            target: { apiVersion: 'v1', kind: 'Node', name: 'node-a' },
          },
        },
      }),
    );
    return { verdict, queued };
  }

  it('writes every fronted port’s address and queues the bind to the node’s private address', async () => {
    const { verdict, queued } = await bind();
    const binding = patched({ metadata: { name: 'gs-1' } }, verdict);
    expect(JSON.parse(annotations(binding)[FRONTS_ANNOTATION] ?? '')).toEqual({
      game: `${NLB.dnsName}:10500`,
      voice: '75.2.0.1:38042',
    });
    expect(queued).toEqual([
      {
        kind: 'bind',
        cluster: 'prod',
        namespace: 'default',
        pod: 'gs-1',
        allocationId: ID,
        node: 'node-a',
        nodeAddress: '10.0.1.20',
        ports: [
          { name: 'game', front: 'nlb', protocol: 'TCPUDP', hostPort: 7100 },
          { name: 'voice', front: 'accelerator', protocol: 'UDP', hostPort: 8042 },
        ],
        boundAt: 42,
      },
    ]);
  });

  it('fronts the host ports berth recorded, not ones written into the pod’s annotation', async () => {
    // An UPDATE before scheduling names another game server's host port.
    const edited: V1Pod = {
      ...pod,
      metadata: {
        ...pod.metadata,
        annotations: {
          ...pod.metadata?.annotations,
          [HOST_PORTS_ANNOTATION]: JSON.stringify({ game: 7101, voice: 8043, admin: 7200 }),
        },
      },
    };
    const { verdict, queued } = await bind(false, edited);
    const binding = patched({ metadata: { name: 'gs-1' } }, verdict);
    expect(JSON.parse(annotations(binding)[FRONTS_ANNOTATION] ?? '')).toMatchObject({
      voice: '75.2.0.1:38042',
    });
    expect(queued[0]?.kind === 'bind' && queued[0].ports.map((p) => p.hostPort)).toEqual([
      7100, 8042,
    ]);
  });

  it('takes an NLB listener’s address from what the pod was told at CREATE', async () => {
    const told = toldAtCreate('told.example:10777');
    const { verdict } = await bind(false, told);
    const binding = patched({ metadata: { name: 'gs-1' } }, verdict);
    expect(JSON.parse(annotations(binding)[FRONTS_ANNOTATION] ?? '')).toMatchObject({
      game: 'told.example:10777',
    });
  });

  it('keeps an NLB listener’s address on a node with no private address', async () => {
    const told = toldAtCreate('told.example:10777');
    const { verdict, queued } = await bind(false, told, {
      metadata: { name: 'node-a' },
      status: { addresses: [] },
    });
    const binding = patched({ metadata: { name: 'gs-1' } }, verdict);
    expect(JSON.parse(annotations(binding)[FRONTS_ANNOTATION] ?? '')).toEqual({
      game: 'told.example:10777',
    });
    expect(queued).toEqual([]);
  });

  it('reads the held listener of a port named constructor, which the pod was not told of', async () => {
    const named: V1Pod = {
      metadata: {
        ...pod.metadata,
        annotations: {
          'berth.dev/allocation-id': ID,
          [PORTS_ANNOTATION]: JSON.stringify([
            { name: 'constructor', containerPort: 7777, front: 'nlb' },
          ]),
          [HOST_PORTS_ANNOTATION]: JSON.stringify({ constructor: 7100 }),
          [FRONTS_ANNOTATION]: '{}',
        },
      },
    };
    const { verdict } = await bind(false, named, node, 'constructor', {
      ...RECORD,
      ports: [{ name: 'constructor', range: 'default', port: 7100, protocol: 'UDP' }],
    });
    const binding = patched({ metadata: { name: 'gs-1' } }, verdict);
    expect(JSON.parse(annotations(binding)[FRONTS_ANNOTATION] ?? '')).toEqual({
      constructor: `${NLB.dnsName}:10500`,
    });
  });

  it('queues nothing on a dry run', async () => {
    const { verdict, queued } = await bind(true);
    expect(verdict.allowed).toBe(true);
    expect(queued).toEqual([]);
  });
});
