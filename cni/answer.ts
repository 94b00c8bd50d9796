/**
 * The node IP API's answer, checked before anything on the node changes: the plugin configures a
 * pod with what it is told, so an answer it cannot use whole is refused whole, and the pod gets
 * no half-made network. berth's pools hold the private IPv4 addresses EC2 assigns to an ENI
 * (`AssignPrivateIpAddresses`), and its result routes `0.0.0.0/0`: the pool's family is IPv4.
 */

import { cidrContains, formatCidr, parseCidr, parseIp } from '../shared/net/ip.js';
import { CNI_ERROR, CniError, shown } from './errors.js';
import type { BerthIpamConfig } from './netconf.js';
import { POOL_FAMILY } from './netconf.js';
import { type Assignment, reservedGateway } from './result.js';

/**
 * The subnet sizes a VPC allows for IPv4, /16 to /28 (Amazon VPC User Guide, "Subnet CIDR
 * blocks"): a /0 or a /32 is no ENI's subnet.
 */
const SUBNET_PREFIX = { min: 16, max: 28 } as const;

/**
 * The highest device index taken: `ipam.routeTableBase` is at most 2^31 − 1000, so the ENI's table
 * (base + index) stays a positive 32-bit table id. EC2 attaches far fewer interfaces than this.
 */
const MAX_DEVICE_INDEX = 999;

const MAC_ADDRESS = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;

/** A CNI error for an answer the plugin cannot use: berth's fault, not the node's or the runtime's. */
function unusable(problem: string): CniError {
  return new CniError(
    CNI_ERROR.internal,
    `berth's node IP API answered no usable address: ${problem}`,
  );
}

/**
 * The address an answer names, checked as one of the pool's family; what a DEL needs of a
 * look-up, where the rest of the answer does not matter.
 */
export function answeredIp(answer: unknown): string {
  const ip = fieldsOf(answer).ip;
  const parsed = typeof ip === 'string' ? parseIp(ip) : undefined;
  if (parsed === undefined) throw unusable(`ip: ${shown(ip)} is not an IP address`);
  if (parsed.family !== POOL_FAMILY) {
    throw unusable(`ip: ${ip} is ${parsed.family}, not ${POOL_FAMILY} as berth's pools are`);
  }
  return ip as string;
}

/**
 * The answer as an assignment the plugin may configure: an address of the pool's family inside
 * the subnet it names (neither its network nor its broadcast address), a subnet of a size a VPC
 * allows, a router inside it that is not the address, and a device and MAC that route. The pod's
 * gateway must lie in the subnet too and not be the address: a configured `ipam.podGateway` that
 * does not is the configuration's fault (error 7).
 */
export function checkedAssignment(answer: unknown, config: BerthIpamConfig): Assignment {
  const fields = fieldsOf(answer);
  const ip = answeredIp(answer);
  const address = parseIp(ip);
  const { subnetCidr, gateway, eniId, deviceIndex, macAddress } = fields;
  const subnet = typeof subnetCidr === 'string' ? parseCidr(subnetCidr) : undefined;
  if (subnet === undefined) {
    throw unusable(`subnetCidr: ${shown(subnetCidr)} is not a CIDR block (network/prefix)`);
  }
  const block = formatCidr(subnet);
  if (subnet.family !== POOL_FAMILY) {
    throw unusable(`subnetCidr: ${block} is ${subnet.family}, but the address ${ip} is IPv4`);
  }
  if (subnet.prefixLength < SUBNET_PREFIX.min || subnet.prefixLength > SUBNET_PREFIX.max) {
    throw unusable(
      `subnetCidr: ${block} has prefix length /${subnet.prefixLength}; a VPC subnet has /${SUBNET_PREFIX.min} to /${SUBNET_PREFIX.max}`,
    );
  }
  if (address === undefined || !cidrContains(subnet, address)) {
    throw unusable(`ip: ${ip} is outside the subnet ${block} it names`);
  }
  const broadcast = subnet.network + (1n << BigInt(subnet.hostBits)) - 1n;
  if (address.value === subnet.network || address.value === broadcast) {
    throw unusable(`ip: ${ip} is the network or broadcast address of ${block}`);
  }
  const router = typeof gateway === 'string' ? parseIp(gateway) : undefined;
  if (router === undefined || !cidrContains(subnet, router) || router.value === address.value) {
    throw unusable(
      `gateway: ${shown(gateway)} is not an address of ${block} other than the pod's ${ip}`,
    );
  }
  if (typeof eniId !== 'string' || eniId === '') {
    throw unusable(`eniId: ${shown(eniId)} is not an ENI id`);
  }
  if (
    deviceIndex !== undefined &&
    !(
      Number.isInteger(deviceIndex) &&
      (deviceIndex as number) >= 0 &&
      (deviceIndex as number) <= MAX_DEVICE_INDEX
    )
  ) {
    throw unusable(
      `deviceIndex: ${shown(deviceIndex)} is not a device index from 0 to ${MAX_DEVICE_INDEX}`,
    );
  }
  if (
    macAddress !== undefined &&
    !(typeof macAddress === 'string' && MAC_ADDRESS.test(macAddress))
  ) {
    throw unusable(`macAddress: ${shown(macAddress)} is not a MAC address`);
  }
  if (config.podGateway === undefined) {
    if (reservedGateway(block) === ip) {
      throw unusable(
        `ip: ${ip} is the fourth address of ${block}, which AWS reserves and berth gives pods as their gateway`,
      );
    }
  } else {
    const pod = parseIp(config.podGateway);
    if (pod === undefined || !cidrContains(subnet, pod) || pod.value === address.value) {
      throw new CniError(
        CNI_ERROR.invalidConfig,
        `ipam.podGateway: ${config.podGateway} is outside the subnet ${block} of the pod's address ${ip}, or is that address: the pod's gateway must be another address on its subnet`,
      );
    }
  }
  return {
    ip,
    eniId,
    subnetCidr: block,
    gateway: gateway as string,
    ...(deviceIndex === undefined ? {} : { deviceIndex: deviceIndex as number }),
    ...(macAddress === undefined ? {} : { macAddress: macAddress as string }),
  };
}

function fieldsOf(answer: unknown): Readonly<Record<string, unknown>> {
  if (typeof answer === 'object' && answer !== null && !Array.isArray(answer)) {
    return answer as Record<string, unknown>;
  }
  throw unusable(`${shown(answer)} is not a JSON object`);
}
