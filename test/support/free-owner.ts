import type { ExclusiveAllocator } from '../../shared/allocation/allocator.js';
import type { Claim } from '../../shared/allocation/store.js';

/**
 * What a DELETE and its settle step do together once the object is gone: give back everything
 * `id` holds, then free it. Returns the values freed (none for an unknown owner).
 */
export async function freeOwner(
  allocator: Pick<ExclusiveAllocator, 'giveBack' | 'settle'>,
  id: string,
): Promise<readonly Claim[]> {
  const record = await allocator.giveBack(id);
  const releasing = record?.releasing ?? [];
  if (!record || releasing.length === 0) return [];
  if (!(await allocator.settle(record, { free: releasing }))) throw new Error(`${id} changed`);
  return releasing;
}
