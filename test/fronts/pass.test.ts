import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type ListenerWork, listen, makeTarget } from '../../shared/fronts/nlb-front.js';
import {
  CREATE_GRACE_MS,
  type FrontsPassDeps,
  REQUEUE_GRACE_MS,
  runFrontsPass,
} from '../../shared/fronts/pass.js';
import type { FrontWork } from '../../shared/fronts/work.js';
import {
  FRONTS_ANNOTATION,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../shared/vocabulary/labels.js';
import type { JsonPatchOperation } from '../../shared/vocabulary/patch.js';
import { FakeElbv2, NLB_REGISTRATION_DELAY_MS } from '../../sim/fakes/elbv2.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';

const LIVE = 'aaaaaaaaaaaaaaaaaaaa';
const GONE = 'bbbbbbbbbbbbbbbbbbbb';
const T0 = 10_000_000;

function gamePod(id: string, name: string, node?: string): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'games',
      labels: { 'berth.dev/game-server': 'true' },
      annotations: {
        'berth.dev/allocation-id': id,
        [PORTS_ANNOTATION]: JSON.stringify([{ name: 'game', containerPort: 7777, front: 'nlb' }]),
        [HOST_PORTS_ANNOTATION]: JSON.stringify({ game: 7100 }),
        [FRONTS_ANNOTATION]: '{}',
      },
    },
    spec: node ? { nodeName: node, containers: [] } : { containers: [] },
    status: { phase: 'Running' },
  };
}

function setup() {
  let now = T0;
  const elbv2 = new FakeElbv2({ now: () => now });
  const nlb = elbv2.addLoadBalancer({ name: 'games', vpcId: 'vpc-1' });
  const store = new MemoryFrontStore();
  const pods: V1Pod[] = [];
  const node: V1Node = {
    metadata: { name: 'node-a' },
    status: { addresses: [{ type: 'InternalIP', address: '10.0.1.20' }] },
  };
  const queued: FrontWork[] = [];
  const patches: { name: string; patch: readonly JsonPatchOperation[] }[] = [];
  const deps: FrontsPassDeps = {
    cluster: 'prod',
    store,
    kube: {
      async *listPods() {
        yield* pods;
      },
      async *listNodes() {
        yield node;
      },
      getNode: async (name) => (name === 'node-a' ? node : undefined),
      patchPod: async (_namespace, name, patch) => {
        patches.push({ name, patch });
        const pod = pods.find((p) => p.metadata?.name === name);
        if (!pod) throw new Error(`pod ${name} not found`);
        return pod;
      },
    },
    nlb: { api: elbv2, loadBalancers: async () => [nlb.arn], listenerPorts: 1000 },
    queue: { submit: async (work) => void queued.push(work) },
    now: () => now,
  };
  const claim = (id: string, port: number, at = now) =>
    store.claimSlots([
      {
        slot: { loadBalancerArn: nlb.arn, port },
        owner: { allocationId: id, namespace: 'games', pod: `gs-${id.slice(0, 1)}` },
        portName: 'game',
        protocol: 'UDP',
        claimedAt: at,
        state: 'claimed',
      },
    ]);
  const make = async (id: string, port: number) => {
    const work: ListenerWork = {
      cluster: 'prod',
      slot: { loadBalancerArn: nlb.arn, port },
      allocationId: id,
      namespace: 'games',
      pod: 'gs',
      portName: 'game',
      protocol: 'UDP',
      vpcId: 'vpc-1',
      target: { ip: '10.0.1.20', port: 7100 },
      healthCheck: { protocol: 'HTTP', port: 10256, path: '/healthz' },
    };
    return listen(elbv2, work, await makeTarget(elbv2, work), async () => true);
  };
  return {
    patches,
    elbv2,
    nlb,
    store,
    pods,
    queued,
    deps,
    claim,
    make,
    tick: (ms: number) => {
      now += ms;
    },
  };
}

describe('the fronts pass', () => {
  it('tells a game server its front is ready only once its target serves, and only the owner', async () => {
    const t = setup();
    t.pods.push(gamePod(LIVE, 'gs-a', 'node-a'));
    await t.claim(LIVE, 12_000);
    await t.make(LIVE, 12_000);
    const [slot] = await t.store.listSlots();
    if (!slot) throw new Error('no slot claimed');
    await t.store.markBound(slot.slot, LIVE, {
      target: { ip: '10.0.1.20', port: 7100 },
      boundAt: T0,
      pod: 'gs-a',
    });
    // The listener is in place, but the target's registration has not completed: not ready.
    expect(await runFrontsPass(t.deps)).toMatchObject({ ready: 0 });
    expect(t.patches).toEqual([]);
    t.tick(NLB_REGISTRATION_DELAY_MS);
    expect(await runFrontsPass(t.deps)).toMatchObject({ ready: 1, failed: 0 });
    expect(t.patches).toEqual([
      {
        name: 'gs-a',
        patch: [
          { op: 'test', path: '/metadata/annotations/berth.dev~1allocation-id', value: LIVE },
          { op: 'add', path: '/metadata/annotations/berth.dev~1fronts-ready', value: 'true' },
        ],
      },
    ]);
    expect((await t.store.listSlots())[0]?.servingAt).toBe(T0 + NLB_REGISTRATION_DELAY_MS);
    // Told once: the pod now says so.
    const told = t.pods[0];
    if (told?.metadata?.annotations) told.metadata.annotations['berth.dev/fronts-ready'] = 'true';
    expect(await runFrontsPass(t.deps)).toMatchObject({ ready: 0 });
    // A copy carrying the id: berth cannot tell which is the owner, and tells neither.
    if (told?.metadata?.annotations) told.metadata.annotations['berth.dev/fronts-ready'] = 'false';
    t.pods.push(gamePod(LIVE, 'gs-copy', 'node-a'));
    expect(await runFrontsPass(t.deps)).toMatchObject({ ready: 0 });
  });

  it('takes down and frees what an owner no live pod carries, once the CREATE grace has passed', async () => {
    const t = setup();
    await t.claim(GONE, 12_000);
    await t.make(GONE, 12_000);
    const early = await runFrontsPass(t.deps);
    expect(early.released).toBe(0);
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(1);
    t.tick(CREATE_GRACE_MS + 1);
    const late = await runFrontsPass(t.deps);
    expect(late).toMatchObject({ released: 1, findings: { FrontLeaked: 1 } });
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(0);
    expect(t.elbv2.targetGroups()).toHaveLength(0);
    expect(await t.store.listSlots()).toHaveLength(0);
  });

  it('leaves a gone owner held while a bind of its is making a listener, and frees it after', async () => {
    const t = setup();
    await t.claim(GONE, 12_000);
    const slot = (await t.store.listSlots())[0]?.slot;
    if (!slot) throw new Error('no slot claimed');
    expect(await t.store.beginMaking(slot, GONE, T0 + CREATE_GRACE_MS * 2)).toBe(true);
    t.tick(CREATE_GRACE_MS + 1);
    expect(await runFrontsPass(t.deps)).toMatchObject({ released: 0, making: 1, findings: {} });
    expect(await t.store.listSlots()).toHaveLength(1);
    t.tick(CREATE_GRACE_MS);
    expect(await runFrontsPass(t.deps)).toMatchObject({ released: 1, making: 0 });
    expect(await t.store.listSlots()).toHaveLength(0);
  });

  it('never frees a live pod’s slot, however old', async () => {
    const t = setup();
    t.pods.push(gamePod(LIVE, 'gs-a'));
    await t.claim(LIVE, 12_000);
    t.tick(10 * CREATE_GRACE_MS);
    expect((await runFrontsPass(t.deps)).released).toBe(0);
    expect(await t.store.listSlots()).toHaveLength(1);
  });

  it('removes a listener and target group of this cluster that no held slot names', async () => {
    const t = setup();
    await t.make(GONE, 12_001);
    const summary = await runFrontsPass(t.deps);
    expect(summary.findings).toMatchObject({ ListenerOrphaned: 1, TargetGroupOrphaned: 1 });
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(0);
    expect(t.elbv2.targetGroups()).toHaveLength(0);
  });

  it('reads tags past a listener deleted between its listing and the tag read', async () => {
    const t = setup();
    await t.make(GONE, 12_001);
    await t.make('cccccccccccccccccccc', 12_002);
    t.elbv2.failNext('DescribeTags', 'ListenerNotFound');
    const summary = await runFrontsPass(t.deps);
    expect(summary.findings).toMatchObject({ ListenerOrphaned: 2 });
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(0);
  });

  it('keeps a listener bound while the pass was listing: its slot is read after the listing', async () => {
    const t = setup();
    const list = t.elbv2.describeListeners.bind(t.elbv2);
    let raced = false;
    t.elbv2.describeListeners = async (arn, marker) => {
      if (!raced) {
        raced = true;
        // A burst's bind: its slot claimed and its listener made after the pass began.
        await t.claim(LIVE, 12_000);
        await t.make(LIVE, 12_000);
      }
      return list(arn, marker);
    };
    t.pods.push(gamePod(LIVE, 'gs-a', 'node-a'));
    const summary = await runFrontsPass(t.deps);
    expect(summary.findings.ListenerOrphaned).toBeUndefined();
    expect(summary.findings.TargetGroupOrphaned).toBeUndefined();
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(1);
  });

  it('counts an owner it could not release and goes on with the others', async () => {
    const t = setup();
    await t.claim(GONE, 12_000);
    await t.make(GONE, 12_000);
    await t.claim('cccccccccccccccccccc', 12_001);
    await t.make('cccccccccccccccccccc', 12_001);
    t.tick(CREATE_GRACE_MS + 1);
    t.elbv2.failNext('DeleteListener', 'ValidationError');
    const summary = await runFrontsPass(t.deps);
    expect(summary).toMatchObject({ failed: 1, findings: { FrontLeaked: 1 } });
    expect(await t.store.listSlots()).toHaveLength(1);
  });

  it('leaves listeners it did not make alone', async () => {
    const t = setup();
    const group = await t.elbv2.createTargetGroup({
      name: 'someone-else',
      protocol: 'TCP',
      port: 80,
      vpcId: 'vpc-1',
      tags: [],
    });
    await t.elbv2.createListener({
      loadBalancerArn: t.nlb.arn,
      port: 80,
      protocol: 'TCP',
      targetGroupArn: group.arn,
      tags: [],
    });
    expect((await runFrontsPass(t.deps)).findings).toEqual({});
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(1);
  });

  it('queues the bind again of a bound game server whose listener is still not in place after the grace', async () => {
    const t = setup();
    t.pods.push(gamePod(LIVE, 'gs-a', 'node-a'));
    await t.claim(LIVE, 12_000);
    await runFrontsPass(t.deps);
    expect(t.queued).toEqual([]);
    t.tick(REQUEUE_GRACE_MS + 1);
    const summary = await runFrontsPass(t.deps);
    expect(summary).toMatchObject({ requeued: 1, findings: { FrontNotInPlace: 1 } });
    expect(t.queued[0]).toMatchObject({
      kind: 'bind',
      allocationId: LIVE,
      nodeAddress: '10.0.1.20',
      resumed: 1,
      ports: [{ name: 'game', front: 'nlb', hostPort: 7100 }],
    });
  });
});
