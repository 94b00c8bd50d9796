import { describe, expect, it } from 'vitest';
import { unavailableFault } from '../../shared/http/unavailable.js';
import { KubernetesUnreachableError } from '../../shared/k8s/errors.js';
import { ItemSchemaTooNewError } from '../../shared/store/errors.js';

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
});
