import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../shared/config/errors.js';
import { parseConfig } from '../../shared/config/schema.js';
import {
  autoModeComputeOf,
  autoModeReason,
  avoidAutoModeNodes,
  isAutoModeNode,
} from '../../shared/node-pool/auto-mode.js';
import { createNodePool } from '../../shared/node-pool/create.js';
import { deletesNodes, karpenterNodePoolOf } from '../../shared/node-pool/node-pool.js';
import { scalePolicy } from '../../shared/scale/policy.js';

const AUTO_MODE = { enabled: true, nodePools: ['general-purpose', 'system'] };

/** Whether a node with `labels` matches every requirement of one node selector term. */
function termMatches(
  requirements: ReturnType<typeof avoidAutoModeNodes>,
  labels: Record<string, string>,
): boolean {
  return requirements.every(({ key, operator, values = [] }) => {
    const value = labels[key];
    switch (operator) {
      case 'In':
        return value !== undefined && values.includes(value);
      case 'NotIn':
        return value === undefined || !values.includes(value);
      case 'Exists':
        return value !== undefined;
      case 'DoesNotExist':
        return value === undefined;
    }
    return false;
  });
}

describe('autoModeReason', () => {
  it('names the compute-type label Auto Mode sets on its nodes', () => {
    expect(autoModeReason({ 'eks.amazonaws.com/compute-type': 'auto' })).toBe(
      'label eks.amazonaws.com/compute-type=auto',
    );
  });

  it('names an Auto Mode NodeClass label', () => {
    expect(autoModeReason({ 'eks.amazonaws.com/nodeclass': 'default' })).toBe(
      'label eks.amazonaws.com/nodeclass=default',
    );
  });

  it('reads a built-in NodePool as Auto Mode only where the compute config says Auto Mode is on', () => {
    const labels = { 'karpenter.sh/nodepool': 'general-purpose' };
    expect(autoModeReason(labels)).toBeUndefined();
    expect(autoModeReason(labels, { enabled: false, nodePools: ['general-purpose'] })).toBe(
      undefined,
    );
    expect(autoModeReason(labels, AUTO_MODE)).toBe(
      "built-in NodePool general-purpose of the cluster's Auto Mode compute",
    );
    expect(autoModeReason({ 'karpenter.sh/nodepool': 'games' }, AUTO_MODE)).toBeUndefined();
  });

  it('leaves managed node groups, self-managed Karpenter and Fargate nodes to berth', () => {
    const cases: (Record<string, string> | undefined)[] = [
      undefined,
      {},
      { 'eks.amazonaws.com/nodegroup': 'games', 'eks.amazonaws.com/capacityType': 'ON_DEMAND' },
      { 'karpenter.sh/nodepool': 'games', 'karpenter.k8s.aws/ec2nodeclass': 'default' },
      { 'eks.amazonaws.com/compute-type': 'fargate' },
    ];
    for (const labels of cases) {
      expect(autoModeReason(labels, AUTO_MODE)).toBeUndefined();
    }
  });

  it('reads a node object', () => {
    expect(
      isAutoModeNode({ metadata: { labels: { 'eks.amazonaws.com/compute-type': 'auto' } } }),
    ).toBe(true);
    expect(isAutoModeNode({ metadata: {} })).toBe(false);
    expect(isAutoModeNode(undefined)).toBe(false);
  });
});

describe('avoidAutoModeNodes', () => {
  it('keeps a pod off exactly the nodes autoModeReason names', () => {
    const cases: Record<string, string>[] = [
      {},
      { 'eks.amazonaws.com/compute-type': 'auto' },
      { 'eks.amazonaws.com/compute-type': 'ec2' },
      { 'eks.amazonaws.com/nodeclass': 'default' },
      { 'karpenter.sh/nodepool': 'general-purpose' },
      { 'karpenter.sh/nodepool': 'system' },
      { 'karpenter.sh/nodepool': 'games' },
      { 'eks.amazonaws.com/nodegroup': 'games' },
    ];
    for (const compute of [undefined, AUTO_MODE]) {
      const term = avoidAutoModeNodes(compute);
      for (const labels of cases) {
        expect(termMatches(term, labels), JSON.stringify({ labels, compute })).toBe(
          autoModeReason(labels, compute) === undefined,
        );
      }
    }
  });
});

describe('node pool auto-mode', () => {
  const autoMode = (nodePool: Record<string, unknown>, scale: Record<string, unknown> = {}) =>
    parseConfig({
      scale: { nodeSelector: 'karpenter.sh/nodepool=general-purpose', nodePool, ...scale },
    });

  it('defaults to the built-in general-purpose NodePool and implies the compute config', () => {
    const config = autoMode({ type: 'auto-mode' });
    expect(config.scale.nodePool).toEqual({ type: 'auto-mode', name: 'general-purpose' });
    expect(autoModeComputeOf(config.scale.nodePool)).toEqual(AUTO_MODE);
    expect(autoModeComputeOf(parseConfig({}).scale.nodePool)).toBeUndefined();
  });

  it('scales as node pool karpenter: placeholders keep the buffer, drained Node objects are deleted', async () => {
    const config = autoMode({ type: 'auto-mode' });
    expect(karpenterNodePoolOf(config.scale.nodePool)).toBe('general-purpose');
    expect(scalePolicy(config.scale).placeholders).toBe(true);
    expect(scalePolicy(parseConfig({}).scale).placeholders).toBe(false);
    const pool = createNodePool(config.scale.nodePool, { eksClusterName: 'games' });
    expect(pool.type).toBe('auto-mode');
    expect(deletesNodes(pool)).toBe(true);
    expect(await pool.describe()).toEqual({});
    const grow = await pool.growTo(3);
    expect(grow.applied).toBe(false);
    expect(grow.description).toContain('EKS Auto Mode NodePool general-purpose launches nodes');
    expect((await pool.releaseInstance({ name: 'n1' })).applied).toBe(false);
  });

  it('takes a NodePool of the user own, selected by its own labels', () => {
    const config = parseConfig({
      scale: { nodeSelector: 'role=game-server', nodePool: { type: 'auto-mode', name: 'games' } },
    });
    expect(karpenterNodePoolOf(config.scale.nodePool)).toBe('games');
  });

  it('refuses the system NodePool, a bad name and a selector that misses a built-in pool, in one error', () => {
    const problems = (document: unknown) => {
      try {
        parseConfig(document);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).message;
      }
      throw new Error('expected a ConfigError');
    };
    expect(problems({ scale: { nodePool: { type: 'auto-mode', name: 'system' } } })).toContain(
      'scale.nodePool.name: the built-in NodePool system is tainted CriticalAddonsOnly',
    );
    expect(problems({ scale: { nodePool: { type: 'auto-mode', name: 'Games_1' } } })).toContain(
      'scale.nodePool.name: must be a NodePool name',
    );
    expect(problems({ scale: { nodePool: { type: 'auto-mode' } } })).toContain(
      'scale.nodeSelector: "role=game-server" selects no node of the EKS Auto Mode built-in NodePool general-purpose',
    );
    expect(problems({ scale: { nodePool: { type: 'auto-mode', extra: 1 }, maxNodes: 0 } })).toMatch(
      /scale\.maxNodes[\s\S]*extra/,
    );
  });
});
