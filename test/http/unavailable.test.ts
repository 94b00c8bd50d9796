import { describe, expect, it } from 'vitest';
import { RateBudgetExhaustedError } from '../../shared/ec2/errors.js';
import { noteFailedCall } from '../../shared/fronts/errors.js';
import { unavailableFault } from '../../shared/http/unavailable.js';
import { KubernetesUnreachableError } from '../../shared/k8s/errors.js';
import { ItemSchemaTooNewError } from '../../shared/store/errors.js';
import { FakeAwsError } from '../../sim/fakes/api-gate.js';

describe('unavailableFault', () => {
  it('answers an item a newer berth wrote with 503, naming the item and the fix', () => {
    const error = new ItemSchemaTooNewError('local#pods / default/gs-0', 2, 1);
    const fault = unavailableFault(new Error('admission failed', { cause: error }), 'table T');
    expect(fault?.statusCode).toBe(503);
    expect(fault?.message).toContain('table item local#pods / default/gs-0 has schema version 2');
    expect(fault?.message).toContain('upgrade berth');
  });

  it('answers an unreachable Kubernetes API with 503, and a bug with nothing (a 500)', () => {
    const unreachable = new KubernetesUnreachableError(
      { verb: 'list', resource: 'nodes' },
      { cause: new Error('fetch failed') },
    );
    expect(unavailableFault(unreachable, 'table T')?.statusCode).toBe(503);
    expect(unavailableFault(new TypeError('x is undefined'), 'table T')).toBeUndefined();
  });

  it('names the front service a failed call went to, 503 when it did not answer, 500 when it refused', () => {
    const accelerator = {
      service: 'Global Accelerator',
      action: 'ListCustomRoutingPortMappings',
    } as const;
    const down = noteFailedCall(
      new FakeAwsError('InternalServiceErrorException', 'oops', 500),
      accelerator,
    );
    expect(unavailableFault(new Error('binding failed', { cause: down }), 'table T')).toEqual({
      statusCode: 503,
      message: expect.stringMatching(
        /^Global Accelerator did not answer ListCustomRoutingPortMappings \(InternalServiceErrorException: oops\); /,
      ),
    });
    const spent = noteFailedCall(
      new RateBudgetExhaustedError('elbv2-describe', 900, 0, { service: 'ELBv2' }),
      {
        service: 'ELBv2',
        action: 'DescribeListeners',
      },
    );
    expect(unavailableFault(spent, 'table T')?.statusCode).toBe(503);
    // No HTTP answer at all (a reset connection): not answered.
    const reset = noteFailedCall(new Error('socket hang up'), {
      service: 'ELBv2',
      action: 'DescribeTags',
    });
    expect(unavailableFault(reset, 'table T')?.statusCode).toBe(503);
    const denied = noteFailedCall(new FakeAwsError('AccessDenied', 'no', 403), {
      service: 'ELBv2',
      action: 'DescribeTags',
    });
    expect(unavailableFault(denied, 'table T')).toEqual({
      statusCode: 500,
      message: expect.stringMatching(
        /^ELBv2 refused DescribeTags \(AccessDenied: no\); check berth's IAM/,
      ),
    });
    // The same kind of SDK error not noted as a front service's is the table's.
    expect(
      unavailableFault(new FakeAwsError('AccessDenied', 'no', 403), 'DynamoDB table T')?.message,
    ).toMatch(/^the store did not answer: DynamoDB table T/);
  });
});
