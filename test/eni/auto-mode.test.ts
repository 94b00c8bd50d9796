import { describe, expect, it } from 'vitest';
import { AutoModeNodeError } from '../../shared/eni/errors.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { assignIp, handleLookUpIp, releaseIp } from '../../shared/eni/service.js';
import { type EniWorld, eniWorld } from '../../sim/eni-world.js';
import { boundPod } from '../../sim/fakes/cluster-api.js';

const MINUTE = 60_000;

function label(world: EniWorld, node: string, labels: Record<string, string>): void {
  const object = world.cluster.nodes.get(node);
  if (!object?.metadata) throw new Error(`no node ${node}`);
  object.metadata.labels = { ...object.metadata.labels, ...labels };
}

const AUTO = { 'eks.amazonaws.com/compute-type': 'auto' };

describe('ENI pools on a cluster with EKS Auto Mode nodes', () => {
  it('builds no pool for an Auto Mode node and counts it, while other nodes get theirs', async () => {
    const world = eniWorld({ eni: { minIdle: 2, maxIdle: 4 } });
    world.addNode('node-a', 'c5.large');
    world.addNode('auto-1', 'c5.large');
    label(world, 'auto-1', AUTO);
    const summary = await runEniPass(world.deps);
    expect(summary).toMatchObject({ pools: 1, poolsCreated: 1, autoModeNodes: 1 });
    expect(await world.store.getPool('node-a')).toBeDefined();
    expect(await world.store.getPool('auto-1')).toBeUndefined();
    // One assign, on node-a's primary ENI: nothing was assigned or created for the Auto Mode
    // node's instance.
    expect(world.ec2.counts.get('AssignPrivateIpAddresses')).toBe(1);
    expect(world.ec2.counts.get('CreateNetworkInterface') ?? 0).toBe(0);
  });

  it('refuses an assign for an Auto Mode node with a 409 naming the node and why, touching no EC2', async () => {
    const world = eniWorld();
    world.addNode('auto-1');
    label(world, 'auto-1', AUTO);
    world.cluster.withPods(boundPod('games', 'gs-1', 'auto-1'));
    const error = await assignIp(world.deps, 'auto-1', { namespace: 'games', pod: 'gs-1' }).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(AutoModeNodeError);
    expect((error as AutoModeNodeError).statusCode).toBe(409);
    expect((error as Error).message).toMatch(
      /^node auto-1: an EKS Auto Mode node \(label eks\.amazonaws\.com\/compute-type=auto\): EKS Auto Mode runs this node's networking/,
    );
    expect(await world.store.getPool('auto-1')).toBeUndefined();
    expect(world.ec2.counts.get('DescribeInstances') ?? 0).toBe(0);
  });

  it('refuses a look-up and a release for an Auto Mode node berth holds nothing on, with the same 409', async () => {
    const world = eniWorld();
    world.addNode('auto-1');
    label(world, 'auto-1', AUTO);
    const holder = { namespace: 'games', pod: 'gs-1' };
    await expect(handleLookUpIp(world.deps, 'auto-1', holder)).rejects.toBeInstanceOf(
      AutoModeNodeError,
    );
    await expect(releaseIp(world.deps, 'auto-1', '10.0.0.9', holder)).rejects.toMatchObject({
      statusCode: 409,
      message: expect.stringMatching(/^node auto-1: an EKS Auto Mode node/),
    });
    // A node that is not Auto Mode's keeps its answers: 404 and released: false.
    world.addNode('mng-1');
    await expect(handleLookUpIp(world.deps, 'mng-1', holder)).rejects.toMatchObject({
      statusCode: 404,
    });
    expect(await releaseIp(world.deps, 'mng-1', '10.0.0.9', holder)).toEqual({ released: false });
  });

  it('answers as before, 404 and released: false, when the Node cannot be read', async () => {
    const world = eniWorld();
    world.addNode('auto-1');
    label(world, 'auto-1', AUTO);
    world.cluster.getNode = async () => {
      throw new Error('kubernetes get nodes/auto-1 failed: no response');
    };
    const holder = { namespace: 'games', pod: 'gs-1' };
    await expect(handleLookUpIp(world.deps, 'auto-1', holder)).rejects.toMatchObject({
      statusCode: 404,
    });
    expect(await releaseIp(world.deps, 'auto-1', '10.0.0.9', holder)).toEqual({ released: false });
  });

  it('still releases an address berth holds on a node that reads as Auto Mode later', async () => {
    const world = eniWorld({ eni: { minIdle: 1, maxIdle: 2 } });
    world.addNode('node-a');
    world.cluster.withPods(boundPod('games', 'gs-1', 'node-a'));
    const holder = { namespace: 'games', pod: 'gs-1' };
    const { ip } = await assignIp(world.deps, 'node-a', holder);
    label(world, 'node-a', AUTO);
    expect((await handleLookUpIp(world.deps, 'node-a', holder)).ip).toBe(ip);
    expect(await releaseIp(world.deps, 'node-a', ip, holder)).toEqual({ released: true });
  });

  it('treats a built-in NodePool node as Auto Mode only with the compute config', async () => {
    const world = eniWorld({ eni: { minIdle: 1, maxIdle: 2 } });
    world.addNode('gp-1');
    label(world, 'gp-1', { 'karpenter.sh/nodepool': 'general-purpose' });
    expect((await runEniPass(world.deps)).autoModeNodes).toBe(0);
    expect(await world.store.getPool('gp-1')).toBeDefined();

    const other = eniWorld({ eni: { minIdle: 1, maxIdle: 2 } });
    other.addNode('gp-1');
    label(other, 'gp-1', { 'karpenter.sh/nodepool': 'general-purpose' });
    const deps = {
      ...other.deps,
      autoMode: { enabled: true, nodePools: ['general-purpose', 'system'] },
    };
    expect((await runEniPass(deps)).autoModeNodes).toBe(1);
    expect(await other.store.getPool('gp-1')).toBeUndefined();
    await expect(assignIp(deps, 'gp-1', { namespace: 'g', pod: 'p' })).rejects.toBeInstanceOf(
      AutoModeNodeError,
    );
  });

  it('drains a pool made before its node read as Auto Mode, and refuses assigns there meanwhile', async () => {
    const world = eniWorld({ eni: { minIdle: 1, maxIdle: 2 } });
    world.addNode('node-a');
    await runEniPass(world.deps);
    expect(await world.store.getPool('node-a')).toBeDefined();
    label(world, 'node-a', AUTO);
    world.clock.now += MINUTE;
    const summary = await runEniPass(world.deps);
    expect(summary.autoModeNodes).toBe(1);
    expect(summary.poolsDraining + summary.poolsRemoved).toBeGreaterThan(0);
    await expect(
      assignIp(world.deps, 'node-a', { namespace: 'g', pod: 'p' }),
    ).rejects.toBeInstanceOf(AutoModeNodeError);
  });
});
