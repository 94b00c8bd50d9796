import { describe, expect, it } from 'vitest';
import { CILIUM_DEFAULTS, CILIUM_RAISED_API, runCilium } from '../../bench/eni/cilium.js';
import { calls, node, pods } from './eni-events.js';

describe('Cilium ENI operator model', () => {
  it('fills a new node to pre-allocate 8 free addresses in one AssignPrivateIpAddresses on eth0', async () => {
    const run = await runCilium('c5', CILIUM_DEFAULTS, 'clean', [node('a', 'c5.large')], [], 180);

    expect(calls(run, 'AssignPrivateIpAddresses')).toBe(1);
    expect(calls(run, 'CreateNetworkInterface')).toBe(0);
    expect(run.idleIps.peak).toBe(8);
  });

  it('creates an ENI for the rest of the 8 when eth0 has fewer free slots', async () => {
    // t3.medium: 6 addresses per ENI, so eth0 takes 5 secondaries and a new ENI the other 3.
    const run = await runCilium('t3', CILIUM_DEFAULTS, 'clean', [node('a', 't3.medium')], [], 180);

    expect(calls(run, 'AssignPrivateIpAddresses')).toBe(1);
    expect(calls(run, 'CreateNetworkInterface')).toBe(1);
    expect(calls(run, 'AttachNetworkInterface')).toBe(1);
    expect(calls(run, 'ModifyNetworkInterfaceAttribute')).toBe(1);
    expect(run.idleIps.peak).toBe(8);
  });

  it('makes a pod beyond the free addresses wait for the next allocation, then serves it', async () => {
    const run = await runCilium(
      'c5',
      CILIUM_DEFAULTS,
      'clean',
      [node('a', 'c5.large')],
      pods(10, 100),
      300,
    );

    expect(run.waitingPods).toBe(1);
    // Served after the agent's next CiliumNode write (at most 15 s on) and the allocation.
    expect(run.longestWaitSeconds).toBeGreaterThan(0);
    expect(run.longestWaitSeconds).toBeLessThanOrEqual(16);
    expect(run.podsPerNode['c5.large']?.peak).toBe(10);
  });

  it('never releases excess addresses at its defaults', async () => {
    const events = pods(20, 100, 200);
    const nodes = [node('a', 'c5.large')];

    const defaults = await runCilium('defaults', CILIUM_DEFAULTS, 'clean', nodes, events, 900);
    const releasing = await runCilium(
      'release',
      { ...CILIUM_DEFAULTS, releaseExcessIps: true },
      'clean',
      nodes,
      events,
      900,
    );

    expect(calls(defaults, 'UnassignPrivateIpAddresses')).toBe(0);
    expect(calls(releasing, 'UnassignPrivateIpAddresses')).toBeGreaterThan(0);
  });

  it('keeps every EC2 call within one bucket of 4 calls a second and a burst of 20', async () => {
    const types = ['t3.medium', 'c5.large', 'm5.xlarge', 'c5.4xlarge'];
    const fleet = Array.from({ length: 12 }, (_, i) => node(`n${i}`, types[i % 4] ?? 'c5.large'));
    const seconds = 120;

    const run = await runCilium('fleet', CILIUM_DEFAULTS, 'clean', fleet, pods(16, 30), seconds);

    const total = Object.values(run.callsByAction).reduce((sum, n) => sum + n, 0);
    // Twelve nodes joining at once want far more calls than that in their first second.
    expect(run.peakCallsPerSecond).toBeGreaterThanOrEqual(20);
    expect(run.peakCallsPerSecond).toBeLessThanOrEqual(24);
    expect(total).toBeLessThanOrEqual(20 + 4 * seconds);
  });

  it('lets a raised --limit-ipam-api-qps/--limit-ipam-api-burst make more calls a second', async () => {
    const types = ['t3.medium', 'c5.large', 'm5.xlarge', 'c5.4xlarge'];
    const fleet = Array.from({ length: 12 }, (_, i) => node(`n${i}`, types[i % 4] ?? 'c5.large'));

    const run = await runCilium('raised', CILIUM_RAISED_API, 'clean', fleet, pods(16, 30), 120);

    expect(run.settings.apiQps).toBe(20);
    expect(run.peakCallsPerSecond).toBeGreaterThan(24);
  });
});
