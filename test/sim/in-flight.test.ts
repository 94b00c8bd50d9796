import { describe, expect, it } from 'vitest';
import { InFlight } from '../../sim/in-flight.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('InFlight', () => {
  it('never runs more than its limit at once, and drains every piece', async () => {
    const inFlight = new InFlight(3);
    let running = 0;
    let most = 0;
    let done = 0;
    for (let i = 0; i < 20; i++) {
      await inFlight.add(async () => {
        running++;
        most = Math.max(most, running);
        await tick();
        running--;
        done++;
      });
    }
    await inFlight.drain();
    expect({ most, done, running }).toEqual({ most: 3, done: 20, running: 0 });
  });

  it('throws the first failure from every later add and drain', async () => {
    const inFlight = new InFlight(2);
    await inFlight.add(async () => {
      await tick();
      throw new Error('first');
    });
    await inFlight.add(async () => {
      await tick();
      await tick();
      throw new Error('second');
    });
    await expect(inFlight.drain()).rejects.toThrow('first');
    await expect(inFlight.add(async () => {})).rejects.toThrow('first');
  });
});
