/**
 * The IPAM result of an ADD, in the configuration's CNI version: the pod's address with the
 * prefix length of the ENI's subnet, its gateway and a default route through it.
 */
import type { IpAssignment } from '../shared/eni/model.js';
import type { CniVersion } from './netconf.js';

/**
 * What berth's node IP API answers for a holder (`POST` and `GET /v1/nodes/{node}/ips`); its
 * `gateway` is the subnet's router, where the node sends the pod's traffic.
 */
export type Assignment = IpAssignment;

/** The subnet's prefix length (`10.0.0.0/24` → 24). */
export function prefixLength(cidr: string): number {
  const length = Number(cidr.split('/')[1]);
  return Number.isInteger(length) && length >= 0 && length <= 32 ? length : 32;
}

/**
 * The pod's gateway when the configuration names none: the subnet's fourth address (network
 * + 3), which AWS reserves in every subnet "for future use" and never assigns.
 */
export function reservedGateway(subnetCidr: string): string {
  const [network = '0.0.0.0'] = subnetCidr.split('/');
  const value = network.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0) + 3;
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
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
