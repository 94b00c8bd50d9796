import { describe, expect, it } from 'vitest';
import {
  byFleet,
  type CapacityRecord,
  MAX_FLEETS,
  OTHER_FLEETS,
  type ScaleFigures,
} from '../../shared/capacity/figures.js';
import { capacityView, clusterCapacity } from '../../shared/capacity/view.js';

const NOW = Date.parse('2026-12-04T12:00:00Z');

const scale = (atMs: number): ScaleFigures => ({
  source: 'scale',
  atMs,
  freeSlots: 6,
  readyByFleet: { red: 3, '': 1 },
  pendingGameServers: 2,
  slotsComing: 0,
  buffer: 10,
  nodes: 3,
});

const record: CapacityRecord = {
  scale: scale(NOW - 30_000),
  hostPorts: {
    source: 'hostPorts',
    atMs: NOW - 100_000,
    ranges: [{ range: 'game', size: 100, used: 40, largestFreeBlock: 12 }],
  },
  eni: { source: 'eni', atMs: NOW - 61_500, freeAddresses: 17, pools: 3 },
};

describe('a cluster’s capacity view', () => {
  it('gives each figure its age and counts host ports free on the nodes the scale pass saw', () => {
    const view = clusterCapacity(
      { cluster: 'a', record, intervals: { scale: 60, hostPorts: 180, eni: 60 } },
      NOW,
    );
    expect(view).toEqual({
      cluster: 'a',
      stale: false,
      staleBecause: [],
      gameServers: {
        ready: 4,
        readyByFleet: { red: 3, '': 1 },
        freeSlots: 6,
        pending: 2,
        ageSeconds: 30,
      },
      buffer: { buffer: 10, nodesComing: false, slotsComing: 0, nodes: 3, ageSeconds: 30 },
      hostPorts: {
        ranges: [{ range: 'game', size: 100, used: 40, largestFreeBlock: 12, free: 260 }],
        ageSeconds: 100,
      },
      eni: { freeAddresses: 17, pools: 3, ageSeconds: 62 },
    });
  });

  it('is stale when a pass it runs is two intervals late or never recorded', () => {
    const view = clusterCapacity(
      { cluster: 'a', record, intervals: { scale: 10, hostPorts: 180, eni: 60, fronts: 60 } },
      NOW,
    );
    expect(view.stale).toBe(true);
    expect(view.staleBecause).toEqual([
      'scale: 30 s old, expected every 10 s',
      'fronts: never recorded',
    ]);
    // A figure exactly two intervals old is still in time.
    expect(clusterCapacity({ cluster: 'a', record, intervals: { scale: 15 } }, NOW).stale).toBe(
      false,
    );
  });

  it('leaves the host ports’ free count out until the scale pass has counted the nodes', () => {
    const { scale: _scale, ...withoutScale } = record;
    const view = clusterCapacity({ cluster: 'a', record: withoutScale, intervals: {} }, NOW);
    expect(view.hostPorts?.ranges).toEqual([
      { range: 'game', size: 100, used: 40, largestFreeBlock: 12 },
    ]);
    expect(view.gameServers).toBeUndefined();
    expect(view.buffer).toBeUndefined();
  });

  it('says nodes are coming when slots are on their way, and keeps clusters in order', () => {
    const coming: CapacityRecord = { scale: { ...scale(NOW), slotsComing: 8 } };
    const view = capacityView(
      [
        { cluster: 'b', record: coming, intervals: {} },
        { cluster: 'a', record: {}, intervals: { scale: 60 } },
      ],
      NOW,
    );
    expect(view.at).toBe('2026-12-04T12:00:00.000Z');
    expect(view.clusters.map((c) => [c.cluster, c.stale, c.buffer?.nodesComing])).toEqual([
      ['b', false, true],
      ['a', true, undefined],
    ]);
  });
});

describe('ready game servers by fleet', () => {
  it('names the largest fleets and sums the rest, so a record stays small', () => {
    const fleets = Array.from({ length: MAX_FLEETS + 5 }, (_, i) =>
      Array.from({ length: i + 1 }, () => `f${i}`),
    ).flat();
    const counted = byFleet(fleets);
    expect(Object.keys(counted)).toHaveLength(MAX_FLEETS + 1);
    // The five smallest fleets (1 to 5 servers) are summed.
    expect(counted[OTHER_FLEETS]).toBe(1 + 2 + 3 + 4 + 5);
    expect(counted[`f${MAX_FLEETS + 4}`]).toBe(MAX_FLEETS + 5);
    expect(byFleet(['a', 'b', 'a'])).toEqual({ a: 2, b: 1 });
  });
});
