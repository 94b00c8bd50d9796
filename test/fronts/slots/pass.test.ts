/**
 * The fronts pass in slots mode over the ELBv2 fake: chains made when a node joins, told to its
 * game servers once they serve, given back when the node goes and reused by the next, and kept
 * by the orphan sweep.
 */
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { type FrontsPassDeps, runFrontsPass } from '../../../shared/fronts/pass.js';
import {
  FRONTS_READY_ANNOTATION,
  HOST_PORTS_ANNOTATION,
  PORTS_ANNOTATION,
} from '../../../shared/vocabulary/labels.js';
import type { JsonPatchOperation } from '../../../shared/vocabulary/patch.js';
import { FakeElbv2, NLB_REGISTRATION_DELAY_MS } from '../../../sim/fakes/elbv2.js';
import { MemoryFrontStore } from '../../../sim/fakes/front-store.js';
import { MemorySlotChainStore } from '../../../sim/fakes/slot-chain-store.js';

const T0 = 10_000_000;
const ID = 'aaaaaaaaaaaaaaaaaaaa';

const nodeObject = (name: string, address: string): V1Node => ({
  metadata: { name, labels: { role: 'game-server' } },
  status: {
    addresses: [{ type: 'InternalIP', address }],
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: new Date(T0) }],
  },
});

function gamePod(name: string, node: string, hostPort: number): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'games',
      annotations: {
        'berth.dev/allocation-id': ID,
        [PORTS_ANNOTATION]: JSON.stringify([{ name: 'game', containerPort: 7777, front: 'nlb' }]),
        [HOST_PORTS_ANNOTATION]: JSON.stringify({ game: hostPort }),
        [FRONTS_READY_ANNOTATION]: 'false',
      },
    },
    spec: {
      nodeName: node,
      containers: [{ name: 'game', ports: [{ containerPort: 7777, hostPort }] }],
    },
    status: { phase: 'Running' },
  };
}

function setup() {
  let now = T0;
  const elbv2 = new FakeElbv2({ now: () => now });
  elbv2.addVpc('vpc-1', '10.0.0.0/16');
  const nlb = elbv2.addLoadBalancer({ name: 'games', vpcId: 'vpc-1' });
  const chains = new MemorySlotChainStore();
  const nodes: V1Node[] = [];
  const pods: V1Pod[] = [];
  const patches: { name: string; patch: readonly JsonPatchOperation[] }[] = [];
  const deps: FrontsPassDeps = {
    cluster: 'prod',
    store: new MemoryFrontStore(),
    kube: {
      async *listPods() {
        yield* pods;
      },
      async *listNodes() {
        yield* nodes;
      },
      getNode: async (name) => nodes.find((n) => n.metadata?.name === name),
      patchPod: async (_namespace, name, patch) => {
        patches.push({ name, patch });
        const pod = pods.find((p) => p.metadata?.name === name);
        if (!pod) throw new Error(`pod ${name} not found`);
        return pod;
      },
    },
    nlb: { api: elbv2, loadBalancers: async () => [nlb.arn], listenerPorts: 1000 },
    slots: {
      cluster: 'prod',
      chains,
      elbv2,
      members: async () => [
        { arn: nlb.arn, dnsName: nlb.dnsName, vpcId: 'vpc-1', foreignPorts: new Set<number>() },
      ],
      listenerPorts: { base: 20_000, size: 100 },
      placement: 'balanced',
      hostPorts: [8000, 8001],
      healthCheck: { protocol: 'HTTP', port: 10256, path: '/healthz' },
      nodeSelector: 'role=game-server',
      random: () => 0.5,
      now: () => now,
    },
    queue: { submit: async () => undefined },
    now: () => now,
  };
  const calls = (action: string) => elbv2.counts.get(action as never) ?? 0;
  return {
    elbv2,
    nlb,
    chains,
    nodes,
    pods,
    patches,
    calls,
    pass: () => runFrontsPass(deps),
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe('the fronts pass in slots mode', () => {
  it('makes a chain per slot of a joining node, keeps them through the orphan sweep, and marks them serving', async () => {
    const world = setup();
    world.nodes.push(nodeObject('node-a', '10.0.1.20'));
    const first = await world.pass();
    expect(first.slots).toMatchObject({ created: 2, failed: 0, unseated: 0 });
    const listeners = world.elbv2.listeners(world.nlb.arn);
    expect(listeners.map((l) => l.protocol)).toEqual(['TCP_UDP', 'TCP_UDP']);
    const targets = listeners.flatMap((l) => world.elbv2.targets(l.targetGroupArn));
    expect(targets.map((t) => `${t.ip}:${t.port}`).sort()).toEqual([
      '10.0.1.20:8000',
      '10.0.1.20:8001',
    ]);
    // Three calls a slot: nothing else.
    expect(world.calls('CreateTargetGroup') + world.calls('CreateListener')).toBe(4);
    expect(world.calls('RegisterTargets')).toBe(2);

    world.advance(60_000);
    const second = await world.pass();
    expect(second.findings).toEqual({});
    // Every seat has its chain: one node's seats more are made spare, with no target.
    expect(second.slots?.created).toBe(2);
    const spares = world.elbv2
      .listeners(world.nlb.arn)
      .filter((l) => world.elbv2.targets(l.targetGroupArn).length === 0);
    expect([world.elbv2.listeners(world.nlb.arn).length, spares.length]).toEqual([4, 2]);
    expect((await world.chains.listChains()).every((c) => c.holder?.servingAt === undefined)).toBe(
      true,
    );

    world.advance(NLB_REGISTRATION_DELAY_MS);
    expect((await world.pass()).slots?.serving).toBe(2);
    expect(world.calls('CreateListener')).toBe(4);
  });

  it('tells a game server bound before its seat had a chain its address and that it routes', async () => {
    const world = setup();
    world.nodes.push(nodeObject('node-a', '10.0.1.20'));
    world.pods.push(gamePod('gs-1', 'node-a', 8001));
    await world.pass();
    expect(world.patches).toEqual([]);
    world.advance(NLB_REGISTRATION_DELAY_MS + 1_000);
    await world.pass();
    const chain = (await world.chains.chainAt('node-a', 8001)) ?? expect.fail('no chain');
    const patch = world.patches.find((p) => p.name === 'gs-1')?.patch ?? [];
    expect(patch).toContainEqual({
      op: 'replace',
      path: '/metadata/annotations/berth.dev~1fronts-ready',
      value: 'true',
    });
    expect(patch).toContainEqual({
      op: 'add',
      path: '/metadata/annotations/berth.dev~1fronts',
      value: JSON.stringify({ game: `${world.nlb.dnsName}:${chain.slot.port}` }),
    });
  });

  it('gives a gone node’s chains back only where no live pod holds the host port, and reuses them for the next node', async () => {
    const world = setup();
    world.nodes.push(nodeObject('node-a', '10.0.1.20'));
    await world.pass();
    // node-a goes; a pod of it is still live on 8000 (its node object deleted first).
    world.nodes.length = 0;
    world.pods.push(gamePod('gs-left', 'node-a', 8000));
    world.advance(60_000);
    const gone = await world.pass();
    expect(gone.slots?.released).toBe(1);
    expect(await world.chains.chainAt('node-a', 8000)).toBeDefined();
    expect(await world.chains.chainAt('node-a', 8001)).toBeUndefined();
    // The pod goes too, and node-b joins: its two seats take free chains (the one freed, the
    // spare made meanwhile), with no CreateListener for them.
    world.pods.length = 0;
    world.nodes.push(nodeObject('node-b', '10.0.1.21'));
    world.advance(60_000);
    const listenersBefore = world.calls('CreateListener');
    const next = await world.pass();
    expect(next.slots).toMatchObject({ released: 1, assigned: 2, failed: 0 });
    // Only spares are made: the free chains left after seating, topped up to one node's seats.
    expect(world.calls('CreateListener') - listenersBefore).toBe(next.slots?.created);
    expect(world.calls('DeregisterTargets')).toBe(2);
    expect(world.calls('RegisterTargets')).toBe(4);
    const targets = world.elbv2
      .listeners(world.nlb.arn)
      .flatMap((l) => world.elbv2.targets(l.targetGroupArn).map((t) => `${t.ip}:${t.port}`));
    expect(targets.sort()).toEqual(['10.0.1.21:8000', '10.0.1.21:8001']);
  });

  it('finishes a chain whose seat left before it was made, asking for the same target group', async () => {
    const world = setup();
    world.nodes.push(nodeObject('node-a', '10.0.1.20'));
    world.elbv2.failNext('RegisterTargets', 'InternalFailure');
    world.elbv2.failNext('RegisterTargets', 'InternalFailure');
    expect((await world.pass()).slots).toMatchObject({ created: 0, failed: 2 });
    // node-a goes before its chains were made: they let go of it, unmade.
    world.nodes.length = 0;
    world.advance(60_000);
    expect((await world.pass()).slots).toMatchObject({ released: 2, failed: 0 });
    world.advance(60_000);
    const made = await world.pass();
    expect(made.slots?.failed).toBe(0);
    const chains = await world.chains.listChains();
    expect(chains.filter((c) => c.madeAt !== undefined).length).toBeGreaterThanOrEqual(2);
    expect(chains.every((c) => c.holder === undefined)).toBe(true);
    expect(world.elbv2.targetGroups()).toHaveLength(chains.length);
  });

  it('finishes a chain a failed call left half-made, with no second listener', async () => {
    const world = setup();
    world.nodes.push(nodeObject('node-a', '10.0.1.20'));
    world.elbv2.failNext('CreateListener', 'InternalFailure');
    const first = await world.pass();
    expect(first.slots).toMatchObject({ created: 1, failed: 1 });
    world.advance(60_000);
    const second = await world.pass();
    expect(second.slots).toMatchObject({ finished: 1, failed: 0, created: 2 });
    // Two seats' chains and two spares: the failed one made once, not twice.
    expect(world.elbv2.listeners(world.nlb.arn)).toHaveLength(4);
    expect(world.elbv2.targetGroups()).toHaveLength(4);
    expect(
      (await world.chains.listChains())
        .filter((c) => c.holder !== undefined)
        .map((c) => c.holder?.registeredAt !== undefined),
    ).toEqual([true, true]);
  });
});
