import { describe, expect, it } from 'vitest';
import { dominates, frontier } from '../../bench/eni/frontier.js';

const run = (name: string, mutatingCalls: number, idle: number) => ({
  name,
  mutatingCalls,
  idleIps: { average: idle },
});

describe('ENI benchmark frontier of calls against idle addresses', () => {
  it('keeps the runs no other beats on both axes, fewest calls first', () => {
    const runs = [
      run('many calls, few idle', 3000, 4000),
      run('few calls, many idle', 1000, 6000),
      run('worse on both', 3500, 6500),
      run('middle', 2000, 5000),
      run('same calls, more idle', 2000, 5001),
    ];

    const { front, dominated } = frontier(runs);

    expect(front.map((r) => r.name)).toEqual([
      'few calls, many idle',
      'middle',
      'many calls, few idle',
    ]);
    expect(dominated.map(({ run: r, by }) => [r.name, by.name])).toEqual([
      ['worse on both', 'few calls, many idle'],
      ['same calls, more idle', 'middle'],
    ]);
  });

  it('keeps runs tied on both axes, and one run alone', () => {
    expect(frontier([run('a', 10, 10), run('b', 10, 10)]).front).toHaveLength(2);
    expect(frontier([run('a', 10, 10)]).front.map((r) => r.name)).toEqual(['a']);
    expect(frontier([]).front).toEqual([]);
  });

  it('dominates only when no worse on both and better on one', () => {
    expect(dominates(run('a', 1, 1), run('b', 1, 2))).toBe(true);
    expect(dominates(run('a', 1, 1), run('b', 2, 1))).toBe(true);
    expect(dominates(run('a', 1, 1), run('b', 1, 1))).toBe(false);
    expect(dominates(run('a', 1, 3), run('b', 2, 1))).toBe(false);
  });
});
