import { describe, expect, it } from 'vitest';
import {
  isDuplicateListener,
  isDuplicateTargetGroupName,
  isLimitExceeded,
  isNotFound,
  isResourceInUse,
  isThrottled,
  isTransient,
} from '../../shared/aws/error-codes.js';

const named = (name: string) => Object.assign(new Error(name), { name });

describe('ELBv2 and Global Accelerator error classification', () => {
  it("knows each ELBv2 code by its wire spelling and by the SDK's exception name", () => {
    const cases: [(error: unknown) => boolean, string][] = [
      [isLimitExceeded, 'TooManyListeners'],
      [isLimitExceeded, 'TooManyTargetGroups'],
      [isNotFound, 'ListenerNotFound'],
      [isNotFound, 'TargetGroupNotFound'],
      [isNotFound, 'LoadBalancerNotFound'],
      [isDuplicateListener, 'DuplicateListener'],
      [isDuplicateTargetGroupName, 'DuplicateTargetGroupName'],
      [isResourceInUse, 'ResourceInUse'],
      [isTransient, 'PriorRequestNotComplete'],
    ];
    for (const [predicate, code] of cases) {
      expect([predicate(named(code)), predicate(named(`${code}Exception`))]).toEqual([true, true]);
      // The SDK keeps the wire code beside its own name.
      expect(predicate({ Code: code })).toBe(true);
    }
  });

  it("sorts Global Accelerator's codes", () => {
    expect(isThrottled(named('ThrottlingException'))).toBe(true);
    expect(isNotFound(named('EndpointGroupNotFoundException'))).toBe(true);
    expect(isNotFound(named('AcceleratorNotFoundException'))).toBe(true);
    expect(isLimitExceeded(named('LimitExceededException'))).toBe(true);
    expect(isTransient(named('InternalServiceErrorException'))).toBe(true);
    expect(isTransient(named('TransactionInProgressException'))).toBe(true);
    // An address or port outside the endpoint group is the caller's to fix, not a retry's.
    for (const predicate of [isTransient, isThrottled, isNotFound, isLimitExceeded]) {
      expect(predicate(named('InvalidArgumentException'))).toBe(false);
    }
  });

  it('keeps the classes apart: a duplicate listener is neither in use nor a limit', () => {
    const duplicate = named('DuplicateListenerException');
    expect([isResourceInUse(duplicate), isLimitExceeded(duplicate), isNotFound(duplicate)]).toEqual(
      [false, false, false],
    );
    expect(isDuplicateListener(named('DuplicateTargetGroupNameException'))).toBe(false);
  });
});
