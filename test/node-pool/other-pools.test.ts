import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { EKSClient } from '@aws-sdk/client-eks';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { AsgNodePool } from '../../shared/node-pool/asg.js';
import { createNodePool } from '../../shared/node-pool/create.js';
import { EksNodegroupPool } from '../../shared/node-pool/eks-nodegroup.js';
import { KarpenterNodePool } from '../../shared/node-pool/karpenter.js';
import { NoNodePool } from '../../shared/node-pool/none.js';
import { instanceIdOf } from '../../shared/node-pool/provider-id.js';

describe('instanceIdOf', () => {
  it('reads the instance id from an AWS providerID', () => {
    expect(instanceIdOf('aws:///us-east-1a/i-0123456789abcdef0')).toBe('i-0123456789abcdef0');
    expect(instanceIdOf('aws:///i-0abc1234')).toBe('i-0abc1234');
  });

  it('rejects other providers and malformed ids', () => {
    for (const bad of [
      undefined,
      '',
      'gce://p/z/n',
      'aws:///us-east-1a/',
      'aws:///us-east-1a/i-xyz',
    ]) {
      expect(instanceIdOf(bad)).toBeUndefined();
    }
  });
});

describe('NoNodePool', () => {
  it('reports what it would ask for and changes nothing', async () => {
    const pool = new NoNodePool();
    expect(await pool.describe()).toEqual({});
    expect(await pool.growTo(4)).toEqual({
      applied: false,
      description: 'node pool none: would ask for 4 node(s)',
    });
    expect(await pool.releaseInstance({ name: 'n', providerId: 'aws:///z/i-0abc1234' })).toEqual({
      applied: false,
      description:
        'node pool none: would terminate instance i-0abc1234 and decrement the desired size',
    });
  });
});

describe('KarpenterNodePool', () => {
  it('leaves launching and terminating to Karpenter', async () => {
    const pool = new KarpenterNodePool('games');
    expect(await pool.describe()).toEqual({});
    expect((await pool.growTo(4)).applied).toBe(false);
    expect((await pool.releaseInstance({ name: 'n' })).description).toContain(
      'once its Node object is deleted',
    );
  });
});

describe('createNodePool', () => {
  it('builds the adapter the config names, calling no AWS API', () => {
    const autoScaling = mockClient(AutoScalingClient);
    const eks = mockClient(EKSClient);
    const deps = { eksClusterName: 'prod' };
    expect(createNodePool({ type: 'none' }, deps)).toBeInstanceOf(NoNodePool);
    expect(createNodePool({ type: 'asg', name: 'g' }, deps)).toBeInstanceOf(AsgNodePool);
    expect(createNodePool({ type: 'eks-nodegroup', name: 'g' }, deps)).toBeInstanceOf(
      EksNodegroupPool,
    );
    expect(createNodePool({ type: 'karpenter', name: 'g' }, deps)).toBeInstanceOf(
      KarpenterNodePool,
    );
    expect([...autoScaling.calls(), ...eks.calls()]).toEqual([]);
    autoScaling.restore();
    eks.restore();
  });
});
