import type { PodRef } from '../../cni/environment.js';
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
