import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../bench/support/virtual-time.js';

describe('VirtualClock', () => {
  it('runs sleepers concurrently: time passes as the longest sleep, not the sum', async () => {
    const clock = new VirtualClock(1_000);
    const woke: string[] = [];
    const sleeper = (name: string, ms: number) =>
      clock.sleep(ms).then(() => woke.push(`${name}@${clock.now()}`));
    void sleeper('slow', 3_000);
    void sleeper('quick', 1_000);
    void clock.at(2_500, async () => {
      await clock.sleep(100);
      woke.push(`late@${clock.now()}`);
    });
    await clock.runUntil(10_000);
    expect(woke).toEqual(['quick@2000', 'late@2600', 'slow@4000']);
    expect(clock.now()).toBe(10_000);
    expect(clock.pending).toBe(false);
  });

  it('wakes sleepers of one instant in the order they slept, and leaves later ones asleep', async () => {
    const clock = new VirtualClock(0);
    const woke: number[] = [];
    for (const n of [1, 2, 3]) void clock.sleep(500).then(() => woke.push(n));
    void clock.sleep(5_000).then(() => woke.push(4));
    await clock.runUntil(1_000);
    expect(woke).toEqual([1, 2, 3]);
    expect(clock.pending).toBe(true);
  });
});
