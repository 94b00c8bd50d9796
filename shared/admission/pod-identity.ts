/**
 * Whether a stored pod is the one a host port record was written for. Everything on a pod but
 * its name can be copied: a pod made from another's manifest outside berth's CREATE (no
 * `berth.dev/ports` at CREATE, added by an UPDATE, which pods have no webhook for) carries the
 * other's allocation id, host ports and labels. So every step that acts for an allocation (the
 * binding, the DELETE) asks berth's own record first:
 * - a record named at CREATE is the pod of that namespace and name: no other stored pod can have
 *   it while that one lives (a namesake made after it went holds the allocation alone);
 * - a record written before the apiserver named the pod (generateName) is the pod made from its
 *   generateName that carries every recorded port, and only while it is the one stored pod that
 *   carries the id: with two, berth cannot tell the original from a copy and acts for neither
 *   (the allocation leaks until both are gone, which the repair pass frees; a value held by two
 *   live pods would be worse). The first such binding writes the pod's name into the record, so
 *   from then on the simple rule holds.
 */

import type { PodNameStore, PodPortRecord } from '../hostports/store.js';
import type { AllocationCarriers } from '../k8s/allocation-carriers.js';
import { objectAt, stringAt } from '../vocabulary/opaque.js';
import { isGeneratedName, namedFrom, type Owner } from '../vocabulary/owner.js';

type PodObject = Readonly<Record<string, unknown>>;

const isObject = (value: unknown): value is PodObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const listAt = (object: PodObject | undefined, key: string): readonly unknown[] => {
  const value = object?.[key];
  return Array.isArray(value) ? value : [];
};

/** The stored pod as an owner: its namespace, name and generateName. */
function storedPodOwner(pod: PodObject): Owner {
  return {
    kind: 'Pod',
    namespace: stringAt(pod, 'metadata', 'namespace') || 'default',
    name: stringAt(pod, 'metadata', 'name') ?? '',
    generateName: stringAt(pod, 'metadata', 'generateName') ?? '',
  };
}

/** Every host port the pod's containers carry. A pod's ports never change once it is created. */
function carriedHostPorts(pod: PodObject): Set<number> {
  const spec = objectAt(pod, 'spec');
  const ports = new Set<number>();
  for (const container of [...listAt(spec, 'containers'), ...listAt(spec, 'initContainers')]) {
    for (const entry of listAt(isObject(container) ? container : undefined, 'ports')) {
      if (isObject(entry) && typeof entry.hostPort === 'number') ports.add(entry.hostPort);
    }
  }
  return ports;
}

/**
 * Whether `pod` (stored, named) could be the one the apiserver named for a record written
 * without a name: its name made from the recorded generateName (which the pod keeps), and every
 * recorded port among its own. A copy made from it passes too: that is the carriers' question.
 */
export function podNamedFrom(record: PodPortRecord, pod: Owner, object: PodObject): boolean {
  return namedFrom(record.pod, pod, () => {
    const generateName = pod.generateName ?? '';
    if ((record.pod.generateName ?? '') !== generateName) return false;
    const carried = carriedHostPorts(object);
    return (
      isGeneratedName(pod.name, generateName) &&
      record.ports.every((held) => carried.has(held.port))
    );
  });
}

/**
 * Whether the stored pod `object` is the one `record` was written for. `carriers` are the
 * cluster's stored pods that carry an id; without a cluster nothing can be read, so an unnamed
 * record is taken for the pod made from its generateName that carries its ports. With `learnInto`,
 * an unnamed record learns the pod's name there (answering false if another pod's binding taught
 * it first). Throws when the cluster could not be listed.
 */
export async function isRecordsPod(
  carriers: AllocationCarriers | undefined,
  record: PodPortRecord,
  object: PodObject,
  learnInto?: PodNameStore,
): Promise<boolean> {
  const pod = storedPodOwner(object);
  if (record.pod.namespace !== pod.namespace) return false;
  if (record.pod.name !== '') return record.pod.name === pod.name;
  if (!podNamedFrom(record, pod, object)) return false;
  if (carriers !== undefined) {
    // A list that fails is thrown: berth cannot tell, which is not "another pod's".
    const found = await carriers.carrying('Pod', pod.namespace, record.id);
    const uid = stringAt(object, 'metadata', 'uid') ?? '';
    if (found.length !== 1 || found[0]?.uid !== uid) return false;
  }
  if (learnInto === undefined || (await learnInto.learnName(record.id, pod))) return true;
  // Refused: learned already, by this pod's earlier binding or by another pod's.
  return (await learnInto.getRecord(record.id))?.pod.name === pod.name;
}
