import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { autoModeStatusLine } from '../../cli/status-text.js';
import { autoModeNodesReport } from '../../shared/status/auto-mode.js';

const node = (name: string, labels: Record<string, string> = {}): V1Node => ({
  metadata: { name, labels },
});

function lister(nodes: readonly V1Node[]) {
  return {
    async *listNodes() {
      yield* nodes;
    },
  };
}

describe('autoModeNodesReport', () => {
  it('counts the Auto Mode nodes and says why they are left out', async () => {
    const nodes = [
      node('mng-1', { 'eks.amazonaws.com/nodegroup': 'games' }),
      node('auto-1', { 'eks.amazonaws.com/compute-type': 'auto' }),
      node('auto-2', { 'eks.amazonaws.com/compute-type': 'auto' }),
      node('gp-1', { 'karpenter.sh/nodepool': 'general-purpose' }),
    ];
    const report = await autoModeNodesReport(lister(nodes));
    expect(report.count).toBe(2);
    expect(autoModeStatusLine(report)).toBe(
      "EKS Auto Mode nodes left out of ENI pools: 2 (EKS Auto Mode's own VPC CNI gives their pods IPs: no ENI pool, no berth-cni; host ports, Services and binding addresses as on any node)",
    );
    const withCompute = await autoModeNodesReport(lister(nodes), {
      enabled: true,
      nodePools: ['general-purpose', 'system'],
    });
    expect(withCompute.count).toBe(3);
  });

  it('says the nodes were not counted when the listing fails, instead of failing status', async () => {
    const failing = {
      // biome-ignore lint/correctness/useYield: a listing that fails before its first node
      async *listNodes(): AsyncGenerator<V1Node> {
        throw new Error('connect ECONNREFUSED 127.0.0.1:6443');
      },
    };
    const report = await autoModeNodesReport(failing);
    expect(report.count).toBeUndefined();
    expect(autoModeStatusLine(report)).toBe(
      "EKS Auto Mode nodes: not counted (the cluster's nodes could not be read: connect ECONNREFUSED 127.0.0.1:6443)",
    );
  });
});
