import type { V1Pod } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { effectiveCpuRequestMillis, parseMillis } from '../../shared/scale/cpu.js';

describe('parseMillis', () => {
  it('reads the CPU quantities Kubernetes accepts', () => {
    const cases: Array<[string, number]> = [
      ['100m', 100],
      ['0.1', 100],
      ['.5', 500],
      ['1', 1000],
      ['2.5', 2500],
      ['3920m', 3920],
      ['1e3', 1_000_000],
      ['5E-1', 500],
      ['1k', 1_000_000],
      ['500000u', 500],
      ['1n', 1],
      ['1Ki', 1_024_000],
    ];
    for (const [text, millis] of cases) expect(parseMillis(text)).toBe(millis);
  });

  it('rounds a fraction of a milli up, as the scheduler does', () => {
    expect(parseMillis('0.0001')).toBe(1);
    expect(parseMillis('1500u')).toBe(2);
  });

  it('rejects what is not a quantity', () => {
    for (const bad of ['', 'm', 'abc', '1.2.3', '10 m', '1mi'])
      expect(parseMillis(bad)).toBeUndefined();
  });

  it('agrees between millis and decimal cores', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), (millis) => {
        expect(parseMillis(`${millis}m`)).toBe(millis);
        const cores = `${Math.floor(millis / 1000)}.${String(millis % 1000).padStart(3, '0')}`;
        expect(parseMillis(cores)).toBe(millis);
      }),
    );
  });
});

const container = (name: string, cpu?: string, restartPolicy?: string) => ({
  name,
  ...(cpu ? { resources: { requests: { cpu } } } : {}),
  ...(restartPolicy ? { restartPolicy } : {}),
});

describe('effectiveCpuRequestMillis', () => {
  it('sums the containers', () => {
    const pod: V1Pod = {
      spec: { containers: [container('a', '100m'), container('b', '250m'), container('c')] },
    };
    expect(effectiveCpuRequestMillis(pod)).toBe(350);
  });

  it('takes the largest init container when it exceeds the containers', () => {
    const pod: V1Pod = {
      spec: {
        containers: [container('a', '100m')],
        initContainers: [container('i1', '300m'), container('i2', '1')],
      },
    };
    expect(effectiveCpuRequestMillis(pod)).toBe(1000);
  });

  it('keeps sidecar init containers running beside later ones and the containers', () => {
    const pod: V1Pod = {
      spec: {
        containers: [container('a', '100m')],
        initContainers: [container('proxy', '200m', 'Always'), container('setup', '500m')],
      },
    };
    // Init peak: setup 500m + proxy 200m = 700m; steady state: 100m + 200m = 300m.
    expect(effectiveCpuRequestMillis(pod)).toBe(700);
  });

  it('adds the RuntimeClass overhead', () => {
    const pod: V1Pod = { spec: { containers: [container('a', '100m')], overhead: { cpu: '50m' } } };
    expect(effectiveCpuRequestMillis(pod)).toBe(150);
  });

  it('uses pod-level requests when set', () => {
    const pod: V1Pod = {
      spec: { containers: [container('a', '100m')], resources: { requests: { cpu: '2' } } },
    };
    expect(effectiveCpuRequestMillis(pod)).toBe(2000);
  });
});
