/**
 * Karpenter #3185, tried at every step: a game server is bound to an idle node while berth's
 * scale pass cordons it and, a minute later, removes it, once after each call the passes make
 * (every cluster and node pool call of three passes a minute apart), through berth's binding
 * webhook as the scheduler's binding goes, or created with `spec.nodeName`, through the pod
 * webhook's guard. In every case either the game server was refused the node, or the node and its
 * instance are still there with the game on it: never both a game on the node and the node gone.
 */

import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { podBindingAdmission } from '../../shared/admission/binding.js';
import { guardPodCreates } from '../../shared/admission/removal-guard.js';
import { allow } from '../../shared/admission/response.js';
import type { AdmissionRequest } from '../../shared/admission/review.js';
import { parseConfig } from '../../shared/config/schema.js';
import { runScalePass } from '../../shared/scale/pass.js';
import { allocationIdForUid } from '../../shared/vocabulary/allocation-id.js';
import { ALLOCATION_ID_ANNOTATION, PORTS_ANNOTATION } from '../../shared/vocabulary/labels.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { FakeNodePool } from '../../sim/fakes/node-pool.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { gameServers, node, pod, T0 } from './builders.js';

const MINUTE = 60_000;
const config = parseConfig({
  scale: { bufferGameServers: 0, shutdownDelaySeconds: 60, minNodes: 1 },
}).scale;

type Placement = 'binding' | 'nodeName';

const REQUEST: AdmissionRequest = {
  uid: 'u',
  resource: { group: '', version: 'v1', resource: 'pods' },
  operation: 'CREATE',
  name: 'late',
  namespace: 'games',
};

/** The late game server: a berth pod, Pending until placed. */
function lateGameServer(): V1Pod {
  const base = pod('late');
  return {
    ...base,
    metadata: {
      ...base.metadata,
      annotations: {
        [ALLOCATION_ID_ANNOTATION]: allocationIdForUid('late'),
        [PORTS_ANNOTATION]: '[]',
      },
    },
  };
}

/**
 * Three passes a minute apart over a busy node and an idle one (the first cordons the idle node,
 * the second removes it); after the `step`-th call the late game server is placed on the idle
 * node. Answers what happened.
 */
async function removalWithLateGame(step: number, how: Placement) {
  let now = T0;
  const cluster = new FakeClusterApi()
    .withNodes(node('busy'), node('drained'))
    .withPods(...gameServers('busy', 40));
  const pool = new FakeNodePool(2);
  let calls = 0;
  let placement: { allowed: boolean; message?: string } | undefined;
  /** Whether the node was still there when the game was placed (else no removal could end it). */
  let nodeThere = false;
  const place = async () => {
    nodeThere = cluster.nodes.has('drained');
    const late = lateGameServer();
    if (how === 'binding') {
      cluster.withPods(late);
      const binding = podBindingAdmission({
        cluster,
        nodes: cluster,
        nodeAddressTypes: ['InternalIP'],
        now: () => now,
      });
      const verdict = await binding({
        ...REQUEST,
        subResource: 'binding',
        object: { metadata: { name: 'late' }, target: { kind: 'Node', name: 'drained' } },
      });
      placement = verdict;
      if (verdict.allowed) {
        const stored = [...cluster.pods.values()].find((p) => p.metadata?.name === 'late');
        if (stored?.spec) stored.spec.nodeName = 'drained';
      }
    } else {
      const created: V1Pod = {
        ...late,
        spec: { containers: [], ...late.spec, nodeName: 'drained' },
      };
      const guard = guardPodCreates({ cached: cluster, current: cluster }, async () => allow());
      const verdict = await guard({ ...REQUEST, object: { ...created } });
      placement = verdict;
      if (verdict.allowed) cluster.withPods(created);
    }
  };
  const counted = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(object, key, receiver) {
        const value = Reflect.get(object, key, receiver);
        if (typeof value !== 'function' || key === 'constructor') return value;
        return (...args: unknown[]) => {
          const result = value.apply(object, args);
          const after = async () => {
            if (++calls === step) await place();
          };
          if (result && typeof result === 'object' && Symbol.asyncIterator in result) {
            // A list: the step is taken once the listing is done.
            return (async function* () {
              yield* result as AsyncIterable<unknown>;
              await after();
            })();
          }
          return Promise.resolve(result).then(async (answer) => {
            await after();
            return answer;
          });
        };
      },
    });
  const deps = {
    cluster: counted(cluster),
    pool: counted(pool),
    lease: new FakeLease(() => now),
    now: () => now,
    holder: 'pass',
    memory: new InProcessScaleMemory(),
  };
  for (let pass = 0; pass < 3; pass++) {
    await runScalePass(deps, config, { dryRun: false });
    now += MINUTE;
  }
  const late = [...cluster.pods.values()].find((p) => p.metadata?.name === 'late');
  return {
    calls,
    placement,
    nodeThere,
    gameOnNode: nodeThere && late?.spec?.nodeName === 'drained',
    nodeGone: !cluster.nodes.has('drained') || pool.released.has('drained'),
  };
}

describe('a game server placed on a node at every step of its removal', () => {
  for (const how of ['binding', 'nodeName'] as const) {
    it(`never ends with the game on a removed node (${how === 'binding' ? 'scheduler binding' : 'created with spec.nodeName'})`, async () => {
      const { calls } = await removalWithLateGame(0, how);
      expect(calls).toBeGreaterThan(8);
      const outcomes = new Set<string>();
      for (let step = 1; step <= calls; step++) {
        const result = await removalWithLateGame(step, how);
        expect(result.placement, `step ${step}`).toBeDefined();
        expect(result.gameOnNode && result.nodeGone, `step ${step}`).toBe(false);
        if (!result.placement?.allowed) {
          expect(result.placement?.message).toMatch(
            /^(target\.name|spec\.nodeName): node drained is (cordoned by berth to drain \(berth\.dev\/cordoned-at|being removed by berth \(berth\.dev\/removal-started-at): .*; game server games\/late may not be placed on it/,
          );
          outcomes.add('refused');
        } else if (!result.nodeThere) {
          outcomes.add('node already gone');
        } else {
          // Placed before the cordon: the node is kept, with its game.
          expect(result.gameOnNode, `step ${step}`).toBe(true);
          outcomes.add('kept with its game');
        }
      }
      // Every path was taken: a game that got there before the cordon keeps the node, one headed
      // there once it is cordoned is refused, and after the removal there is no node to place on.
      expect([...outcomes].sort()).toEqual(['kept with its game', 'node already gone', 'refused']);
    });
  }
});
