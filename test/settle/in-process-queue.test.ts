import { afterEach, describe, expect, it, vi } from 'vitest';
import { InProcessSettleQueue } from '../../shared/settle/in-process-queue.js';
import type { SettleOutcome, SettleTask } from '../../shared/settle/task.js';

const task: SettleTask = {
  id: 'abcdefghijklmnopqrst',
  reason: 'release',
  admittedAt: 0,
  attempt: 0,
};

describe('InProcessSettleQueue', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('runs a task after its delay and again while it asks for another look, retrying failures', async () => {
    vi.useFakeTimers();
    const outcomes: Array<SettleOutcome | Error> = [
      { freed: 0, kept: 0, recheckAfter: 10 },
      new Error('apiserver unreachable'),
      { freed: 1, kept: 0 },
    ];
    const seen: number[] = [];
    const log = { settled: vi.fn(), failed: vi.fn() };
    const queue = new InProcessSettleQueue(async (t) => {
      seen.push(t.attempt);
      const next = outcomes.shift();
      if (next instanceof Error) throw next;
      return next ?? { freed: 0, kept: 0 };
    }, log);
    await queue.submit(task, 5);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await vi.advanceTimersByTimeAsync(10_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(seen).toEqual([0, 1, 2]);
    expect(log.failed).toHaveBeenCalledTimes(1);
    expect(log.settled).toHaveBeenLastCalledWith({ ...task, attempt: 2 }, { freed: 1, kept: 0 });
    expect(queue.waiting).toBe(0);
  });

  it('drops waiting tasks on close', async () => {
    vi.useFakeTimers();
    const step = vi.fn(async () => ({ freed: 0, kept: 0 }));
    const queue = new InProcessSettleQueue(step, { settled: vi.fn(), failed: vi.fn() });
    await queue.submit(task, 5);
    await queue.close();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(step).not.toHaveBeenCalled();
  });
});
