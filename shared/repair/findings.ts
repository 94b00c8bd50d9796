/**
 * What a repair pass finds, in the kube-apiserver repair controllers' words (reasons and
 * messages), so an operator reading `kubectl get events` sees what they already know.
 */
import type { ValueRange } from '../net/value-range.js';

/** Event and summary reasons. The `*Leaked` and berth-only ones appear in the summary only. */
export const REPAIR_REASONS = {
  clusterIpNotAllocated: 'ClusterIPNotAllocated',
  clusterIpAlreadyAllocated: 'ClusterIPAlreadyAllocated',
  clusterIpOutOfRange: 'ClusterIPOutOfRange',
  clusterIpNotValid: 'ClusterIPNotValid',
  clusterIpLeaked: 'ClusterIPLeaked',
  portNotAllocated: 'PortNotAllocated',
  portAlreadyAllocated: 'PortAlreadyAllocated',
  portOutOfRange: 'PortOutOfRange',
  portLeaked: 'PortLeaked',
  hostPortNotAllocated: 'HostPortNotAllocated',
  hostPortLeaked: 'HostPortLeaked',
  /** A host port use count that disagrees with the pod records, corrected (berth only). */
  hostPortCountDrift: 'HostPortCountDrift',
  /** An owner record of a Service that no longer exists and holds nothing, deleted (berth only). */
  ownerRecordLeaked: 'OwnerRecordLeaked',
  /**
   * A host port in a berth range held by a pod berth never admitted (a DaemonSet's, a hostNetwork
   * pod's): berth no longer hands it out (berth only, summary only).
   */
  hostPortHeldOutside: 'HostPortHeldOutsideBerth',
  /**
   * A configured Service range the cluster has no ready ServiceCIDR for: berth gives no new
   * cluster IP from it (berth only, summary only).
   */
  serviceCidrRefused: 'ServiceCIDRRefused',
  /** A ServiceCIDR being deleted while addresses remain in it, one per holder (summary only). */
  serviceCidrTerminating: 'ServiceCIDRTerminating',
  /** An IPAddress the apiserver keeps for an IP of berth's ranges that berth does not hold. */
  ipAddressNotInBerth: 'IPAddressNotInBerth',
  /** A cluster IP berth holds that the apiserver keeps no IPAddress for. */
  ipAddressMissing: 'IPAddressMissing',
} as const;

/** One of `REPAIR_REASONS`. */
export type RepairReason = (typeof REPAIR_REASONS)[keyof typeof REPAIR_REASONS];

/** `component` of the Events the pass records. */
export const REPAIR_EVENT_COMPONENT = 'berth-repair';

/** The live object a finding concerns; the Event goes there. */
export interface ObjectRef {
  readonly kind: 'Service' | 'Pod';
  readonly namespace: string;
  readonly name: string;
  readonly uid?: string;
}

/** One thing the pass found; `object` is absent when no live object is concerned (a leak). */
export interface Finding {
  readonly reason: RepairReason;
  readonly message: string;
  readonly object?: ObjectRef;
}

/** How a value reads in messages: `[IPv4]:10.0.0.1` for cluster IPs, the number for ports. */
function shown(range: ValueRange, value: string): string {
  return range.kind === 'clusterIP' ? `[${range.family ?? 'IPv4'}]:${value}` : value;
}

const isIp = (range: ValueRange) => range.kind === 'clusterIP';

/** The owner carries a value the store does not hold for it: it is recorded now. */
export function notAllocated(range: ValueRange, value: string, object: ObjectRef): Finding {
  if (range.kind === 'hostPort') {
    return {
      reason: REPAIR_REASONS.hostPortNotAllocated,
      message: `Host port ${value} of range ${range.name} is not allocated; repairing`,
      object,
    };
  }
  return isIp(range)
    ? {
        reason: REPAIR_REASONS.clusterIpNotAllocated,
        message: `Cluster IP ${shown(range, value)} is not allocated; repairing`,
        object,
      }
    : {
        reason: REPAIR_REASONS.portNotAllocated,
        message: `Port ${value} is not allocated; repairing`,
        object,
      };
}

/** A second owner carries a value another owner holds. */
export function alreadyAllocated(range: ValueRange, value: string, object: ObjectRef): Finding {
  return isIp(range)
    ? {
        reason: REPAIR_REASONS.clusterIpAlreadyAllocated,
        message: `Cluster IP ${shown(range, value)} was assigned to multiple services; please recreate service`,
        object,
      }
    : {
        reason: REPAIR_REASONS.portAlreadyAllocated,
        message: `Port ${value} was assigned to multiple services; please recreate service`,
        object,
      };
}

/** The owner carries a value outside every configured range. */
export function outOfRange(range: ValueRange, value: string, object: ObjectRef): Finding {
  return isIp(range)
    ? {
        reason: REPAIR_REASONS.clusterIpOutOfRange,
        message: `Cluster IP ${shown(range, value)} is not within the service CIDR ${range.name}; please recreate service`,
        object,
      }
    : {
        reason: REPAIR_REASONS.portOutOfRange,
        message: `Port ${value} is not within the port range ${range.name}; please recreate service`,
        object,
      };
}

/** A cluster IP that does not parse, or whose family is not configured. */
export function clusterIpNotValid(value: string, object: ObjectRef, family?: string): Finding {
  return {
    reason: REPAIR_REASONS.clusterIpNotValid,
    message:
      family === undefined
        ? `Cluster IP ${value} is not a valid IP; please recreate service`
        : `Cluster IP ${value}(${family}) is of ip family that is no longer configured on cluster; please recreate service`,
    object,
  };
}

/** A value held with no owner carrying it, freed after the grace passes (summary only). */
export function leaked(range: ValueRange, value: string, holder: string): Finding {
  const reason =
    range.kind === 'clusterIP'
      ? REPAIR_REASONS.clusterIpLeaked
      : range.kind === 'nodePort'
        ? REPAIR_REASONS.portLeaked
        : REPAIR_REASONS.hostPortLeaked;
  const what = range.kind === 'clusterIP' ? `cluster IP ${shown(range, value)}` : `port ${value}`;
  return { reason, message: `the ${what} of ${holder} appears to have leaked: cleaning up` };
}
