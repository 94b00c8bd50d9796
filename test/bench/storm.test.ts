import { describe, expect, it } from 'vitest';
import { runStorm, type StormWave } from '../../bench/multicluster/storm.js';

/** A storm small enough for a test: 150 nodes of one cluster against 4 of another. */
const WAVES: readonly StormWave[] = [
  { cluster: 'stormy', nodes: 150, fromS: 0, overS: 2 },
  { cluster: 'quiet', nodes: 4, fromS: 5, overS: 1 },
];

describe('the node storm', () => {
  it("serves a quiet cluster's few nodes first under the fair budget, and behind the storm with a first-come one", async () => {
    const fair = await runStorm(WAVES, 'fair');
    const firstCome = await runStorm(WAVES, 'first-come');
    const alone = await runStorm(
      WAVES.filter((wave) => wave.cluster === 'quiet'),
      'fair',
    );
    for (const run of [fair, firstCome, alone]) {
      expect(run.quiet?.notReady).toBe(0);
      expect(run.quiet?.mutatingCalls).toBeGreaterThan(0);
    }
    // 150 nodes' assigns on their primary ENIs empty the address bucket (25 tokens, 2.5 a
    // second) before the quiet four join: first come, they queue behind the storm; fairly, they
    // go first.
    expect(firstCome.quiet?.readyMaxS ?? 0).toBeGreaterThan(20);
    expect(fair.quiet?.readyMaxS ?? 0).toBeLessThan((firstCome.quiet?.readyMaxS ?? 0) / 2);
    expect(alone.quiet?.readyMaxS ?? 0).toBeLessThanOrEqual(fair.quiet?.readyMaxS ?? 0);
    // Fairly, each quiet node's own event served it: none waited for a pass.
    expect(fair.quiet?.servedByEvent).toBe(4);
    expect(fair.stormy?.notReady).toBe(0);
  });
});
