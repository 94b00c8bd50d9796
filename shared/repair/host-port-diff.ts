/**
 * The repair policy for game-server host ports. Pure: the pass reads and writes.
 *
 * Host ports are not exclusive: what is stored is one owner record per
 * allocation id (the pod's `berth.dev/allocation-id`) and a use count per port. So:
 * - a record whose pod is gone (deleted, or in phase Succeeded/Failed) is a leak suspect, released
 *   (the record, then its uses) on the grace-th consecutive pass that finds it; a record written
 *   less than the commit window (`COMMIT_WINDOW_MS`) before the listing began is no suspect at
 *   all, since its pod may be on its way to etcd;
 * - a live pod carrying an allocation id with no record, and container host ports inside a berth
 *   range, gets a record of those ports (HostPortNotAllocated), its uses added;
 * - a use count that differs from what the records hold is drift: corrected once the same
 *   difference is seen on the grace-th consecutive pass. Counts are read before and after the
 *   records; a port whose count moved in between is busy and left for a later pass, and the
 *   correction is conditional on the count it read, so a racing allocation is never overwritten.
 * A pod being deleted (`deletionTimestamp` set) still protects its record, but gets none: its
 * DELETE already released it.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { HostPortRange, PortProtocol } from '../hostports/model.js';
import type { HeldPort, PodPortRecord, RangeCounts } from '../hostports/store.js';
import type { ValueRange } from '../net/value-range.js';
import { isAllocationId } from '../vocabulary/allocation-id.js';
import { COMMIT_WINDOW_MS } from '../vocabulary/commit-window.js';
import { ALLOCATION_ID_ANNOTATION } from '../vocabulary/labels.js';
import type { Owner } from '../vocabulary/owner.js';
import { type Finding, leaked, notAllocated, type ObjectRef, REPAIR_REASONS } from './findings.js';
import { countSighting, type LeakCounter } from './ledger.js';

/** Ledger key prefix of host port suspects (leaked records and count drift). */
export const HOST_PORT_LEAK_PREFIX = 'hostport#';

/** Pod phases after which a pod holds nothing. */
const TERMINAL_PHASES: ReadonlySet<string> = new Set(['Succeeded', 'Failed']);

/** The store-side shape of a configured host port range. */
export function toHostPortRange(range: ValueRange): HostPortRange {
  return { name: range.name, first: Number(range.valueAt(0)), size: range.size };
}

/** A pod carrying an allocation id, as repair needs it. */
export interface PodReading {
  readonly id: string;
  readonly object: ObjectRef;
  readonly pod: Owner;
  /** Not in phase Succeeded or Failed. */
  readonly running: boolean;
  /** `deletionTimestamp` set: its DELETE was admitted. */
  readonly terminating: boolean;
  /** Container host ports inside a berth range, as the webhook records them. */
  readonly ports: readonly HeldPort[];
}

/** Reads a pod; undefined for pods berth never allocated for (no allocation id). */
export function readPod(pod: V1Pod, ranges: readonly ValueRange[]): PodReading | undefined {
  const metadata = pod.metadata ?? {};
  const id = metadata.annotations?.[ALLOCATION_ID_ANNOTATION];
  if (!isAllocationId(id)) return undefined;
  const namespace = metadata.namespace ?? 'default';
  const name = metadata.name ?? '';
  return {
    id,
    object: { kind: 'Pod', namespace, name, ...(metadata.uid ? { uid: metadata.uid } : {}) },
    pod: { kind: 'Pod', namespace, name, generateName: metadata.generateName ?? '' },
    running: !TERMINAL_PHASES.has(pod.status?.phase ?? ''),
    terminating: metadata.deletionTimestamp != null,
    ports: carriedHostPorts(
      [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])],
      ranges,
    ),
  };
}

/** A pod berth never admitted that holds host ports inside a berth range. */
export interface ForeignReading {
  /** `<namespace>/<name>`, for messages. */
  readonly pod: string;
  readonly ports: readonly {
    readonly range: string;
    readonly port: number;
    readonly protocol: string;
  }[];
}

/**
 * Reads a pod berth never admitted (no allocation id): the host ports it holds inside a berth
 * range, or undefined when it holds none there or has finished. A `hostNetwork` pod's container
 * ports are host ports whether or not `hostPort` says so.
 */
export function readForeignPod(
  pod: V1Pod,
  ranges: readonly ValueRange[],
): ForeignReading | undefined {
  const metadata = pod.metadata ?? {};
  if (isAllocationId(metadata.annotations?.[ALLOCATION_ID_ANNOTATION])) return undefined;
  if (TERMINAL_PHASES.has(pod.status?.phase ?? '')) return undefined;
  const hostNetwork = pod.spec?.hostNetwork === true;
  const ports = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].flatMap(
    (container) =>
      (container.ports ?? []).flatMap((entry) => {
        const port = entry.hostPort || (hostNetwork ? entry.containerPort : 0);
        const range = ranges.find((r) => r.offsetOf(String(port)) !== undefined);
        return port && range
          ? [{ range: range.name, port, protocol: entry.protocol ?? 'TCP' }]
          : [];
      }),
  );
  if (ports.length === 0) return undefined;
  return { pod: `${metadata.namespace ?? 'default'}/${metadata.name ?? ''}`, ports };
}

/**
 * The held ports a pod's containers show, in the webhook's naming: a TCPUDP port is two entries
 * `<name>-tcp`/TCP and `<name>-udp`/UDP sharing one host port, recorded once as `<name>`.
 */
export function carriedHostPorts(
  containers: readonly V1Container[],
  ranges: readonly ValueRange[],
): HeldPort[] {
  const held: HeldPort[] = [];
  const halves = new Map<string, { range: string; port: number; protocols: Set<string> }>();
  for (const container of containers) {
    for (const entry of container.ports ?? []) {
      const port = entry.hostPort ?? 0;
      if (port === 0) continue;
      const range = ranges.find((r) => r.offsetOf(String(port)) !== undefined);
      if (!range) continue;
      const protocol = entry.protocol ?? 'TCP';
      // An unnamed entry is a block's port after its first: a TCPUDP block's TCP and UDP
      // entries of one host port pair up below as one use, as the webhook recorded them.
      const name = entry.name ?? `port-${port}-${protocol.toLowerCase()}`;
      const suffix = `-${protocol.toLowerCase()}`;
      if ((protocol === 'TCP' || protocol === 'UDP') && name.endsWith(suffix)) {
        const base = name.slice(0, -suffix.length);
        const key = `${base}/${port}`;
        const half = halves.get(key) ?? { range: range.name, port, protocols: new Set<string>() };
        half.protocols.add(protocol);
        halves.set(key, half);
        continue;
      }
      held.push({ name, range: range.name, port, protocol: protocolOf(protocol) });
    }
  }
  for (const [key, half] of halves) {
    const base = key.slice(0, key.lastIndexOf('/'));
    if (half.protocols.size === 2) {
      held.push({ name: base, range: half.range, port: half.port, protocol: 'TCPUDP' });
    } else {
      for (const protocol of half.protocols) {
        held.push({
          name: `${base}-${protocol.toLowerCase()}`,
          range: half.range,
          port: half.port,
          protocol: protocolOf(protocol),
        });
      }
    }
  }
  return held;
}

function protocolOf(text: string): PortProtocol {
  return text === 'TCP' ? 'TCP' : 'UDP';
}

/** The host port store as the pass read it: counts before and after the records. */
export interface HostPortSnapshot {
  readonly ranges: readonly ValueRange[];
  readonly records: readonly PodPortRecord[];
  /** Per configured range, in `ranges` order. */
  readonly countsBefore: readonly RangeCounts[];
  readonly countsAfter: readonly RangeCounts[];
}

/** Release a leaked record (and its uses). */
export interface RecordRelease {
  readonly id: string;
  /** The pod the record names. */
  readonly pod: Owner;
  /** One HostPortLeaked finding per port, counted once the release committed. */
  readonly leaks: readonly Finding[];
}

/** Set one use count from `from` to `to`, conditional on it still being `from`. */
export interface CountCorrection {
  readonly range: HostPortRange;
  readonly port: number;
  readonly from: number;
  readonly to: number;
  readonly finding: Finding;
}

/** Everything one pass decided about host ports. */
export interface HostPortPlan {
  readonly findings: readonly Finding[];
  readonly records: readonly PodPortRecord[];
  readonly releases: readonly RecordRelease[];
  readonly corrections: readonly CountCorrection[];
  /** Ports to mark as held by pods berth never admitted (`held`), or to clear. */
  readonly foreignMarks: readonly {
    readonly range: string;
    readonly port: number;
    readonly held: boolean;
  }[];
  readonly counters: readonly LeakCounter[];
}

/** What the policy decides from. */
export interface HostPortDiffInput {
  readonly snapshot: HostPortSnapshot;
  readonly pods: readonly PodReading[];
  readonly counters: ReadonlyMap<string, LeakCounter>;
  readonly grace: number;
  /** Epoch ms: new counters and new records are stamped with it. */
  readonly now: number;
  /**
   * Epoch ms just before the first object was listed: a record written less than the commit
   * window before it may be a pod's the apiserver stored after the listing.
   */
  readonly listedAt: number;
  /** Pods berth never admitted that hold host ports inside its ranges. */
  readonly foreign?: readonly ForeignReading[];
}

/** Decides one pass over host ports. */
export function diffHostPorts(input: HostPortDiffInput): HostPortPlan {
  const { snapshot, pods, counters, grace, now } = input;
  const rangeByName = new Map(snapshot.ranges.map((r) => [r.name, r]));
  const owners = new Map<string, PodReading>();
  for (const pod of pods) {
    if (pod.running && !owners.has(`${pod.pod.namespace}/${pod.id}`)) {
      owners.set(`${pod.pod.namespace}/${pod.id}`, pod);
    }
  }
  const recorded = new Set(snapshot.records.map((r) => r.id));
  const kept: LeakCounter[] = [];
  const findings: Finding[] = [];
  const releases: RecordRelease[] = [];
  /** What this pass's own writes do to each count, so a correction conditions on the right value. */
  const ownDelta = new Map<string, number>();
  const shift = (ports: readonly HeldPort[], by: number) => {
    for (const p of ports)
      ownDelta.set(`${p.range}/${p.port}`, (ownDelta.get(`${p.range}/${p.port}`) ?? 0) + by);
  };

  for (const record of snapshot.records) {
    if (owners.has(`${record.pod.namespace}/${record.id}`)) continue;
    if (record.createdAt > input.listedAt - COMMIT_WINDOW_MS) continue;
    const key = `${HOST_PORT_LEAK_PREFIX}pod#${record.id}`;
    const verdict = countSighting(counters.get(key), key, `t${record.createdAt}`, grace, now);
    if (!verdict.free) {
      kept.push(verdict.counter);
      continue;
    }
    const pod = record.pod.name || `${record.pod.generateName}…`;
    releases.push({
      id: record.id,
      pod: record.pod,
      leaks: record.ports.flatMap((p) => {
        const range = rangeByName.get(p.range);
        return range
          ? [leaked(range, `${p.port}/${p.protocol}`, `pod ${record.pod.namespace}/${pod}`)]
          : [];
      }),
    });
    shift(record.ports, -1);
  }

  const records: PodPortRecord[] = [];
  for (const owner of owners.values()) {
    if (recorded.has(owner.id) || owner.terminating || owner.ports.length === 0) continue;
    // It takes nothing from its namespace's quota: the count holds what records took.
    records.push({
      id: owner.id,
      pod: owner.pod,
      ports: owner.ports,
      createdAt: now,
      quotaUnits: 0,
    });
    shift(owner.ports, 1);
    for (const p of owner.ports) {
      const range = rangeByName.get(p.range);
      if (range) findings.push(notAllocated(range, `${p.port}/${p.protocol}`, owner.object));
    }
  }

  // Drift: counts against the records, only on ports whose count held still while listing.
  const expected = new Map<string, number>();
  for (const record of snapshot.records) {
    for (const p of record.ports)
      expected.set(`${p.range}/${p.port}`, (expected.get(`${p.range}/${p.port}`) ?? 0) + 1);
  }
  const corrections: CountCorrection[] = [];
  snapshot.countsAfter.forEach((after, i) => {
    const before = snapshot.countsBefore[i];
    const { range } = after;
    after.counts.forEach((count, offset) => {
      const port = range.first + offset;
      const want = expected.get(`${range.name}/${port}`) ?? 0;
      if (count === want || before?.counts[offset] !== count) return;
      const key = `${HOST_PORT_LEAK_PREFIX}count#${range.name}#${port}`;
      const verdict = countSighting(counters.get(key), key, `${count - want}`, grace, now);
      if (!verdict.free) {
        kept.push(verdict.counter);
        return;
      }
      const delta = ownDelta.get(`${range.name}/${port}`) ?? 0;
      corrections.push({
        range,
        port,
        from: count + delta,
        to: want + delta,
        finding: {
          reason: REPAIR_REASONS.hostPortCountDrift,
          message: `host port ${port} of range ${range.name} counted ${count} uses but the records hold ${want}: corrected`,
        },
      });
    });
  });

  const foreign = diffForeign(snapshot, input.foreign ?? [], counters, grace, now);
  kept.push(...foreign.counters);
  findings.push(...foreign.findings);
  return {
    findings,
    records,
    releases,
    corrections,
    foreignMarks: foreign.marks,
    counters: kept,
  };
}

/**
 * Ports held by pods berth never admitted: marked at once, so no allocation hands them out, and
 * each reported on every pass while held (with how many berth pods hold it too, whose nodes the
 * scheduler then cannot share with the other holder); a mark whose holder is gone is cleared on
 * the grace-th consecutive pass that finds it so (a DaemonSet pod being replaced keeps it).
 */
function diffForeign(
  snapshot: HostPortSnapshot,
  pods: readonly ForeignReading[],
  counters: ReadonlyMap<string, LeakCounter>,
  grace: number,
  now: number,
): Pick<HostPortPlan, 'findings' | 'counters'> & { marks: HostPortPlan['foreignMarks'] } {
  const holders = new Map<string, { range: string; port: number; who: string[] }>();
  for (const pod of pods) {
    for (const p of pod.ports) {
      const key = `${p.range}/${p.port}`;
      const held = holders.get(key) ?? { range: p.range, port: p.port, who: [] };
      held.who.push(`${p.protocol} by pod ${pod.pod}`);
      holders.set(key, held);
    }
  }
  const marks: { range: string; port: number; held: boolean }[] = [];
  const findings: Finding[] = [];
  const kept: LeakCounter[] = [];
  for (const counts of snapshot.countsAfter) {
    const { range } = counts;
    const marked = new Set([...(counts.foreign ?? [])].map((offset) => range.first + offset));
    for (const held of holders.values()) {
      if (held.range !== range.name) continue;
      if (!marked.has(held.port)) marks.push({ range: range.name, port: held.port, held: true });
      const uses = counts.counts[held.port - range.first] ?? 0;
      findings.push({
        reason: REPAIR_REASONS.hostPortHeldOutside,
        message: `host port ${held.port} of range ${range.name} is held (${held.who.join(', ')}) by a pod berth did not admit, and by ${uses} berth pod${uses === 1 ? '' : 's'}: berth no longer hands it out`,
      });
    }
    for (const port of marked) {
      if (holders.has(`${range.name}/${port}`)) continue;
      const key = `${HOST_PORT_LEAK_PREFIX}foreign#${range.name}#${port}`;
      const verdict = countSighting(counters.get(key), key, 'gone', grace, now);
      if (verdict.free) marks.push({ range: range.name, port, held: false });
      else kept.push(verdict.counter);
    }
  }
  return { findings, counters: kept, marks };
}
