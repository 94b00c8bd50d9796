import { describe, expect, it } from 'vitest';
import { portKey, type SchedulableNode, scheduleOnto } from '../../sim/scheduler.js';

const node = (
  name: string,
  used: number,
  ports: string[] = [],
  cordoned = false,
): SchedulableNode => ({
  name,
  cpuMillis: 4_000,
  usedCpuMillis: used,
  cordoned,
  boundPorts: new Set(ports),
});
const pod = { cpuMillis: 500, hostPorts: [{ port: 7001, protocol: 'UDP' }] };

describe('scheduleOnto', () => {
  it('packs: the fullest node the pod fits on', () => {
    expect(scheduleOnto(pod, [node('a', 0), node('b', 3_000), node('c', 1_000)])).toBe('b');
  });

  it('never puts a pod where its CPU does not fit, its host port is bound, or the node is cordoned', () => {
    expect(
      scheduleOnto(pod, [
        node('full', 3_600),
        node('bound', 0, [portKey({ port: 7001, protocol: 'UDP' })]),
        node('cordoned', 0, [], true),
      ]),
    ).toBeUndefined();
    // Another protocol on the same number is no conflict.
    expect(scheduleOnto(pod, [node('tcp', 0, ['7001/TCP'])])).toBe('tcp');
  });
});
