import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { vpcCniStatusLines } from '../../cli/status-text.js';
import { vpcCniNodesReport } from '../../shared/status/vpc-cni.js';
import { boundPod, vpcCniPod } from '../../sim/fakes/cluster-api.js';

function lister(pods: readonly V1Pod[]) {
  return {
    async *listPods() {
      yield* pods;
    },
  };
}

describe('vpcCniNodesReport', () => {
  it('names each node aws-node runs on, and why it has no ENI pool', async () => {
    const report = await vpcCniNodesReport(
      lister([
        vpcCniPod('node-b'),
        vpcCniPod('node-a'),
        vpcCniPod('node-gone', 'Failed'),
        boundPod('games', 'gs-1', 'node-c'),
      ]),
    );
    expect(report.nodes).toEqual(['node-a', 'node-b']);
    expect(vpcCniStatusLines(report)).toEqual([
      'no ENI pool on 2 nodes:',
      '  node-a: aws-node runs on this node; berth serves no pool where the VPC CNI does',
      '  node-b: aws-node runs on this node; berth serves no pool where the VPC CNI does',
    ]);
    expect(vpcCniStatusLines(await vpcCniNodesReport(lister([])))).toEqual([]);
  });

  it('says the nodes were not read when the listing fails, instead of failing status', async () => {
    const failing = {
      // biome-ignore lint/correctness/useYield: a listing that fails before its first pod
      async *listPods(): AsyncGenerator<V1Pod> {
        throw new Error('pods is forbidden');
      },
    };
    const report = await vpcCniNodesReport(failing);
    expect(report.nodes).toBeUndefined();
    expect(vpcCniStatusLines(report)).toEqual([
      "nodes aws-node runs on: not read (the cluster's pods could not be read: pods is forbidden)",
    ]);
  });
});
