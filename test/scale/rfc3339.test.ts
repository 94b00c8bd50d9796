import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatRfc3339, parseRfc3339 } from '../../shared/scale/rfc3339.js';

describe('parseRfc3339', () => {
  it('reads UTC, offsets and Go nanoseconds', () => {
    expect(parseRfc3339('2026-01-01T00:00:00Z')).toBe(Date.UTC(2026, 0, 1));
    expect(parseRfc3339('2026-01-01T01:00:00+01:00')).toBe(Date.UTC(2026, 0, 1));
    expect(parseRfc3339('2017-09-14T10:00:00.123456789Z')).toBe(
      Date.UTC(2017, 8, 14, 10, 0, 0, 123),
    );
  });

  it('rejects what is not RFC 3339', () => {
    for (const bad of [
      '',
      'yesterday',
      '2026-01-01',
      '2026-01-01 00:00:00',
      '2026-02-31T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '1700000000',
    ]) {
      expect(parseRfc3339(bad)).toBeUndefined();
    }
  });

  it('reads back what it writes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_102_444_800_000 }), (ms) => {
        expect(parseRfc3339(formatRfc3339(ms))).toBe(ms);
      }),
    );
  });
});
