/**
 * What this node's plugin has already released: one empty file per sandbox whose DEL gave its
 * address back (or found none held), under a tmpfs directory.
 *
 * Why: libcni drops a sandbox's cached result once a DEL succeeds, and kubelet tears the sandbox
 * down again when it stops or garbage-collects it (kubernetes pkg/kubelet/kuberuntime/
 * kuberuntime_gc.go; containerd's RemovePodSandbox), so every pod's first DEL is followed by
 * DELs with no address to go on. Without this record each of them would ask berth whose address
 * the sandbox holds: a Lambda invocation and a read per pod, for an answer the node already
 * knows. The record only ever saves that question: a DEL it does not cover asks berth as before,
 * so a record lost (a reboot empties tmpfs) or never written costs one look-up, never an address.
 *
 * Records are best effort both ways: failing to write one, or to read the directory, leaves the
 * DEL asking berth. An ADD of the same sandbox removes its record. Records older than
 * `RECORD_TTL_MS` are pruned when a new one is written, so the directory stays small.
 */
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PodRef } from './environment.js';

/** How long a record answers: kubelet's repeated teardowns come within minutes of the first. */
export const RECORD_TTL_MS = 60 * 60_000;

/** The sandboxes whose DEL this node's plugin has completed. */
export interface ReleasedSandboxes {
  /** Whether a DEL of this sandbox has already completed here (within the record's life). */
  has(pod: PodRef): Promise<boolean>;
  /** Records that a DEL of this sandbox completed. */
  record(pod: PodRef): Promise<void>;
  /** Forgets the sandbox: an ADD is setting it up (again). */
  forget(pod: PodRef): Promise<void>;
}

/**
 * A file name for the sandbox: the hash of its namespace, name and container id, as berth keys an
 * assignment (any bytes in them stay out of the path).
 */
function fileOf(pod: PodRef): string {
  // Loaded when a DEL needs it: node:crypto costs a start that needs none of it a few ms.
  const { createHash } = process.getBuiltinModule('node:crypto');
  return createHash('sha256')
    .update(`${pod.namespace}\0${pod.name}\0${pod.containerId}`)
    .digest('hex')
    .slice(0, 40);
}

/** The records as files under `directory`, judged by `now`. */
export function releasedSandboxes(
  directory: string,
  now: () => number = Date.now,
): ReleasedSandboxes {
  const pathOf = (pod: PodRef) => join(directory, fileOf(pod));
  // Synchronous file calls, as the handout store's: the plugin does one thing at a time.
  const fresh = (path: string) => {
    try {
      return now() - statSync(path).mtimeMs < RECORD_TTL_MS;
    } catch {
      return undefined;
    }
  };
  const prune = () => {
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      if (fresh(path) === false) rmSync(path, { force: true });
    }
  };
  return {
    has: async (pod) => fresh(pathOf(pod)) === true,
    record: async (pod) => {
      try {
        mkdirSync(directory, { recursive: true, mode: 0o700 });
        writeFileSync(pathOf(pod), '');
        prune();
      } catch {
        // Best effort: without the record, a repeated DEL asks berth.
      }
    },
    forget: async (pod) => {
      try {
        rmSync(pathOf(pod), { force: true });
      } catch {
        // Best effort, as a record is: a stale one only costs the look-up it saves.
      }
    },
  };
}
