import { describe, expect, it } from 'vitest';
import { buildSnapshot } from '../../shared/scale/snapshot.js';
import { clusterViewOf } from '../../shared/ui/cluster-view.js';
import { nodeBadges } from '../../shared/ui/node-view.js';
import { gameServers, node } from '../scale/builders.js';

describe('the web view on a cluster with EKS Auto Mode nodes', () => {
  it('marks each Auto Mode node it draws, and only those', () => {
    const view = clusterViewOf(
      buildSnapshot(
        [
          node('auto-1', {
            labels: { role: 'game-server', 'eks.amazonaws.com/compute-type': 'auto' },
          }),
          node('mng-1'),
        ],
        [...gameServers('auto-1', 2)],
        {},
      ),
    );
    const [auto, managed] = view.nodes;
    expect(auto?.badges).toEqual([{ kind: 'auto-mode', text: 'EKS Auto Mode: no ENI pool' }]);
    expect(auto?.gameStates.allocated).toBe(2);
    expect(managed?.badges).toEqual([]);
  });

  it('draws the mark beside the others a node carries', () => {
    const facts = {
      name: 'auto-2',
      cpuMillis: 4000,
      usedCpuMillis: 0,
      gameServers: 0,
      cordoned: true,
      draining: false,
      joining: false,
      autoMode: true,
    };
    expect(nodeBadges(facts).map((badge) => badge.kind)).toEqual(['cordoned', 'auto-mode']);
  });
});
