import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { describe, expect, it, vi } from 'vitest';
import {
  type AdmissionDecision,
  decisionOf,
  formatDecision,
} from '../../shared/admission/decision.js';
import { parseAdmissionReview } from '../../shared/admission/review.js';
import { decisionRecorder } from '../../shared/app/observability.js';
import { createHttpApi } from '../../shared/http/api.js';
import { review } from '../../sim/reviews.js';

const request = parseAdmissionReview(
  review({
    resource: 'services',
    operation: 'CREATE',
    namespace: 'games',
    name: 'lobby',
    object: { metadata: { name: 'lobby' }, spec: {} },
  }),
);

describe('admission decisions', () => {
  it('names the object, the answer and the values the patch gave it', () => {
    const decision = decisionOf(
      request,
      {
        allowed: true,
        patch: [
          { op: 'add', path: '/spec/clusterIP', value: '10.100.4.2' },
          { op: 'replace', path: '/spec/ports/0/nodePort', value: 30034 },
        ],
      },
      3.14651,
    );
    expect(decision).toMatchObject({
      resource: 'services',
      operation: 'CREATE',
      namespace: 'games',
      name: 'lobby',
      allowed: true,
      values: ['clusterIP=10.100.4.2', 'nodePort=30034'],
      latencyMs: 3.15,
    });
    expect(formatDecision(decision)).toBe(
      'CREATE services games/lobby allowed clusterIP=10.100.4.2 nodePort=30034 3.15 ms',
    );
    const denied = decisionOf(
      request,
      { allowed: false, code: 409, message: 'spec.clusterIPs[0]: range is full\nmore' },
      1,
    );
    expect(formatDecision(denied)).toBe(
      'CREATE services games/lobby denied 409: spec.clusterIPs[0]: range is full 1 ms',
    );
  });

  it('names no object when the review has no name and its object has metadata: null', () => {
    const unnamed = parseAdmissionReview(
      review({
        resource: 'services',
        operation: 'UPDATE',
        name: '',
        object: { metadata: null, spec: {} },
      }),
    );
    expect(decisionOf(unnamed, { allowed: true }, 1).name).toBe('');
  });

  it("reads the values of a container's ports whatever entries the object brought along", () => {
    const decision = decisionOf(
      request,
      {
        allowed: true,
        patch: [
          {
            op: 'replace',
            path: '/spec/containers/0/ports',
            value: [null, 5, { name: 'game', containerPort: 7777, hostPort: 7012 }],
          },
        ],
      },
      1,
    );
    expect(decision.values).toEqual(['hostPort=7012']);
  });

  it('is handed to the HTTP API caller for every review a handler takes', async () => {
    const seen: AdmissionDecision[] = [];
    const api = createHttpApi({
      admission: {
        services: async () => ({ allowed: false, code: 422, message: 'spec: bad' }),
        pods: async () => ({ allowed: true }),
        podBinding: async () => ({ allowed: true }),
      },
      healthy: async () => true,
      onDecision: (decision) => seen.push(decision),
    });
    await api({
      method: 'POST',
      path: '/admission',
      body: JSON.stringify(review({ resource: 'services', operation: 'CREATE' })),
    });
    await api({
      method: 'POST',
      path: '/admission',
      body: JSON.stringify(review({ resource: 'configmaps', operation: 'CREATE' })),
    });
    expect(seen.map((d) => [d.resource, d.allowed, d.code])).toEqual([['services', false, 422]]);
  });

  it('logs each decision and counts denials, full ranges and values handed out', () => {
    const logger = new Logger({ serviceName: 'test', logLevel: 'SILENT' });
    const metrics = new Metrics({ namespace: 'test' });
    const info = vi.spyOn(logger, 'info');
    const added: [string, number][] = [];
    vi.spyOn(metrics, 'addMetric').mockImplementation((name, _unit, value) => {
      added.push([name, value]);
      return metrics;
    });
    const record = decisionRecorder(logger, metrics);
    record(
      decisionOf(
        request,
        { allowed: true, patch: [{ op: 'add', path: '/spec/clusterIP', value: '10.0.0.1' }] },
        1,
      ),
    );
    record(
      decisionOf(
        request,
        {
          allowed: false,
          code: 409,
          message: 'spec.clusterIPs[0]: failed to allocate a serviceIP: range is full',
        },
        1,
      ),
    );
    expect(info).toHaveBeenCalledTimes(2);
    // An allowed review publishes no metric: its values are in its log line.
    expect(added).toEqual([
      ['AdmissionDenied', 1],
      ['RangeFullDenials', 1],
    ]);
  });
});
