import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { targetGroupName } from '../../shared/fronts/nlb-front.js';
import { type ListenerSlotRecord, MAKING_LEASE_MS } from '../../shared/fronts/store.js';
import type { BindWork, FrontWork, ReleaseWork } from '../../shared/fronts/work.js';
import { type FrontsWorkerDeps, handleFrontWork } from '../../shared/fronts/worker.js';
import { FakeElbv2 } from '../../sim/fakes/elbv2.js';
import { MemoryFrontStore } from '../../sim/fakes/front-store.js';

const ID = 'aaaaaaaaaaaaaaaaaaaa';
const OTHER = 'bbbbbbbbbbbbbbbbbbbb';
/** A node-level health port, as `fronts.nlb.healthCheck` names one. */
const HEALTH = { protocol: 'HTTP', port: 10256, path: '/healthz' } as const;

function setup() {
  let now = 1_000_000;
  const elbv2 = new FakeElbv2({ now: () => now });
  const nlb = elbv2.addLoadBalancer({ name: 'games', vpcId: 'vpc-1' });
  const store = new MemoryFrontStore();
  const pods = new Map<string, V1Pod>();
  const queued: { work: FrontWork; delay: number }[] = [];
  const deps: FrontsWorkerDeps = {
    cluster: 'prod',
    store,
    kube: { getPod: async (namespace, name) => pods.get(`${namespace}/${name}`) },
    nlb: { api: elbv2, vpcIdOf: async () => 'vpc-1', healthCheck: HEALTH },
    queue: { submit: async (work, delay) => void queued.push({ work, delay }) },
    recheckSeconds: 5,
    now: () => now,
  };
  const claim = (id: string, port: number): ListenerSlotRecord => ({
    slot: { loadBalancerArn: nlb.arn, port },
    owner: { allocationId: id, namespace: 'games', pod: 'gs-1' },
    portName: 'game',
    protocol: 'TCPUDP',
    claimedAt: now,
    state: 'claimed',
  });
  const livePod = (id: string): V1Pod => ({
    metadata: { name: 'gs-1', namespace: 'games', annotations: { 'berth.dev/allocation-id': id } },
    status: { phase: 'Running' },
  });
  return {
    elbv2,
    nlb,
    store,
    pods,
    queued,
    deps,
    claim,
    livePod,
    tick: (ms: number) => {
      now += ms;
    },
  };
}

const bindWork: BindWork = {
  kind: 'bind',
  cluster: 'prod',
  namespace: 'games',
  pod: 'gs-1',
  allocationId: ID,
  node: 'node-a',
  nodeAddress: '10.0.1.20',
  ports: [{ name: 'game', front: 'nlb', protocol: 'TCPUDP', hostPort: 7100 }],
  boundAt: 1_000_000,
};
const releaseWork: ReleaseWork = {
  kind: 'release',
  cluster: 'prod',
  namespace: 'games',
  pod: 'gs-1',
  allocationId: ID,
  admittedAt: 1_000_000,
  attempt: 0,
};

describe('fronts worker, NLB ports', () => {
  it('makes the target group, its target and the listener on the claimed slot, and marks it bound', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    const [outcome] = await handleFrontWork(t.deps, [bindWork]);
    expect(outcome?.kind).toBe('reachable');
    const [listener] = t.elbv2.listeners(t.nlb.arn);
    expect(listener).toMatchObject({ port: 12_000, protocol: 'TCP_UDP' });
    const group = t.elbv2.targetGroups().find((g) => g.arn === listener?.targetGroupArn);
    expect(group?.name).toBe(targetGroupName('prod', ID, 'game'));
    // Checked on the node's health port, never on the game port a UDP server cannot answer.
    expect(group?.healthCheck).toEqual(HEALTH);
    expect(t.elbv2.targets(group?.arn ?? '')).toEqual([{ ip: '10.0.1.20', port: 7100 }]);
    const [slot] = await t.store.listSlots();
    expect(slot).toMatchObject({ state: 'bound', target: { ip: '10.0.1.20', port: 7100 } });
  });

  it('registers every target of a batch before it makes any listener, so registrations start early', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000), t.claim(OTHER, 12_001)]);
    const other = { ...bindWork, pod: 'gs-2', allocationId: OTHER, nodeAddress: '10.0.1.21' };
    await handleFrontWork(t.deps, [bindWork, other]);
    const actions = t.elbv2.calls
      .map((call) => call.action)
      .filter((action) => action === 'RegisterTargets' || action === 'CreateListener');
    expect(actions).toEqual([
      'RegisterTargets',
      'RegisterTargets',
      'CreateListener',
      'CreateListener',
    ]);
  });

  it('makes nothing twice when the same bind is delivered again (a crash between steps)', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    await handleFrontWork(t.deps, [bindWork]);
    const [again] = await handleFrontWork(t.deps, [bindWork]);
    expect(again?.kind).toBe('reachable');
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(1);
    expect(t.elbv2.targetGroups()).toHaveLength(1);
  });

  it('makes one bind of a game server a batch, however often it was queued', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    await handleFrontWork(t.deps, [bindWork, { ...bindWork, resumed: 1 }]);
    expect(t.elbv2.mutatingCalls()).toBe(3);
  });

  it('skips a bind whose slot was freed before it landed, making nothing', async () => {
    const t = setup();
    const [outcome] = await handleFrontWork(t.deps, [bindWork]);
    expect(outcome?.kind).toBe('skipped');
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(0);
  });

  it('keeps the listener of a pod still carrying the id, and looks again with backoff', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    await handleFrontWork(t.deps, [bindWork]);
    t.pods.set('games/gs-1', t.livePod(ID));
    const [outcome] = await handleFrontWork(t.deps, [{ ...releaseWork, attempt: 2 }]);
    expect(outcome).toEqual({ kind: 'waiting', recheckAfter: 20 });
    expect(t.queued[0]?.work).toMatchObject({ kind: 'release', attempt: 3 });
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(1);
    expect(await t.store.listSlots()).toHaveLength(1);
  });

  it('takes the listener and target group down and frees the slot once the pod is gone', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    await handleFrontWork(t.deps, [bindWork]);
    // Bound: its making is over, so the release of the gone pod frees at once.
    expect((await t.store.listSlots())[0]?.makingUntil).toBeUndefined();
    const [outcome] = await handleFrontWork(t.deps, [releaseWork]);
    expect(outcome?.kind).toBe('released');
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(0);
    expect(t.elbv2.targetGroups()).toHaveLength(0);
    expect(await t.store.listSlots()).toHaveLength(0);
  });

  it('never frees a slot under a bind making its listener: the release waits, then takes that listener down', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    // The bind stops inside its CreateListener, as a slow call or a busy budget would hold it.
    let proceed = () => {};
    const entered = new Promise<void>((resolve) => {
      const createListener = t.elbv2.createListener.bind(t.elbv2);
      t.deps = {
        ...t.deps,
        nlb: {
          api: new Proxy(t.elbv2, {
            get: (target, property) => {
              if (property === 'createListener') {
                return async (input: Parameters<typeof createListener>[0]) => {
                  resolve();
                  await new Promise<void>((go) => {
                    proceed = go;
                  });
                  return createListener(input);
                };
              }
              const value = Reflect.get(target, property) as unknown;
              return typeof value === 'function' ? value.bind(target) : value;
            },
          }),
          vpcIdOf: async () => 'vpc-1',
          healthCheck: HEALTH,
        },
      };
    });
    const binding = handleFrontWork(t.deps, [bindWork]);
    await entered;
    // The pod is gone (no pod in the API): its release runs while the listener is being made.
    const [early] = await handleFrontWork(t.deps, [releaseWork]);
    expect(early).toEqual({ kind: 'waiting', recheckAfter: 5 });
    expect(await t.store.listSlots()).toHaveLength(1);
    proceed();
    await binding;
    // Whatever became of the bind (the release took its target group down under it), a
    // listener on the port means the slot is still held: no other game server can be told it.
    const heldWhileListening = async () =>
      t.elbv2.listeners(t.nlb.arn).length === 0 || (await t.store.listSlots()).length === 1;
    expect(await heldWhileListening()).toBe(true);
    // Until the making lease runs out, the release queued again keeps waiting.
    expect((await handleFrontWork(t.deps, [{ ...releaseWork, attempt: 1 }]))[0]?.kind).toBe(
      'waiting',
    );
    expect(await heldWhileListening()).toBe(true);
    t.tick(MAKING_LEASE_MS + 1);
    const [later] = await handleFrontWork(t.deps, [{ ...releaseWork, attempt: 2 }]);
    expect(later?.kind).toBe('released');
    expect(t.elbv2.listeners(t.nlb.arn)).toHaveLength(0);
    expect(await t.store.listSlots()).toHaveLength(0);
  });

  it('frees a slot whose making lease ran out: a bind that stopped after marking it made nothing', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    // A bind marked the slot and died before its CreateListener.
    expect(await t.store.beginMaking(t.claim(ID, 12_000).slot, ID, 1_000_000 + 60_000)).toBe(true);
    expect((await handleFrontWork(t.deps, [releaseWork]))[0]?.kind).toBe('waiting');
    t.tick(60_001);
    expect((await handleFrontWork(t.deps, [releaseWork]))[0]?.kind).toBe('released');
    expect(await t.store.listSlots()).toHaveLength(0);
  });

  it('frees a finished pod and a pod now carrying another id, as gone', async () => {
    for (const pod of [
      { ...setup().livePod(ID), status: { phase: 'Succeeded' } },
      setup().livePod(OTHER),
    ]) {
      const t = setup();
      await t.store.claimSlots([t.claim(ID, 12_000)]);
      t.pods.set('games/gs-1', pod);
      const [outcome] = await handleFrontWork(t.deps, [releaseWork]);
      expect(outcome?.kind).toBe('released');
      expect(await t.store.listSlots()).toHaveLength(0);
    }
  });

  it('reports a failed call as that item failing, leaving the others done', async () => {
    const t = setup();
    await t.store.claimSlots([t.claim(ID, 12_000)]);
    t.elbv2.failNext('CreateListener', 'TooManyListeners');
    const outcomes = await handleFrontWork(t.deps, [
      bindWork,
      { ...releaseWork, allocationId: OTHER },
    ]);
    expect(outcomes.map((o) => o.kind)).toEqual(['failed', 'released']);
    const [slot] = await t.store.listSlots();
    expect(slot?.state).toBe('claimed');
  });
});
