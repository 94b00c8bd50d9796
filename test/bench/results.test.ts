import { sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resultsFile } from '../../bench/support/results.js';

describe('benchmark results location', () => {
  it('keeps a plain run out of the checkout, under .berth/bench/ which git ignores', () => {
    const path = resultsFile('chaos', ['node', 'bench/main.ts', 'chaos']);
    expect(path.endsWith(['', '.berth', 'bench', 'chaos.json'].join(sep))).toBe(true);
    expect(path).not.toContain(['bench', 'results'].join(sep));
  });

  it('writes the committed record under bench/results/ only with --save', () => {
    const path = resultsFile('eni', ['node', 'bench/main.ts', 'eni', '--save']);
    expect(path.endsWith(['', 'bench', 'results', 'eni.json'].join(sep))).toBe(true);
  });
});
