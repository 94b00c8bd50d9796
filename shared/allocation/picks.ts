/**
 * The dynamic picks of one assignment, in the kube-apiserver's order (`pickFree`): first over the
 * blocks this process knows (`BlockView`), with no read; when they hold no free value in the upper
 * band, over the store. Each value picked is held in the view until the assignment ends, so the
 * process's other picks pass over it.
 */
import { BLOCK_SIZE, type Offset, offsetAt, slotOf } from '../net/offset.js';
import type { ValueRange } from '../net/value-range.js';
import type { BlockView } from './block-view.js';
import type { PlannedValue, RangeView } from './plan.js';
import { pickFree } from './scan.js';
import type { AllocationStore, Block } from './store.js';

/** Dynamic picks for one assignment, held in the process's view until `finish`. */
export class Picks implements RangeView {
  readonly #store: AllocationStore;
  readonly #view: BlockView;
  readonly #random: () => number;
  readonly #held: { key: string; offset: Offset }[] = [];

  constructor(store: AllocationStore, view: BlockView, random: () => number) {
    this.#store = store;
    this.#view = view;
    this.#random = random;
  }

  /**
   * A free value of the range, none of `excluded`. The store decides whether the upper band (and
   * then the range) is full and teaches the view what it reads. Values this process is claiming
   * right now are skipped either way, and the value picked is held before anything else of this
   * process runs: held after an `await`, two concurrent picks found the same value free and the
   * later claim lost to its own process (measured: 2 to 4 lost races in 138 node port claims at
   * 90% fill). A scan's answer can also be older than a claim of this process answered meanwhile:
   * a value the view shows taken is passed over once and scanned for again (the new scan replaces
   * the view's block unless a newer answer shows it taken); offered a second time, it is claimed
   * and the conditional write decides, so the loop ends and a value freed since the view learned
   * it is never lost.
   */
  async pick(
    range: ValueRange,
    key: string,
    excluded: ReadonlySet<Offset> | undefined,
  ): Promise<Offset | undefined> {
    /** Values a scan answered that the view knew taken, passed over once. */
    const doubted = new Set<Offset>();
    for (;;) {
      const skip = new Set([...(excluded ?? []), ...this.#view.claiming(key)]);
      const seen = this.#view.pick(range, key, this.#random, skip);
      if (seen !== undefined) return this.#hold(key, seen);
      const read = (from: Offset, to: Offset) => this.#store.scanBlocks(key, from, to);
      const found = await pickFree(range, this.#view.learning(key, read), this.#random, skip);
      if (found === undefined) return undefined;
      // The scan took round trips: another claim of this process may have taken the value
      // meanwhile, and still be in flight or already answered (its hold settled, the view
      // showing its block newer than the scan's). Either way the claim would lose to itself.
      if (this.#view.claiming(key).has(found)) continue;
      if (this.#view.showsTaken(key, found) && !doubted.has(found)) {
        doubted.add(found);
        continue;
      }
      return this.#hold(key, found);
    }
  }

  /**
   * Where a lost dynamic claim goes next: the scan continues after the lost value, first in the
   * block the failed write returned (fresh, and free of charge), then through the store.
   */
  async repick(
    lost: PlannedValue,
    block: Block | undefined,
    excluded: ReadonlySet<Offset> | undefined,
  ): Promise<Offset | undefined> {
    const { range } = lost.request;
    const bandEnd = lost.offset >= range.reservedBand ? range.exactSize : range.reservedBand;
    if (block) {
      const claiming = this.#view.claiming(lost.key);
      for (let slot = slotOf(lost.offset) + 1; slot < BLOCK_SIZE; slot++) {
        const offset = offsetAt(block.index, slot);
        if (offset >= bandEnd) break;
        if (!block.holders.has(slot) && !excluded?.has(offset) && !claiming.has(offset)) {
          return this.#hold(lost.key, offset);
        }
      }
    }
    return this.pick(range, lost.key, excluded);
  }

  /** The assignment is over: its picks are no longer being claimed. */
  finish(): void {
    for (const { key, offset } of this.#held) this.#view.settled(key, offset);
  }

  #hold(key: string, offset: Offset): Offset {
    this.#view.hold(key, offset);
    this.#held.push({ key, offset });
    return offset;
  }
}
