import type { V1Node, V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/schema.js';
import { planScale, protectionOf, type ScalePlan } from '../../shared/scale/plan.js';
import { type ScalePolicy, scalePolicy } from '../../shared/scale/policy.js';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import { EMPTY_SCALE_MEMORY } from '../../shared/scale/store.js';
import {
  CORDONED_AT,
  DO_NOT_DISRUPT,
  PLACEHOLDER_LABEL,
  REMOVAL_STARTED_AT,
  SCALE_DOWN_DISABLED,
} from '../../shared/vocabulary/labels.js';
import { berthCordoned, gameServers, node, pod, T0 } from './builders.js';

const MINUTE = 60_000;

interface Setup {
  readonly scale?: Record<string, unknown>;
  readonly policy?: Partial<ScalePolicy>;
  readonly desiredSize?: number;
  readonly now?: number;
}

/**
 * The policy of a `scale` section. The rules these tests are about take the surplus, budget and
 * demand settings out of the way unless a test sets them: cordons at once, any removals, the
 * buffer as configured.
 */
function policyFor(scale: Record<string, unknown> = {}): ScalePolicy {
  return scalePolicy(
    parseConfig({
      scale: {
        cordonAfterSeconds: 0,
        disruptionBudget: { nodesPerPass: '100%', nodesPerHour: '100%' },
        demand: { enabled: false },
        ...scale,
      },
    }).scale,
  );
}

function plan(nodes: V1Node[], pods: V1Pod[], setup: Setup = {}): ScalePlan {
  const snapshot = buildSnapshot(nodes, pods, { desiredSize: setup.desiredSize });
  return planScale(snapshot, { ...policyFor(setup.scale), ...setup.policy }, setup.now ?? T0);
}

const summary = (p: ScalePlan): string[] =>
  p.actions.map((a) =>
    a.type === 'grow' ? `grow ${a.from}->${a.to}` : `${a.type} ${a.node ?? ''}`,
  );

describe('planScale: NLB slots mode', () => {
  /** One Ready node of 40 slots whose Ready was `readyAgoMs` ago, `serving` slots' chains serving. */
  function slotsPlan(serving: number, readyAgoMs: number) {
    const snapshot = buildSnapshot([node('n1')], gameServers('n1', 5), { desiredSize: 1 });
    const nodes = snapshot.nodes.map((n) => ({
      ...n,
      readyAtMs: T0 - readyAgoMs,
      servingFrontSeats: serving,
    }));
    return planScale({ ...snapshot, nodes }, policyFor({ bufferGameServers: 20, maxNodes: 5 }), T0);
  }

  it('counts only slots whose chain serves as free; the rest are coming within the boot grace', () => {
    const fresh = slotsPlan(15, 60_000);
    // 15 serving seats, 5 taken by game servers: 10 free; the other 25 of 35 slots are coming.
    expect([fresh.tally.free, fresh.tally.coming]).toEqual([10, 25]);
    expect(summary(fresh)).toEqual([]);
    const warm = slotsPlan(40, 60_000);
    expect([warm.tally.free, warm.tally.coming]).toEqual([35, 0]);
  });

  it('stops counting slots whose chain never serves once the boot grace has passed, and says so', () => {
    const stale = slotsPlan(15, 60 * MINUTE);
    expect([stale.tally.free, stale.tally.coming]).toEqual([10, 0]);
    expect(stale.notes).toContainEqual({
      node: 'n1',
      reason: "25 slots' NLB fronts do not serve past the boot grace: not counted",
    });
    expect(summary(stale)).toEqual(['grow 1->2']);
  });
});

describe('planScale: scaling up', () => {
  it('grows to minNodes when there are fewer nodes', () => {
    const result = plan([], [], { scale: { minNodes: 2, bufferGameServers: 0 } });
    expect(summary(result)).toEqual(['grow 0->2']);
  });

  it('grows to minNodes and for the buffer in one request', () => {
    // One node of 40 slots, buffer 100: 60 missing → 2 more nodes; minNodes 2 is covered by that.
    const result = plan([node('n1')], [], {
      scale: { minNodes: 2, bufferGameServers: 100, maxNodes: 10 },
    });
    expect(summary(result)).toEqual(['grow 1->3']);
  });

  it('asks for the whole shortfall at once: ceil(missing slots / slots per node)', () => {
    // 4 CPU nodes, 100m slots: 40 per node. One full node, buffer 90 → 90 missing → 3 nodes.
    const result = plan([node('n1')], gameServers('n1', 40), { scale: { bufferGameServers: 90 } });
    expect(summary(result)).toEqual(['grow 1->4']);
  });

  it('never grows above maxNodes', () => {
    const result = plan([node('n1')], gameServers('n1', 40), {
      scale: { bufferGameServers: 1000, maxNodes: 3 },
    });
    expect(summary(result)).toEqual(['grow 1->3']);
    expect(result.actions[0]?.reason).toContain('capped at maxNodes 3');
  });

  it('notes instead of growing when already at maxNodes', () => {
    const result = plan(
      [node('n1'), node('n2')],
      [...gameServers('n1', 40), ...gameServers('n2', 40)],
      {
        scale: { maxNodes: 2 },
      },
    );
    expect(result.actions).toEqual([]);
    expect(result.notes.map((n) => n.reason).join()).toContain('at maxNodes 2');
  });

  it('uncordons a berth-cordoned node before growing', () => {
    const nodes = [node('n1'), berthCordoned('n2', T0 - MINUTE)];
    const result = plan(nodes, gameServers('n1', 35), { scale: { bufferGameServers: 10 } });
    expect(summary(result)).toEqual(['uncordon n2']);
  });

  it('uncordons the fullest cordoned node first, by game servers', () => {
    const nodes = [
      node('n1'),
      berthCordoned('empty', T0 - 30_000),
      berthCordoned('busy', T0 - 30_000),
      berthCordoned('half', T0 - 30_000),
    ];
    const pods = [...gameServers('n1', 40), ...gameServers('busy', 30), ...gameServers('half', 20)];
    const result = plan(nodes, pods, { scale: { bufferGameServers: 5 } });
    expect(summary(result)).toEqual(['uncordon busy']);
  });

  it('grows only for what uncordoning leaves missing', () => {
    const nodes = [node('n1'), berthCordoned('n2', T0 - MINUTE)];
    const pods = [...gameServers('n1', 40), ...gameServers('n2', 30)];
    // n2 brings 10 slots; buffer 50 → 40 missing → one 40-slot node.
    const result = plan(nodes, pods, { scale: { bufferGameServers: 50 } });
    expect(summary(result)).toEqual(['uncordon n2', 'grow 2->3']);
  });

  it('uncordons when fewer than minNodes nodes are schedulable, even with slots to spare', () => {
    const nodes = [node('n1'), berthCordoned('n2', T0 - 30_000), berthCordoned('n3', T0 - 30_000)];
    const result = plan(nodes, gameServers('n2', 3), {
      scale: { minNodes: 2, bufferGameServers: 1 },
    });
    expect(summary(result)).toEqual(['uncordon n2']);
  });

  it('counts pending game servers as demand', () => {
    const pending = Array.from({ length: 35 }, (_, i) => pod(`waiting-${i}`));
    const result = plan([node('n1')], pending, { scale: { bufferGameServers: 10 } });
    // 40 free - 35 pending = 5 < 10 → one more node.
    expect(summary(result)).toEqual(['grow 1->2']);
  });

  it('does not count pending pods that are not game servers, or game servers already bound', () => {
    const pods = [pod('web', { game: false }), ...gameServers('n1', 20)];
    expect(plan([node('n1')], pods, { scale: { bufferGameServers: 20 } }).actions).toEqual([]);
  });

  it('counts a booting node as capacity that is coming, so growth is not ordered twice', () => {
    const nodes = [node('n1'), node('n2', { ready: false, createdAtMs: T0 - 2 * MINUTE })];
    const result = plan(nodes, gameServers('n1', 40), { scale: { bufferGameServers: 10 } });
    expect(result.actions).toEqual([]);
    expect(result.tally.coming).toBe(40);
  });

  it('counts instances asked for but not registered yet as coming', () => {
    const result = plan([node('n1')], gameServers('n1', 40), {
      desiredSize: 2,
      scale: { bufferGameServers: 10 },
    });
    expect(result.actions).toEqual([]);
    expect(result.tally).toMatchObject({ coming: 40, poolSize: 2 });
  });

  it('grows from the desired size, not from the registered nodes', () => {
    const result = plan([node('n1')], gameServers('n1', 40), {
      desiredSize: 2,
      scale: { bufferGameServers: 50 },
    });
    expect(summary(result)).toEqual(['grow 2->3']);
  });

  it('gives no slots to a node NotReady past the boot grace', () => {
    const nodes = [node('n1'), node('n2', { ready: false, createdAtMs: T0 - 60 * MINUTE })];
    const result = plan(nodes, gameServers('n1', 40), { scale: { bufferGameServers: 10 } });
    expect(summary(result)).toEqual(['grow 2->3']);
    expect(result.tally.free).toBe(0);
  });

  it('grows one node at a time when no node tells the size of a new one', () => {
    const pending = Array.from({ length: 100 }, (_, i) => pod(`p-${i}`));
    const result = plan([], pending, { scale: { minNodes: 0, bufferGameServers: 10 } });
    expect(summary(result)).toEqual(['grow 0->1']);
  });
});

describe('planScale: counting slots', () => {
  it('counts CPU requests, not limits', () => {
    // Limits of 400m would leave 0 slots; requests of 100m leave 10 of 40 free.
    const pods = Array.from({ length: 30 }, (_, i) => pod(`g${i}`, { node: 'n1', limit: '400m' }));
    expect(plan([node('n1')], pods, { scale: { bufferGameServers: 10 } }).tally.free).toBe(10);
  });

  it('counts allocatable CPU, not capacity', () => {
    const result = plan([node('n1', { cpu: '3920m' })], [], { scale: { bufferGameServers: 1 } });
    expect(result.tally.free).toBe(39);
  });

  it('counts every non-terminal pod on the node, not only game servers', () => {
    const pods = [
      pod('daemon', { node: 'n1', cpu: '500m', game: false }),
      pod('done', { node: 'n1', cpu: '2', game: false, phase: 'Succeeded' }),
    ];
    expect(plan([node('n1')], pods, { scale: { bufferGameServers: 1 } }).tally.free).toBe(35);
  });

  it('counts an init container larger than the containers as the pod request', () => {
    const big = pod('g', {
      node: 'n1',
      initContainers: [{ name: 'warmup', resources: { requests: { cpu: '1' } } }],
    });
    expect(plan([node('n1')], [big], { scale: { bufferGameServers: 1 } }).tally.free).toBe(30);
  });

  it('sizes each node by its own allocatable CPU when sizes are mixed', () => {
    const nodes = [node('small', { cpu: '2' }), node('large', { cpu: '16' })];
    const result = plan(nodes, [], { scale: { bufferGameServers: 10 } });
    expect(result.tally.free).toBe(180);
  });

  it('assumes a new node is as small as the smallest Ready node', () => {
    const nodes = [node('small', { cpu: '2' }), node('large', { cpu: '16' })];
    const pods = [...gameServers('small', 20), ...gameServers('large', 160)];
    const result = plan(nodes, pods, { scale: { bufferGameServers: 30 } });
    expect(result.tally.slotsPerNewNode).toBe(20);
    expect(summary(result)).toEqual(['grow 2->4']);
  });

  it('leaves a node’s other pods out of the new-node estimate', () => {
    const pods = [pod('daemon', { node: 'n1', cpu: '1', game: false }), ...gameServers('n1', 30)];
    const result = plan([node('n1')], pods, { scale: { bufferGameServers: 10 } });
    expect(result.tally.slotsPerNewNode).toBe(30);
  });

  it('gives no slots to a cordoned node', () => {
    const result = plan([berthCordoned('n1', T0)], [], {
      scale: { minNodes: 0, bufferGameServers: 0 },
    });
    expect(result.tally.free).toBe(0);
  });
});

describe('planScale: scaling down', () => {
  it('cordons as many nodes as the excess capacity allows, never below minNodes schedulable', () => {
    // The reference's example: 5 nodes of 5 CPU, 500m slots (10 per node), buffer 5, min 3.
    // Upstream cordons 4 of the 5; berth stops at 3 schedulable.
    const nodes = ['a', 'b', 'c', 'd', 'e'].map((n) => node(n, { cpu: '5' }));
    const result = plan(nodes, [], {
      scale: { gameServerCpuMillis: 500, bufferGameServers: 5, minNodes: 3 },
    });
    expect(summary(result)).toEqual(['cordon a', 'cordon b']);
  });

  it('cordons only what keeps the buffer free', () => {
    const nodes = ['a', 'b', 'c'].map((n) => node(n));
    // 120 free, buffer 50 → 70 excess: one empty node (40) fits, a second would not.
    const result = plan(nodes, [], { scale: { bufferGameServers: 50, minNodes: 1 } });
    expect(summary(result)).toEqual(['cordon a']);
  });

  it('cordons the node with the fewest game servers, not the fewest pods', () => {
    const daemons = Array.from({ length: 5 }, (_, i) =>
      pod(`d${i}`, { node: 'quiet', cpu: '10m', game: false }),
    );
    const nodes = [node('busy'), node('quiet'), node('one')];
    const pods = [...gameServers('busy', 30), ...daemons, ...gameServers('one', 1)];
    const result = plan(nodes, pods, { scale: { bufferGameServers: 20, minNodes: 1 } });
    expect(summary(result)).toEqual(['cordon quiet']);
  });

  it('never re-cordons an already cordoned node', () => {
    const nodes = [node('a'), node('b'), berthCordoned('c', T0 - 30_000)];
    const result = plan(nodes, gameServers('c', 1), {
      scale: { bufferGameServers: 10, minNodes: 1 },
    });
    expect(summary(result)).toEqual(['cordon a']);
    expect(result.actions.some((a) => a.node === 'c')).toBe(false);
  });

  it('keeps headroom above the buffer only when asked to (cordonHeadroomNodes)', () => {
    const nodes = [node('busy'), node('empty')];
    const pods = gameServers('busy', 20);
    // 60 free, buffer 10: without headroom the empty node (40) goes, leaving 20.
    const eager = plan(nodes, pods, {
      scale: { bufferGameServers: 10 },
      policy: { cordonHeadroomNodes: 0 },
    });
    expect(summary(eager)).toEqual(['cordon empty']);
    // The default has none: the buffer is what the user set.
    expect(summary(plan(nodes, pods, { scale: { bufferGameServers: 10 } }))).toEqual([
      'cordon empty',
    ]);
    // With half a node (20 slots) asked for, 60 - 10 - 20 = 30 < 40: nothing is cordoned.
    expect(
      plan(nodes, pods, { scale: { bufferGameServers: 10, cordonHeadroomNodes: 0.5 } }).actions,
    ).toEqual([]);
  });

  it('cordons nothing while short of slots', () => {
    const nodes = [node('a'), node('b')];
    const result = plan(nodes, [], { scale: { bufferGameServers: 100, maxNodes: 2 } });
    expect(result.actions.filter((a) => a.type === 'cordon')).toEqual([]);
  });

  it('keeps the buffer on Ready capacity alone, whatever is booting', () => {
    const nodes = [node('a'), node('b', { ready: false, createdAtMs: T0 - MINUTE })];
    const result = plan(nodes, gameServers('a', 20), { scale: { bufferGameServers: 15 } });
    expect(result.actions).toEqual([]);
  });
});

describe('planScale: removing nodes', () => {
  const delay = { shutdownDelaySeconds: 60, minNodes: 1, bufferGameServers: 0 };

  it('removes a drained berth-cordoned node only after the shutdown delay', () => {
    const nodes = [node('a'), berthCordoned('b', T0 - 59_000)];
    expect(summary(plan(nodes, [], { scale: delay }))).toEqual([]);
    const later = plan(nodes, [], { scale: delay, now: T0 + 1_000 });
    expect(summary(later)).toEqual(['delete b']);
  });

  it('never goes below minNodes, removing the oldest cordon first', () => {
    const nodes = [
      berthCordoned('young', T0 - 2 * MINUTE),
      berthCordoned('old', T0 - 10 * MINUTE),
      berthCordoned('mid', T0 - 5 * MINUTE),
    ];
    const result = plan(nodes, [], { scale: { ...delay, minNodes: 1 } });
    // minNodes 1 schedulable: the fullest (by requests, then name) is uncordoned, then two deleted.
    expect(summary(result)).toEqual(['uncordon mid', 'delete old', 'delete young']);
    const two = plan(nodes, [], { scale: { ...delay, minNodes: 2 } });
    expect(summary(two)).toEqual(['uncordon mid', 'uncordon old', 'delete young']);
  });

  it('uncordons for minNodes schedulable before removing the rest', () => {
    const nodes = [
      node('a'),
      berthCordoned('b', T0 - 10 * MINUTE),
      berthCordoned('c', T0 - 20 * MINUTE),
    ];
    const result = plan(nodes, [], { scale: { ...delay, minNodes: 2 } });
    expect(summary(result)).toEqual(['uncordon b', 'delete c']);
  });

  it('never removes a node with a Pending, Running or Unknown game server', () => {
    for (const phase of ['Pending', 'Running', 'Unknown'] as const) {
      const nodes = [node('a'), berthCordoned('b', T0 - 10 * MINUTE)];
      const result = plan(nodes, [pod('g', { node: 'b', phase })], { scale: delay });
      expect(result.actions.filter((a) => a.type === 'delete')).toEqual([]);
    }
  });

  it('removes a node whose game servers have finished', () => {
    const nodes = [node('a'), berthCordoned('b', T0 - 10 * MINUTE)];
    const pods = [
      pod('g1', { node: 'b', phase: 'Succeeded' }),
      pod('g2', { node: 'b', phase: 'Failed' }),
    ];
    expect(summary(plan(nodes, pods, { scale: delay }))).toEqual(['delete b']);
  });

  it('removes a node that still runs other pods', () => {
    const nodes = [node('a'), berthCordoned('b', T0 - 10 * MINUTE)];
    const pods = [pod('daemon', { node: 'b', game: false })];
    expect(summary(plan(nodes, pods, { scale: delay }))).toEqual(['delete b']);
  });

  it('removes drained nodes in the same pass that uncordoning covered the need', () => {
    const nodes = [
      node('a'),
      berthCordoned('busy', T0 - 10 * MINUTE),
      berthCordoned('drained', T0 - 10 * MINUTE, { ready: false }),
    ];
    const pods = [...gameServers('a', 40), ...gameServers('busy', 10)];
    const result = plan(nodes, pods, { scale: { ...delay, bufferGameServers: 10 } });
    expect(summary(result)).toEqual(['uncordon busy', 'delete drained']);
  });

  it('reads offsets and nanoseconds in cordoned-at', () => {
    const nodes = [
      node('a'),
      node('b', {
        unschedulable: true,
        annotations: { [CORDONED_AT]: '2025-12-31T18:50:00.123456789-05:00' },
      }),
    ];
    expect(summary(plan(nodes, [], { scale: delay }))).toEqual(['delete b']);
  });

  it('does not let a bad cordoned-at on one node block the others', () => {
    const nodes = [
      node('a'),
      node('bad', { unschedulable: true, annotations: { [CORDONED_AT]: 'yesterday' } }),
      berthCordoned('good', T0 - 10 * MINUTE),
    ];
    const result = plan(nodes, [], { scale: delay });
    expect(summary(result)).toEqual(['delete good']);
    expect(result.notes).toContainEqual(expect.objectContaining({ node: 'bad' }));
  });

  it('finishes a removal an earlier pass left half-done first, whatever the delay and minimum', () => {
    const marked = [
      node('a', {
        unschedulable: true,
        annotations: {
          [CORDONED_AT]: new Date(T0 - MINUTE).toISOString(),
          [REMOVAL_STARTED_AT]: new Date(T0 - 1_000).toISOString(),
        },
      }),
    ];
    const result = plan(marked, [], { scale: { ...delay, minNodes: 1 } });
    expect(result.actions[0]).toMatchObject({ type: 'delete', node: 'a', resume: true });
  });

  it('removes a drained node only once its cordon is a commit window old, whatever the shutdown delay', () => {
    const cordoned = (ago: number) => [node('a'), berthCordoned('b', T0 - ago)];
    const scale = { shutdownDelaySeconds: 0, minNodes: 1 };
    const early = plan(cordoned(29_000), [], { scale });
    expect(early.actions).toEqual([]);
    expect(early.notes).toContainEqual({
      node: 'b',
      reason: expect.stringMatching(/waiting until the cordon is 30s old/),
    });
    const result = plan(cordoned(30_000), [], { scale });
    expect(result.actions).toMatchObject([{ type: 'delete', node: 'b', resume: false }]);
  });

  it('takes back the mark of a started removal when a game server runs there now', () => {
    const nodes = [
      node('a'),
      berthCordoned('b', T0 - 10 * MINUTE, {
        annotations: { [REMOVAL_STARTED_AT]: new Date(T0 - MINUTE).toISOString() },
      }),
    ];
    const result = plan(nodes, [pod('g', { node: 'b' })], { scale: delay });
    expect(result.actions.filter((a) => a.type === 'delete')).toEqual([]);
    expect(summary(result)).toContain('withdraw b');
  });

  it('ignores nodes someone else is deleting', () => {
    const nodes = [node('a'), berthCordoned('b', T0 - 10 * MINUTE, { deleting: true })];
    expect(plan(nodes, [], { scale: delay }).actions).toEqual([]);
  });
});

describe('planScale: nodes berth must not touch', () => {
  const protectedNodes = (): V1Node[] => [
    node('dnd', { annotations: { [DO_NOT_DISRUPT]: 'true' } }),
    node('casd', { annotations: { [SCALE_DOWN_DISABLED]: 'true' } }),
    node('manual', { unschedulable: true }),
    berthCordoned('dnd-cordoned', T0 - 60 * MINUTE, {
      annotations: { [DO_NOT_DISRUPT]: 'true' },
    }),
    berthCordoned('casd-cordoned', T0 - 60 * MINUTE, {
      annotations: { [SCALE_DOWN_DISABLED]: 'true' },
    }),
  ];
  const touched = (p: ScalePlan): string[] => p.actions.flatMap((a) => (a.node ? [a.node] : []));

  it('never cordons, uncordons or removes them, short of slots or not', () => {
    const names = protectedNodes().map((n) => n.metadata?.name);
    const excess = plan(protectedNodes(), [], { scale: { minNodes: 0, bufferGameServers: 0 } });
    const shortfall = plan(protectedNodes(), [], {
      scale: { minNodes: 0, bufferGameServers: 500, maxNodes: 50 },
    });
    for (const result of [excess, shortfall]) {
      expect(touched(result).filter((n) => names.includes(n))).toEqual([]);
    }
    // 80 free slots on the two schedulable protected nodes; 420 missing → 11 nodes of 40.
    expect(summary(shortfall)).toEqual(['grow 5->16']);
  });

  it('still counts their free slots', () => {
    const result = plan(protectedNodes(), [], { scale: { minNodes: 0, bufferGameServers: 1 } });
    expect(result.tally.free).toBe(80);
  });

  it('names why in the notes', () => {
    const result = plan(protectedNodes(), [], { scale: { minNodes: 0 } });
    const noted = result.notes.map((n) => n.node);
    expect(noted).toEqual(
      expect.arrayContaining(['dnd', 'casd', 'manual', 'dnd-cordoned', 'casd-cordoned']),
    );
  });

  it('treats values other than "true" as no opt-out', () => {
    const n = buildSnapshot([node('x', { annotations: { [DO_NOT_DISRUPT]: 'false' } })], [], {})
      .nodes[0];
    expect(n && protectionOf(n)).toBeUndefined();
  });
});

describe('scalePolicy', () => {
  it('takes thresholds from the config and names the rest in one table', () => {
    expect(
      scalePolicy(
        parseConfig({ scale: { gameServerCpuMillis: 250, shutdownDelaySeconds: 90 } }).scale,
      ),
    ).toEqual({
      slotMillis: 250,
      bufferSlots: 10,
      minNodes: 1,
      maxNodes: 10,
      shutdownDelayMs: 90_000,
      cordonAfterMs: 180_000,
      cordonHeadroomNodes: 0,
      removalsPerPass: '10%',
      removalsPerHour: '50%',
      followDemand: true,
      demandWindowMs: 900_000,
      burstWindowMs: 86_400_000,
      defaultProvisionMs: 240_000,
      passIntervalMs: 60_000,
      reactionMs: 60_000,
      placeholders: false,
      bootGraceMs: 600_000,
      commitWindowMs: 30_000,
      leaseTtlMs: 120_000,
      concurrency: 4,
      drain: {
        evictionsPerPass: 10,
        nodeLifetimeMs: 0,
        longestSessionMs: 3_600_000,
        costlyFactor: 3,
        costlySlackMs: 600_000,
        protection: 'OnUpgrade',
        protectionsPerPass: 200,
      },
    });
  });
});

describe('planScale: invariants', () => {
  const nodeArb = fc.record({
    cpu: fc.constantFrom('2', '4', '8'),
    ready: fc.boolean(),
    state: fc.constantFrom('schedulable', 'berth', 'berth-bad', 'manual', 'dnd', 'removing'),
    cordonedAgoMin: fc.integer({ min: 0, max: 30 }),
    games: fc.integer({ min: 0, max: 50 }),
    gamePhase: fc.constantFrom('Pending', 'Running', 'Unknown', 'Succeeded'),
    daemonMillis: fc.integer({ min: 0, max: 1000 }),
    youngMin: fc.integer({ min: 0, max: 60 }),
  });
  const setupArb = fc.record({
    nodes: fc.array(nodeArb, { maxLength: 8 }),
    pending: fc.integer({ min: 0, max: 60 }),
    minNodes: fc.integer({ min: 0, max: 4 }),
    extraMax: fc.integer({ min: 0, max: 6 }),
    buffer: fc.integer({ min: 0, max: 80 }),
    desiredExtra: fc.option(fc.integer({ min: -2, max: 3 }), { nil: undefined }),
  });

  it('never breaks a safety rule, whatever the cluster', () => {
    fc.assert(
      fc.property(setupArb, (s) => {
        const nodes: V1Node[] = [];
        const pods: V1Pod[] = [];
        s.nodes.forEach((spec, i) => {
          const name = `n${i}`;
          const at = new Date(T0 - spec.cordonedAgoMin * MINUTE).toISOString();
          const annotations: Record<string, string> =
            {
              berth: { [CORDONED_AT]: at },
              'berth-bad': { [CORDONED_AT]: 'not a time' },
              removing: { [CORDONED_AT]: at, [REMOVAL_STARTED_AT]: at },
              dnd: { [DO_NOT_DISRUPT]: 'true' },
              manual: {},
              schedulable: {},
            }[spec.state] ?? {};
          nodes.push(
            node(name, {
              cpu: spec.cpu,
              ready: spec.ready,
              unschedulable: spec.state !== 'schedulable' && spec.state !== 'dnd',
              annotations,
              createdAtMs: T0 - spec.youngMin * MINUTE,
            }),
          );
          for (let g = 0; g < spec.games; g++) {
            pods.push(pod(`${name}-g${g}`, { node: name, phase: spec.gamePhase }));
          }
          pods.push(pod(`${name}-d`, { node: name, cpu: `${spec.daemonMillis}m`, game: false }));
        });
        for (let p = 0; p < s.pending; p++) pods.push(pod(`pending-${p}`));
        const maxNodes = Math.max(1, s.minNodes + s.extraMax);
        const desiredSize =
          s.desiredExtra === undefined ? undefined : Math.max(0, nodes.length + s.desiredExtra);
        const snapshot = buildSnapshot(nodes, pods, { desiredSize });
        const policy = policyFor({ minNodes: s.minNodes, maxNodes, bufferGameServers: s.buffer });
        const result = planScale(snapshot, policy, T0);
        const byName = new Map(snapshot.nodes.map((n) => [n.name, n]));

        const deleted = result.actions.filter((a) => a.type === 'delete');
        const cordoned = result.actions.filter((a) => a.type === 'cordon');
        const uncordoned = result.actions.filter((a) => a.type === 'uncordon');
        const grow = result.actions.filter((a) => a.type === 'grow');
        for (const a of result.actions) {
          if (a.type === 'grow') continue;
          const target = byName.get(a.node ?? '');
          expect(target).toBeDefined();
          if (!target) continue;
          expect(protectionOf(target)).toBeUndefined();
          expect(target.deleting).toBe(false);
        }
        for (const a of deleted) expect(byName.get(a.node ?? '')?.gameServers).toBe(0);
        for (const a of cordoned) expect(byName.get(a.node ?? '')?.unschedulable).toBe(false);
        for (const a of uncordoned) expect(byName.get(a.node ?? '')?.unschedulable).toBe(true);
        expect(grow.length).toBeLessThanOrEqual(1);
        for (const a of grow) {
          expect(a.to).toBeLessThanOrEqual(maxNodes);
          expect(a.to).toBeGreaterThan(a.from ?? 0);
        }
        if (cordoned.length > 0) expect(grow.length + uncordoned.length).toBe(0);
        // Berth's own deletions (not resumed ones) never take the live node count below minNodes.
        const live = snapshot.nodes.filter(
          (n) => !n.deleting && n.annotations[REMOVAL_STARTED_AT] === undefined,
        );
        const fresh = deleted.filter((a) => a.type === 'delete' && !a.resume);
        if (fresh.length > 0) expect(live.length - fresh.length).toBeGreaterThanOrEqual(s.minNodes);
        // Cordons never take the schedulable count below minNodes.
        const schedulable = live.filter((n) => !n.unschedulable).length;
        if (cordoned.length > 0) {
          expect(schedulable - cordoned.length).toBeGreaterThanOrEqual(s.minNodes);
        }
        // No node gets two actions.
        const named = result.actions.flatMap((a) => (a.node ? [a.node] : []));
        expect(new Set(named).size).toBe(named.length);
      }),
      { numRuns: 300 },
    );
  });
});

describe('planScale: damping, budgets and demand', () => {
  const delay = { shutdownDelaySeconds: 60, minNodes: 1, bufferGameServers: 0 };
  const surplus = { nodes: [node('busy'), node('empty')], pods: gameServers('busy', 20) };

  it('cordons only a surplus that has lasted cordonAfterSeconds', () => {
    const scale = { bufferGameServers: 10, cordonAfterSeconds: 300 };
    const snapshot = buildSnapshot(surplus.nodes, surplus.pods, {});
    const seenBefore = { ...EMPTY_SCALE_MEMORY, previousPassAtMs: T0 - MINUTE };
    const fresh = planScale(snapshot, policyFor(scale), T0, seenBefore);
    expect(fresh.actions).toEqual([]);
    expect(fresh.tally.surplus).toBe(true);
    expect(fresh.notes).toContainEqual({
      reason:
        'a surplus of 1 node(s) since 2026-01-01T00:00:00.000Z: cordoned once it has lasted 300s',
    });
    const young = planScale(snapshot, policyFor(scale), T0, {
      ...seenBefore,
      surplusSinceMs: T0 - 299_000,
    });
    expect(young.actions).toEqual([]);
    const lasting = planScale(snapshot, policyFor(scale), T0, {
      ...seenBefore,
      surplusSinceMs: T0 - 300_000,
    });
    expect(summary(lasting)).toEqual(['cordon empty']);
    // The reason says how long the surplus was seen: exactly that, never "or more".
    expect(lasting.actions[0]?.reason).toMatch(
      /^50 slot\(s\) above the buffer of 10 for 300s \(since 2025-12-31T23:55:00\.000Z\); /,
    );
    // berth's first pass over a cluster has no earlier decision to flap with: it acts, and says
    // so, not that a surplus it never watched lasted cordonAfterSeconds.
    const first = plan(surplus.nodes, surplus.pods, { scale });
    expect(summary(first)).toEqual(['cordon empty']);
    expect(first.actions[0]?.reason).toMatch(
      /^first pass for this cluster \(no earlier pass to wait on\): 50 slot\(s\) above the buffer of 10; /,
    );
    expect(first.actions[0]?.reason).not.toContain('300s');
  });

  it('keeps exactly the buffer the user set: two 5-CPU nodes, 500m slots, buffer 5, one game server', () => {
    const five = (name: string) => node(name, { cpu: '5' });
    const result = plan([five('a'), five('b')], gameServers('a', 1, '500m'), {
      scale: { gameServerCpuMillis: 500, bufferGameServers: 5 },
    });
    // 9 + 10 free slots, buffer 5: node b (10 slots) goes, leaving 9 ≥ 5.
    expect(summary(result)).toEqual(['cordon b']);
  });

  it('starts no more removals than the disruption budget allows per pass and per hour', () => {
    const drained = ['d1', 'd2', 'd3', 'd4'].map((name) => berthCordoned(name, T0 - 10 * MINUTE));
    const nodes = [...Array.from({ length: 16 }, (_, i) => node(`n${i}`)), ...drained];
    const pods = Array.from({ length: 16 }, (_, i) => gameServers(`n${i}`, 40)).flat();
    const removals = (scale: Record<string, unknown>, removalsMs: number[] = []) =>
      summary(
        planScale(buildSnapshot(nodes, pods, {}), policyFor({ ...delay, ...scale }), T0, {
          ...EMPTY_SCALE_MEMORY,
          removalsMs,
        }),
      ).filter((line) => line.startsWith('delete'));
    // 10% of 20 managed nodes: 2 a pass.
    expect(removals({ disruptionBudget: { nodesPerPass: '10%', nodesPerHour: '100%' } })).toEqual([
      'delete d1',
      'delete d2',
    ]);
    // 3 an hour, 2 already started within it: 1 more.
    expect(
      removals({ disruptionBudget: { nodesPerPass: 10, nodesPerHour: 3 } }, [
        T0 - 30 * MINUTE,
        T0 - 50 * MINUTE,
        T0 - 70 * MINUTE,
      ]),
    ).toEqual(['delete d1']);
  });

  it('keeps the buffer demand asks for when it exceeds the configured one', () => {
    const nodes = [node('a'), node('b'), node('c')];
    const pods = gameServers('a', 10);
    const memory = {
      ...EMPTY_SCALE_MEMORY,
      // A mean of 21 a minute, a burst of 40 earlier today that raised the game servers by 124
      // within a horizon; provisioning observed at 3 and 4 min.
      arrivals: [
        { atMs: T0 - 2 * MINUTE, count: 12 },
        { atMs: T0 - MINUTE, count: 30 },
      ],
      burstPeaks: [{ atMs: T0 - 60 * MINUTE, count: 40 }],
      priorPeak: 40,
      risePeaks: [{ atMs: T0 - 60 * MINUTE, count: 124 }],
      provisionMs: [3 * MINUTE, 4 * MINUTE],
    };
    const scale = { bufferGameServers: 10, demand: { enabled: true } };
    const result = planScale(buildSnapshot(nodes, pods, {}), policyFor(scale), T0, memory);
    // The day's largest rise, 124 slots; 110 free, so a node more.
    expect(result.tally.buffer).toEqual({
      slots: 124,
      arrivalsPerSecond: 0.35,
      riseReserve: 124,
      forecast: 0,
      wave: false,
      provisionSeconds: 240,
      observed: true,
    });
    expect(summary(result)).toEqual(['grow 3->4']);
    // Off, the buffer is the configured one.
    const off = planScale(
      buildSnapshot(nodes, pods, {}),
      policyFor({ ...scale, demand: { enabled: false } }),
      T0,
      memory,
    );
    expect(off.tally.buffer.slots).toBe(10);
  });

  it('under Karpenter, holds the buffer in placeholder pods, whose CPU counts as free slots', () => {
    const karpenter = { nodePool: { type: 'karpenter', name: 'games' }, bufferGameServers: 30 };
    const placeholder = (name: string, nodeName?: string): V1Pod => {
      const base = pod(name, { ...(nodeName ? { node: nodeName } : {}), game: false });
      return { ...base, metadata: { ...base.metadata, labels: { [PLACEHOLDER_LABEL]: 'true' } } };
    };
    // 10 game servers and 20 placeholders on one 40-slot node: 30 slots free, the buffer held.
    const pods = [
      ...gameServers('a', 10),
      ...Array.from({ length: 20 }, (_, i) => placeholder(`p${i}`, 'a')),
      placeholder('pending'),
    ];
    const result = plan([node('a')], pods, { scale: karpenter });
    expect(result.tally.free).toBe(30);
    expect(result.tally.pending).toBe(0);
    expect(summary(result)).toEqual(['placeholders ']);
    expect(result.actions[0]).toMatchObject({ type: 'placeholders', to: 30 });
  });
});
