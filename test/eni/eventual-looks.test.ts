/**
 * The node IP API's eventually consistent look-up (half the read units): a DEL that lost its
 * cached result finds its address with a look that may be a second stale, and still never frees
 * an address another pod holds.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NotAssignedError } from '../../shared/eni/errors.js';
import type { NodeState } from '../../shared/eni/model.js';
import { runEniPass } from '../../shared/eni/pass.js';
import { assignIp, handleLookUpIp, releaseIp } from '../../shared/eni/service.js';
import type { NodeRead, NodeWrite } from '../../shared/eni/store.js';
import { DynamoEniStore } from '../../shared/store/dynamo-eni-store.js';
import { eniWorld } from '../../sim/eni-world.js';
import { InMemoryEniStore } from '../../sim/fakes/eni-store.js';
import { freshTable } from '../support/dynamo.js';

/**
 * The in-memory store whose eventually consistent looks answer the node as it stood `lag` commits
 * ago (what a replica a second behind answers), and which counts looks by consistency.
 */
class LaggingStore extends InMemoryEniStore {
  lag = 0;
  readonly looks: NodeRead[] = [];
  readonly poolReads: NodeRead[] = [];
  override async getPool(node: string, read: NodeRead = 'strong') {
    this.poolReads.push(read);
    return super.getPool(node);
  }
  readonly #history = new Map<string, NodeState[]>();
  override async loadNode(node: string, read: NodeRead = 'strong') {
    this.looks.push(read);
    const now = await super.loadNode(node);
    const past = this.#history.get(node) ?? [];
    if (read === 'strong' || this.lag === 0) return now;
    return past[Math.max(0, past.length - this.lag)] ?? now;
  }
  override async commit(node: string, writes: readonly NodeWrite[]) {
    const before = await super.loadNode(node);
    await super.commit(node, writes);
    const past = this.#history.get(node) ?? [];
    past.push(structuredClone(before));
    this.#history.set(node, past.slice(-20));
  }
}

const pod = (i: number) => ({ namespace: 'games', pod: `gs-${i}` });

describe("the node IP API's eventually consistent look-up", () => {
  it('reads a pool record eventually consistent at half the cost of a strong read', async () => {
    const { client, tableName } = await freshTable();
    const store = new DynamoEniStore({ client, tableName, cluster: 'blue' });
    const world = eniWorld({ store });
    world.addNode('node-a');
    await runEniPass(world.deps);
    const before = store.meter.totals().readUnits;
    const strong = await store.getPool('node-a');
    const strongUnits = store.meter.totals().readUnits - before;
    expect(await store.getPool('node-a', 'eventual')).toEqual(strong);
    expect(store.meter.totals().readUnits - before - strongUnits).toBe(strongUnits / 2);
  });

  it('reads a look-up eventually consistent and an assign strongly', async () => {
    const store = new LaggingStore();
    const world = eniWorld({ store });
    world.addNode('node-a');
    await runEniPass(world.deps);
    store.looks.length = 0;
    store.poolReads.length = 0;
    const held = await assignIp(world.deps, 'node-a', pod(1));
    // A repeated assign must answer the same address: its look is strong.
    expect(await assignIp(world.deps, 'node-a', pod(1))).toEqual(held);
    expect(store.looks).toEqual(['strong', 'strong']);
    // The pool record only says where: every claim is conditional on the address record. A
    // claim made reads it once more, strongly: the node may have begun handing out the pool.
    expect(store.poolReads).toEqual(['eventual', 'strong', 'eventual']);
    store.looks.length = 0;
    store.poolReads.length = 0;
    expect((await handleLookUpIp(world.deps, 'node-a', pod(1))).ip).toBe(held.ip);
    expect(store.looks).toEqual(['eventual']);
    expect(store.poolReads).toEqual(['eventual']);
  });

  it('with look-ups up to five commits stale, a DEL never frees an address another pod holds', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            pod: fc.integer({ min: 0, max: 7 }),
            release: fc.boolean(),
            lag: fc.integer({ min: 0, max: 5 }),
          }),
          { minLength: 5, maxLength: 30 },
        ),
        async (steps) => {
          const store = new LaggingStore();
          const world = eniWorld({ store, eni: { cooldownSeconds: 0 } });
          world.addNode('node-a');
          await runEniPass(world.deps);
          const live = new Map<number, string>();
          for (const step of steps) {
            store.lag = step.lag;
            if (!step.release) {
              live.set(step.pod, (await assignIp(world.deps, 'node-a', pod(step.pod))).ip);
              continue;
            }
            // The plugin's DEL without its cached result: look the pod up, release what it finds.
            live.delete(step.pod);
            const found = await handleLookUpIp(world.deps, 'node-a', pod(step.pod)).catch(
              (error: unknown) => {
                if (error instanceof NotAssignedError) return undefined;
                throw error;
              },
            );
            if (found) {
              await releaseIp(world.deps, 'node-a', found.ip, pod(step.pod)).catch(() => undefined);
            }
            const records = (await store.loadNode('node-a')).ips;
            for (const [n, ip] of live) {
              expect(records.find((r) => r.ip === ip)).toMatchObject({
                state: 'assigned',
                pod: `games/gs-${n}`,
              });
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
