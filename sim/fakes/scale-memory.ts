/** A scale pass memory kept in the test's process. */
import {
  EMPTY_SCALE_MEMORY,
  type ScaleMemory,
  type ScaleMemoryStore,
} from '../../shared/scale/store.js';

/** A memory kept in this process, for tests of one scale pass after another. */
export class InProcessScaleMemory implements ScaleMemoryStore {
  memory: ScaleMemory = EMPTY_SCALE_MEMORY;

  async load(): Promise<ScaleMemory> {
    return this.memory;
  }

  async save(memory: ScaleMemory): Promise<void> {
    this.memory = memory;
  }
}
