import { describe, expect, it } from 'vitest';
import { autoModePoolProblem } from '../../shared/node-pool/auto-mode.js';
import { KarpenterNodePool } from '../../shared/node-pool/karpenter.js';
import { runScalePass } from '../../shared/scale/pass.js';
import { FakeClusterApi } from '../../sim/fakes/cluster-api.js';
import { FakeLease } from '../../sim/fakes/lease.js';
import { InProcessScaleMemory } from '../../sim/fakes/scale-memory.js';
import { node, passConfig, T0 } from './builders.js';

const GP = { 'karpenter.sh/nodepool': 'general-purpose', 'eks.amazonaws.com/compute-type': 'auto' };
const AUTO_MODE_POOL = {
  spec: {
    template: {
      spec: {
        expireAfter: '336h',
        nodeClassRef: { group: 'eks.amazonaws.com', kind: 'NodeClass', name: 'default' },
      },
    },
  },
};

function pass(nodePool: Record<string, unknown>) {
  const cluster = new FakeClusterApi().withNodes(
    node('a', { labels: GP }),
    node('b', { labels: GP }),
  );
  const deps = {
    cluster,
    pool: new KarpenterNodePool('general-purpose', 'auto-mode'),
    lease: new FakeLease(() => T0),
    now: () => T0,
    holder: 'pass-1',
    memory: new InProcessScaleMemory(),
  };
  const config = passConfig({
    nodeSelector: 'karpenter.sh/nodepool=general-purpose',
    bufferGameServers: 10,
    minNodes: 1,
    nodePool,
  });
  return { cluster, run: () => runScalePass(deps, config, { dryRun: true }) };
}

describe('the scale pass with node pool auto-mode', () => {
  it('keeps the buffer with placeholders, as with node pool karpenter, and notes nothing of a pool of Auto Mode', async () => {
    const { cluster, run } = pass({ type: 'auto-mode' });
    cluster.nodePools.set('general-purpose', AUTO_MODE_POOL);
    const report = await run();
    expect(report.actions.map((a) => a.type)).toContain('placeholders');
    expect(report.actions.map((a) => a.type)).not.toContain('grow');
    expect(report.notes.map((n) => n.reason).join('\n')).not.toMatch(/NodePool general-purpose/);
  });

  it('notes a NodePool missing, or made from a self-managed Karpenter NodeClass', async () => {
    const missing = pass({ type: 'auto-mode' });
    expect((await missing.run()).notes[0]?.reason).toBe(
      'EKS Auto Mode NodePool general-purpose not found (karpenter.sh/v1 nodepools/general-purpose); check scale.nodePool.name',
    );
    const selfManaged = pass({ type: 'auto-mode' });
    selfManaged.cluster.nodePools.set('general-purpose', {
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'default' },
          },
        },
      },
    });
    expect((await selfManaged.run()).notes[0]?.reason).toMatch(
      /^NodePool general-purpose makes its nodes from EC2NodeClass default of karpenter\.k8s\.aws, not from an EKS Auto Mode NodeClass \(eks\.amazonaws\.com\)/,
    );
  });

  it('leaves node pool karpenter without the Auto Mode check', async () => {
    const { run } = pass({ type: 'karpenter', name: 'general-purpose' });
    expect((await run()).notes.map((n) => n.reason).join('\n')).not.toMatch(/Auto Mode/);
  });
});

describe('autoModePoolProblem', () => {
  it('accepts a pool whose NodeClass group it does not know yet, or Auto Mode', () => {
    expect(autoModePoolProblem('gp', {})).toBeUndefined();
    expect(autoModePoolProblem('gp', AUTO_MODE_POOL)).toBeUndefined();
  });
});
