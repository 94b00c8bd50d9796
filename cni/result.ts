/**
 * The IPAM result of an ADD, in the configuration's CNI version: the pod's address with the
 * prefix length of the ENI's subnet, its gateway and a default route through it.
 */
import type { IpAssignment } from '../shared/eni/model.js';
import { formatIp, parseCidr } from '../shared/net/ip.js';
import type { CniVersion } from './netconf.js';

/**
 * What berth's node IP API answers for a holder (`POST` and `GET /v1/nodes/{node}/ips`); its
 * `gateway` is the subnet's router, where the node sends the pod's traffic.
 */
export type Assignment = IpAssignment;

/** The subnet's prefix length (`10.0.0.0/24` → 24); a host route when it does not parse. */
export function prefixLength(cidr: string): number {
  return parseCidr(cidr)?.prefixLength ?? 32;
}

/**
 * The pod's gateway when the configuration names none: the subnet's fourth address (network
 * + 3), which AWS reserves in every subnet "for future use" and never assigns.
 */
export function reservedGateway(subnetCidr: string): string {
  const block = parseCidr(subnetCidr);
  if (block === undefined) throw new RangeError(`not a CIDR block: ${subnetCidr}`);
  return formatIp({ family: block.family, value: block.network + 3n });
}

/** The result the runtime (and the main plugin) reads. */
export function ipamResult(
  version: CniVersion,
  assignment: Assignment,
  configuredGateway: string | undefined,
) {
  const address = `${assignment.ip}/${prefixLength(assignment.subnetCidr)}`;
  const podGateway = configuredGateway ?? reservedGateway(assignment.subnetCidr);
  // Before 1.0.0 every IP carried its family.
  const ip =
    version === '1.0.0'
      ? { address, gateway: podGateway }
      : { version: '4', address, gateway: podGateway };
  return {
    cniVersion: version,
    ips: [ip],
    routes: [{ dst: '0.0.0.0/0' }],
    dns: {},
  };
}
