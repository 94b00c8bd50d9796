import { describe, expect, it } from 'vitest';
import { failWhenNothingWorked, PassFailedError } from '../../shared/app/pass-failure.js';

describe('failWhenNothingWorked', () => {
  it('fails a pass whose every action failed, naming the first failure', () => {
    expect(() =>
      failWhenNothingWorked('eni', 0, [{ message: 'UnauthorizedOperation' }, { message: 'x' }]),
    ).toThrow(new PassFailedError('eni', 2, { message: 'UnauthorizedOperation' }));
    expect(() => failWhenNothingWorked('eni', 0, [{ message: 'denied' }])).toThrow(
      /the eni pass failed: all 1 of its actions failed; first: denied/,
    );
  });

  it('lets a pass with any success, or with nothing to do, succeed', () => {
    expect(() => failWhenNothingWorked('scale', 1, [{ message: 'one node failed' }])).not.toThrow();
    expect(() => failWhenNothingWorked('scale', 0, [])).not.toThrow();
  });
});
