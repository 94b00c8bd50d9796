/**
 * What one process knows of the blocks of exclusive values: every block a scan returned, or a
 * claim answered (its block as the write left it, or as it found it when refused). A dynamic
 * pick tries this view first, as the kube-apiserver's allocator picks from its informer's cache,
 * so a warm process sends a claim with no read before it; only when the blocks it knows have no
 * free value in the upper band does the pick scan the store, which teaches the view more blocks.
 *
 * The view is never trusted for exclusivity: a claim is a conditional write on the one value, so
 * a value the view shows free but another owner took costs a refused claim (whose answer
 * refreshes the block), never a second owner. A value freed elsewhere that the view still shows
 * taken is merely skipped. Blocks the view has never seen are left to the store scan, and values
 * this process is claiming right now are skipped by its other picks, so its concurrent requests
 * do not race each other for one value; nor does a scan's answer, older than a claim of this
 * process answered meanwhile, send it at that claim's value (`showsTaken`).
 */
import { BLOCK_SIZE, blockIndexOf, type Offset, offsetAt, slotOf } from '../net/offset.js';
import type { ValueRange } from '../net/value-range.js';
import type { BlockReader } from './scan.js';
import type { Block } from './store.js';

/**
 * Blocks remembered per range, the least recently learned forgotten first: a /16 fits whole
 * (2,048 blocks); a /12 (32,768 blocks of up to 32 ids) would otherwise grow a long-lived
 * container by about 100 MB. A forgotten block is simply unknown again.
 */
export const MAX_BLOCKS_PER_RANGE = 4_096;

/** Random blocks a pick tries before it walks every block with room. */
const RANDOM_PROBES = 8;

/** A block as the view holds it: the stamp of the request whose answer showed it, and when that answer came. */
interface KnownBlock {
  readonly block: Block;
  readonly stamp: number;
  /** How many requests had been sent when the answer arrived (`BlockView.stamp` then). */
  readonly receivedAt: number;
}

/**
 * One range's blocks as last seen, each with the stamp of the answer that showed it, the least
 * recently learned first; the blocks with a free slot are also kept in a list for random picks.
 */
class KnownBlocks {
  readonly #entries = new Map<Offset, KnownBlock>();
  /** Indexes of blocks with a free slot, in no order, and where each sits in that list. */
  readonly #open: Offset[] = [];
  readonly #openAt = new Map<Offset, number>();

  get(index: Offset): KnownBlock | undefined {
    return this.#entries.get(index);
  }

  /** Takes a newer answer; forgets the least recently learned block past the limit. */
  learn(entry: KnownBlock): void {
    const { block } = entry;
    // Re-inserted, so the map's order is the order blocks were learned in.
    this.#entries.delete(block.index);
    this.#entries.set(block.index, entry);
    this.#index(block);
    if (this.#entries.size > MAX_BLOCKS_PER_RANGE) {
      const [oldest] = this.#entries.keys();
      if (oldest !== undefined) {
        this.#entries.delete(oldest);
        this.#close(oldest);
      }
    }
  }

  /** Replaces a block's contents, keeping the stamp and place it has. */
  correct(block: Block): void {
    const current = this.#entries.get(block.index);
    if (!current) return;
    this.#entries.set(block.index, { ...current, block });
    this.#index(block);
  }

  /** A random block with a free slot, or undefined when none is known. */
  randomOpen(random: () => number): Block | undefined {
    const index = this.#open[Math.floor(random() * this.#open.length)];
    return index === undefined ? undefined : this.#entries.get(index)?.block;
  }

  /** Every block with a free slot, as a list the caller may reorder. */
  openBlocks(): Block[] {
    return this.#open.flatMap((index) => {
      const entry = this.#entries.get(index);
      return entry ? [entry.block] : [];
    });
  }

  #index(block: Block): void {
    if (block.holders.size < BLOCK_SIZE) {
      if (!this.#openAt.has(block.index)) {
        this.#openAt.set(block.index, this.#open.length);
        this.#open.push(block.index);
      }
    } else {
      this.#close(block.index);
    }
  }

  #close(index: Offset): void {
    const at = this.#openAt.get(index);
    if (at === undefined) return;
    const last = this.#open.pop() as Offset;
    if (last !== index) {
      this.#open[at] = last;
      this.#openAt.set(last, at);
    }
    this.#openAt.delete(index);
  }
}

/** `block` with every value `other` shows held added (the holder `block` names wins). */
function withHoldersOf(block: Block, other: Block): Block {
  const holders = new Map(other.holders);
  for (const [slot, holder] of block.holders) holders.set(slot, holder);
  return { index: block.index, holders };
}

/** The process's view of the blocks of every range it allocates from. */
export class BlockView {
  /** Range store key → its blocks as last seen. */
  readonly #blocks = new Map<string, KnownBlocks>();
  /** Stamps requests in the order they are sent. */
  #sent = 0;
  /** Range store key → offsets being claimed by this process now. */
  readonly #claiming = new Map<string, Set<Offset>>();

  /**
   * A value of the range's upper band that the view shows free and `skip` does not name: a
   * random known block with room, a random free slot in it. Undefined when the view knows none;
   * the reserved band is never answered here, since only the store can tell the upper one full.
   */
  pick(
    range: ValueRange,
    key: string,
    random: () => number,
    skip: ReadonlySet<Offset>,
  ): Offset | undefined {
    const known = this.#blocks.get(key);
    if (!known) return undefined;
    const eligible = (block: Block) => {
      const start = Math.floor(random() * BLOCK_SIZE);
      for (let step = 0; step < BLOCK_SIZE; step++) {
        const slot = (start + step) % BLOCK_SIZE;
        const offset = offsetAt(block.index, slot);
        if (offset < range.reservedBand || offset >= range.exactSize) continue;
        if (!block.holders.has(slot) && !skip.has(offset)) return offset;
      }
      return undefined;
    };
    // A few random blocks with room first: a pick costs the same whatever the range's size.
    // Blocks this process is writing to right now are passed over here: concurrent claims of one
    // process then land on different items instead of queueing on one.
    const busy = new Set([...skip].map(blockIndexOf));
    for (let probe = 0; probe < RANDOM_PROBES; probe++) {
      const block = known.randomOpen(random);
      if (!block) return undefined;
      if (busy.has(block.index)) continue;
      const offset = eligible(block);
      if (offset !== undefined) return offset;
    }
    // Those were all in the reserved band or skipped: every block with room, in random order.
    const open = known.openBlocks();
    while (open.length > 0) {
      const at = Math.floor(random() * open.length);
      const block = open[at] as Block;
      open[at] = open[open.length - 1] as Block;
      open.pop();
      const offset = eligible(block);
      if (offset !== undefined) return offset;
    }
    return undefined;
  }

  /**
   * A stamp for a request about to be sent. Answers arrive in any order; a block is only ever
   * replaced by the answer of a request sent after the one that set it, so a slow answer never
   * takes the view back to an older state.
   */
  stamp(): number {
    return ++this.#sent;
  }

  /** Wraps a store reader so that every block it yields is remembered. */
  learning(range: string, read: BlockReader): BlockReader {
    const stamp = this.stamp();
    const learn = (block: Block) => this.apply(range, block, stamp);
    return async function* (from: Offset, to: Offset) {
      for await (const block of read(from, to)) {
        learn(block);
        yield block;
      }
    };
  }

  /**
   * Takes a block as the request stamped `stamp` (a scan, a claim) saw it. An older answer than
   * the one the view holds changes nothing, except that a value `taken` by that very request
   * shows taken: the newer answer may predate the claim's landing.
   *
   * Send order is not the order DynamoDB applies writes in: of two claims in flight together,
   * the one sent later may be applied first, and its answer then misses the other's value. So a
   * newer answer replaces the block whole only when the view's current one arrived before the
   * newer request was sent (the store then answered it from a later state); otherwise both were
   * in flight together, and a value either shows taken stays taken. Without this a process
   * could forget a value it had just claimed itself (once that claim's hold is settled) and send
   * a later claim at it: a lost race, billed like a write.
   */
  apply(
    range: string,
    block: Block,
    stamp: number,
    taken?: { readonly offset: Offset; readonly holder: string },
  ): void {
    const known = this.#blocks.get(range) ?? new KnownBlocks();
    this.#blocks.set(range, known);
    const current = known.get(block.index);
    const receivedAt = this.#sent;
    if (stamp > (current?.stamp ?? 0)) {
      const together = current !== undefined && current.receivedAt >= stamp;
      known.learn({
        block: together ? withHoldersOf(block, current.block) : block,
        stamp,
        receivedAt,
      });
      return;
    }
    const slot = taken ? slotOf(taken.offset) : undefined;
    if (current && taken && slot !== undefined && !current.block.holders.has(slot)) {
      const holders = new Map(current.block.holders).set(slot, taken.holder);
      known.correct({ index: block.index, holders });
    }
  }

  /** Whether the newest answer the view holds shows the offset taken. */
  showsTaken(range: string, offset: Offset): boolean {
    const known = this.#blocks.get(range)?.get(blockIndexOf(offset));
    return known?.block.holders.has(slotOf(offset)) === true;
  }

  /** Offsets of `range` this process is claiming now: its other picks skip them. */
  claiming(range: string): ReadonlySet<Offset> {
    return this.#claiming.get(range) ?? new Set();
  }

  /** Marks an offset as being claimed, until `settled`. */
  hold(range: string, offset: Offset): void {
    const set = this.#claiming.get(range) ?? new Set<Offset>();
    set.add(offset);
    this.#claiming.set(range, set);
  }

  /** The claim of an offset was answered. */
  settled(range: string, offset: Offset): void {
    this.#claiming.get(range)?.delete(offset);
  }
}
