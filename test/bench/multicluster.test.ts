import { describe, expect, it } from 'vitest';
import type { NodeSpec, PodEvent } from '../../bench/eni/workload.js';
import { CLUSTERS, splitDay } from '../../bench/multicluster.js';

describe('the multi-cluster day', () => {
  it('deals the nodes round-robin to three clusters, each pod event following its node', () => {
    const nodes = Array.from({ length: 7 }, (_, i) => ({ name: `n${i}` }) as NodeSpec);
    const events: PodEvent[] = [
      { at: 1, kind: 'arrive', node: 4, pod: 'p1' },
      { at: 2, kind: 'arrive', node: 0, pod: 'p2' },
      { at: 3, kind: 'depart', node: 4, pod: 'p1' },
    ];
    const split = splitDay(nodes, events);
    expect(split.map((d) => d.cluster)).toEqual([...CLUSTERS]);
    expect(split.map((d) => d.nodes.map((n) => n.name))).toEqual([
      ['n0', 'n3', 'n6'],
      ['n1', 'n4'],
      ['n2', 'n5'],
    ]);
    // n4 is games-b's second node.
    expect(split[1]?.events).toEqual([
      { at: 1, kind: 'arrive', node: 1, pod: 'p1' },
      { at: 3, kind: 'depart', node: 1, pod: 'p1' },
    ]);
    expect(split[0]?.events).toEqual([{ at: 2, kind: 'arrive', node: 0, pod: 'p2' }]);
  });
});
