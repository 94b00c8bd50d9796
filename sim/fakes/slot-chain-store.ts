/**
 * `SlotChainStore` in memory: the tests' and the benchmark's store, with the DynamoDB adapter's
 * conditions (a write lands only on the version it read; one chain per node's host port).
 */
import { type SlotChain, type SlotChainStore, slotKey } from '../../shared/fronts/slots/store.js';

const holderKey = (node: string, hostPort: number) => `${node}#${hostPort}`;

/** The in-memory store. */
export class MemorySlotChainStore implements SlotChainStore {
  readonly #chains = new Map<string, SlotChain>();
  /** `<node>#<host port>` → the key of the chain held there. */
  readonly #holders = new Map<string, string>();

  async listChains(): Promise<SlotChain[]> {
    return [...this.#chains.values()];
  }

  async chainAt(node: string, hostPort: number): Promise<SlotChain | undefined> {
    const key = this.#holders.get(holderKey(node, hostPort));
    return key === undefined ? undefined : this.#chains.get(key);
  }

  async write(previous: SlotChain | undefined, next: SlotChain): Promise<boolean> {
    const key = slotKey(next.slot);
    if (previous !== undefined && slotKey(previous.slot) !== key) return false;
    const stored = this.#chains.get(key);
    if ((stored?.version ?? 0) !== (previous?.version ?? 0)) return false;
    if (next.version !== (previous?.version ?? 0) + 1) return false;
    const was = stored?.holder && holderKey(stored.holder.node, stored.holder.hostPort);
    const will = next.holder && holderKey(next.holder.node, next.holder.hostPort);
    if (will !== undefined && will !== was) {
      const other = this.#holders.get(will);
      if (other !== undefined && other !== key) return false;
    }
    if (was !== undefined && was !== will) this.#holders.delete(was);
    if (will !== undefined) this.#holders.set(will, key);
    this.#chains.set(key, next);
    return true;
  }
}
