/**
 * Host ports berth did not hand out (contract section 4): DaemonSets and hostNetwork pods berth
 * never admitted hold host ports; the repair pass records them, the allocator never hands them
 * out, and the overlap is reported.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { hostPortRangeUsage } from '../../shared/hostports/allocator.js';
import { HOST_PORTS, held, repairEnv, gamePod as repairPod } from '../repair/support.js';
import { sid } from '../support/shaped-id.js';
import { gamePod, hostPortsOf, podHarness } from './support.js';

/** A DaemonSet's pod: no allocation id, a hostPort inside the range. */
const daemonPod = (name: string, hostPort: number): V1Pod =>
  repairPod(name, undefined, [{ name: 'metrics', hostPort }]);

/** A hostNetwork pod berth never admitted: its container port is its host port. */
function hostNetworkPod(name: string, containerPort: number): V1Pod {
  return {
    metadata: { name, namespace: 'kube-system', uid: `uid-${name}` },
    spec: {
      hostNetwork: true,
      containers: [
        { name: 'agent', image: 'agent:1', ports: [{ containerPort, protocol: 'UDP' }] },
      ],
    },
    status: { phase: 'Running' },
  };
}

describe('host ports held by pods berth never admitted', () => {
  it('are recorded by the repair pass, reported with the berth pods that share them, and cleared once gone', async () => {
    const env = await repairEnv();
    await env.commitPod(sid('gs'), 'default', 'gs-1', [held('game', 7020)]);
    env.cluster.withPods(
      repairPod('gs-1', sid('gs'), [{ name: 'game', hostPort: 7020 }]),
      daemonPod('exporter-abc', 7020),
      hostNetworkPod('agent-xyz', 7030),
      daemonPod('outside', 9100),
    );
    const summary = await env.pass();
    expect(summary.findings).toEqual({ HostPortHeldOutsideBerth: 2 });
    expect(summary.notes.map((n) => n.message)).toEqual(
      expect.arrayContaining([
        'host port 7020 of range default is held (UDP by pod default/exporter-abc) by a pod berth did not admit, and by 1 berth pod: berth no longer hands it out',
        'host port 7030 of range default is held (UDP by pod kube-system/agent-xyz) by a pod berth did not admit, and by 0 berth pods: berth no longer hands it out',
      ]),
    );
    const range = { name: 'default', first: 7000, size: HOST_PORTS.size };
    const counts = await env.hostPorts.readCounts(range);
    expect([...(counts.foreign ?? [])].sort()).toEqual([20, 30]);
    expect(hostPortRangeUsage(range, counts.counts, counts.foreign)).toMatchObject({
      heldOutside: 2,
      used: 1,
    });

    // The agent goes: its mark stays for the grace passes (a replaced pod keeps it), then clears.
    env.cluster.pods.clear();
    env.cluster.withPods(
      repairPod('gs-1', sid('gs'), [{ name: 'game', hostPort: 7020 }]),
      daemonPod('exporter-abc', 7020),
    );
    await env.pass();
    await env.pass();
    expect((await env.hostPorts.readCounts(range)).foreign?.has(30)).toBe(true);
    await env.pass();
    expect([...((await env.hostPorts.readCounts(range)).foreign ?? [])]).toEqual([20]);
  });

  it('are never handed out, even by a process whose view missed the mark', async () => {
    const h = await podHarness({ default: '7000-7003' });
    // A first pod warms the handler's view of the counts; the mark comes after.
    const first = await h.create(gamePod([{ name: 'game', containerPort: 1 }], { name: 'gs0' }));
    await h.store.markForeign('default', 7001, true);
    await h.store.markForeign('default', 7002, true);
    const ports = [hostPortsOf(first).game];
    for (let i = 1; i < 6; i++) {
      const pod = await h.create(gamePod([{ name: 'game', containerPort: 1 }], { name: `gs${i}` }));
      ports.push(hostPortsOf(pod).game);
    }
    expect(ports.slice(1).every((p) => p === 7000 || p === 7003)).toBe(true);
    const counts = await h.counts();
    expect([counts.get(7001), counts.get(7002)]).not.toContain(2);
    expect((counts.get(7000) ?? 0) + (counts.get(7003) ?? 0)).toBeGreaterThanOrEqual(5);
  });

  it('leave blocks only the runs between them', async () => {
    const h = await podHarness({ default: '7000-7009' });
    await h.store.markForeign('default', 7004, true);
    const pod = await h.create(gamePod([{ name: 'voice', containerPort: 1, count: 5 }]));
    expect((hostPortsOf(pod).voice as unknown as { port: number }).port).toBe(7005);
  });
});
