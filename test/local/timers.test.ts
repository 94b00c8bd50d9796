import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startPassTimers } from '../../shared/local/timers.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('startPassTimers', () => {
  it('runs each pass at start and on its interval, skips a tick while it is still running, and leaves 0 off', async () => {
    const results: string[] = [];
    let release: () => void = () => {};
    let runs = 0;
    const stop = startPassTimers(
      [
        {
          name: 'slow',
          intervalSeconds: 10,
          run: () => {
            runs++;
            return new Promise<string>((done) => {
              release = () => done(`run ${runs}`);
            });
          },
        },
        { name: 'off', intervalSeconds: 0, run: async () => results.push('off ran') },
      ],
      { result: (name, result) => results.push(`${name}: ${String(result)}`), failure: () => {} },
    );
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(runs).toBe(1);
    release();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runs).toBe(2);
    release();
    await stop();
    expect(results).toEqual(['slow: run 1', 'slow: run 2']);
  });

  it('reports a failing pass and keeps its timer', async () => {
    const failures: string[] = [];
    let runs = 0;
    const stop = startPassTimers(
      [
        {
          name: 'flaky',
          intervalSeconds: 1,
          run: async () => Promise.reject(new Error(`boom ${++runs}`)),
        },
      ],
      {
        result: () => {},
        failure: (name, error) => failures.push(`${name}: ${(error as Error).message}`),
      },
    );
    await vi.advanceTimersByTimeAsync(2_000);
    await stop();
    expect(failures).toEqual(['flaky: boom 1', 'flaky: boom 2', 'flaky: boom 3']);
  });
});
