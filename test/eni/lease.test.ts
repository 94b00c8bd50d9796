import { describe, expect, it } from 'vitest';
import { runEniPass } from '../../shared/eni/pass.js';
import { assignIp } from '../../shared/eni/service.js';
import { eniWorld } from '../../sim/eni-world.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';

/** The in-memory store, recording every moment two acquisitions hold one pool's lease at once. */
class OverlapStore extends InMemoryEniStore {
  readonly holders = new Map<string, Set<string>>();
  readonly overlaps: string[] = [];
  readonly granted: string[] = [];

  override async tryLease(node: string, holder: string, now: number, until: number) {
    const ok = await super.tryLease(node, holder, now, until);
    if (ok) {
      const held = this.holders.get(node) ?? new Set<string>();
      if (held.size > 0) this.overlaps.push(node);
      // Counted per grant, so a re-entrant grant to the same holder shows as an overlap too.
      held.add(`${holder}@${this.granted.length}`);
      this.holders.set(node, held);
      this.granted.push(holder);
    }
    return ok;
  }

  override async endLease(node: string, holder: string) {
    await super.endLease(node, holder);
    const held = this.holders.get(node);
    for (const entry of held ?? []) {
      if (entry.startsWith(`${holder}@`)) held?.delete(entry);
    }
  }
}

describe('pool lease', () => {
  it('admits one acquisition at a time within one process', async () => {
    const store = new OverlapStore();
    const world = eniWorld({ store, eni: { minIdle: 0, maxIdle: 1 } });
    world.addNode('node-a');
    // A busy answer is fine here (503, retried by the caller); two holders at once are not.
    await Promise.allSettled([
      runEniPass(world.deps),
      ...Array.from({ length: 8 }, (_, i) =>
        assignIp(world.deps, 'node-a', { namespace: 'games', pod: `gs-${i}` }),
      ),
    ]);
    expect(store.granted.length).toBeGreaterThan(1);
    expect(store.overlaps).toEqual([]);
  });

  it('names each acquisition with a fresh holder under the process holder', async () => {
    const store = new OverlapStore();
    const world = eniWorld({ store, holder: 'proc-1' });
    world.addNode('node-a');
    await assignIp(world.deps, 'node-a', { namespace: 'games', pod: 'gs-1' });
    await runEniPass(world.deps);
    expect(store.granted.length).toBeGreaterThanOrEqual(2);
    expect(new Set(store.granted).size).toBe(store.granted.length);
    for (const holder of store.granted) expect(holder.startsWith('proc-1#')).toBe(true);
  });
});
