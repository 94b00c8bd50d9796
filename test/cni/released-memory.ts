import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodRef } from '../../cni/environment.js';
import { HandoutStore } from '../../cni/handout/store.js';
import type { ReleasedSandboxes } from '../../cni/released.js';

/** The node's records of completed DELs, in memory; `keys` shows what is recorded. */
export function releasedInMemory(): ReleasedSandboxes & { readonly keys: Set<string> } {
  const keys = new Set<string>();
  const key = (pod: PodRef) => `${pod.namespace}/${pod.name}/${pod.containerId}`;
  return {
    keys,
    has: async (pod) => keys.has(key(pod)),
    record: async (pod) => void keys.add(key(pod)),
    forget: async (pod) => void keys.delete(key(pod)),
  };
}

/**
 * The handout deps of a node whose agent never learned a set (a directory that does not exist):
 * every command goes to berth, the earlier way.
 */
export const earlierWay = {
  handout: () => new HandoutStore(join(tmpdir(), `berth-cni-no-set-${process.pid}`)),
  boot: 'test-boot',
  now: Date.now,
};
