import { describe, expect, it } from 'vitest';
import { EnvironmentError, exitCodeOf, UsageError } from '../../shared/app/local-errors.js';
import { LocalCaError } from '../../shared/local/errors.js';

describe('exitCodeOf', () => {
  it('answers 2 for a usage error and for a local CA that waits for --new-ca, 3 for the environment, 1 otherwise', () => {
    expect(exitCodeOf(new UsageError('--port: not a number'))).toBe(2);
    expect(exitCodeOf(new LocalCaError('the local CA has no key kept: pass --new-ca'))).toBe(2);
    expect(exitCodeOf(new EnvironmentError('port 8443 is in use'))).toBe(3);
    expect(exitCodeOf(new Error('the pass failed'))).toBe(1);
  });
});
