/**
 * What live objects carry, read the way the kube-apiserver's repair controllers read it. Pure.
 * - Cluster IPs: every entry of `spec.clusterIPs` (or `spec.clusterIP` on objects written before
 *   dual stack) of a Service whose IP is set (not empty, not `None`).
 * - Node ports: `collectServiceNodePorts`: a nodePort listed again with the same protocol is
 *   listed twice (a duplicate), with another protocol once (TCP and UDP may share a node port);
 *   `healthCheckNodePort` is appended unless it equals a node port seen only with non-TCP
 *   protocols, so one equal to a TCP node port is a duplicate.
 */
import type { V1Service } from '@kubernetes/client-node';
import { rangeKey } from '../allocation/allocator.js';
import { parseIp } from '../net/ip.js';
import type { Offset } from '../net/offset.js';
import type { ValueRange } from '../net/value-range.js';
import type { ServiceRanges } from '../services/plan.js';
import { storedAllocationId } from '../vocabulary/allocation-id.js';
import { clusterIpNotValid, type Finding, type ObjectRef, outOfRange } from './findings.js';

/** One value a live object carries, inside a configured range. */
export interface LiveValue {
  readonly range: ValueRange;
  readonly offset: Offset;
  /** The allocator's slot name (`clusterIP/IPv4`, `nodePort/<port name>`, `healthCheckNodePort`). */
  readonly slot: string;
}

/** A live object that may own values, and what it carries. */
export interface LiveOwner {
  /** Its allocation id. */
  readonly id: string;
  /** False when the object has neither an allocation id nor a uid: nothing can be recorded for it. */
  readonly recordable: boolean;
  readonly object: ObjectRef;
  /**
   * `deletionTimestamp` set (a finalizer holds it): its DELETE was admitted and gave back what it
   * held, so it gets nothing recorded and is nobody's duplicate; what it still holds is spared
   * until the settle step sees it gone.
   */
  readonly terminating: boolean;
  /** In the order read; a value listed twice is a duplicate of itself. */
  readonly values: readonly LiveValue[];
}

/** A Service read for repair: what it carries, and what it carries that no range can hold. */
export interface ServiceReading {
  readonly owner: LiveOwner;
  readonly problems: readonly Finding[];
}

/** The key of one value in one range, shared by the snapshot, the diff and the ledger. */
export function valueKey(range: ValueRange, offset: Offset): string {
  return `${rangeKey(range)}#${offset}`;
}

/** What one Service carries, with its out-of-range and invalid values reported. */
export function readService(service: V1Service, ranges: ServiceRanges): ServiceReading {
  const metadata = service.metadata ?? {};
  const object: ObjectRef = {
    kind: 'Service',
    namespace: metadata.namespace ?? 'default',
    name: metadata.name ?? '',
    ...(metadata.uid ? { uid: metadata.uid } : {}),
  };
  const id = storedAllocationId(metadata);
  const values: LiveValue[] = [];
  const problems: Finding[] = [];
  const spec = service.spec ?? {};
  const terminating = metadata.deletionTimestamp != null;

  const single = spec.clusterIP ?? '';
  if (single !== '' && single !== 'None') {
    const ips = spec.clusterIPs && spec.clusterIPs.length > 0 ? spec.clusterIPs : [single];
    for (const ip of ips) {
      const parsed = parseIp(ip);
      if (!parsed) {
        problems.push(clusterIpNotValid(ip, object));
        continue;
      }
      const range =
        ranges.clusterIps.find((r) => r.offsetOf(ip) !== undefined) ??
        ranges.clusterIps.find((r) => r.family === parsed.family);
      if (!range) {
        problems.push(clusterIpNotValid(ip, object, parsed.family));
        continue;
      }
      const offset = range.offsetOf(ip);
      if (offset === undefined) problems.push(outOfRange(range, ip, object));
      else values.push({ range, offset, slot: `clusterIP/${parsed.family}` });
    }
  }

  for (const { port, slot } of collectServiceNodePorts(service)) {
    const offset = ranges.nodePorts.offsetOf(String(port));
    if (offset === undefined) problems.push(outOfRange(ranges.nodePorts, String(port), object));
    else values.push({ range: ranges.nodePorts, offset, slot });
  }
  return {
    owner: {
      id: id ?? `unidentified:${object.namespace}/${object.name}`,
      recordable: id !== undefined,
      object,
      terminating,
      values,
    },
    // A Service on its way out is not worth an Event.
    problems: terminating ? [] : problems,
  };
}

/** The kube-apiserver's `collectServiceNodePorts`, with the slot each first listing gets. */
function collectServiceNodePorts(
  service: V1Service,
): { readonly port: number; readonly slot: string }[] {
  const listed: { port: number; slot: string }[] = [];
  const seen = new Map<number, Set<string>>();
  for (const entry of service.spec?.ports ?? []) {
    const port = entry.nodePort ?? 0;
    if (port === 0) continue;
    const protocol = entry.protocol ?? 'TCP';
    const protocols = seen.get(port);
    if (!protocols) {
      seen.set(port, new Set([protocol]));
      listed.push({ port, slot: `nodePort/${entry.name ?? ''}` });
    } else if (protocols.has(protocol)) {
      listed.push({ port, slot: `nodePort/${entry.name ?? ''}` });
    } else {
      protocols.add(protocol);
    }
  }
  const health = service.spec?.healthCheckNodePort ?? 0;
  if (health !== 0) {
    const protocols = seen.get(health);
    if (!protocols || protocols.has('TCP'))
      listed.push({ port: health, slot: 'healthCheckNodePort' });
  }
  return listed;
}
