/**
 * What a host-port range and a port are, as the config, the store and the allocator all speak
 * of them: the port's own words, below every policy.
 */

/** Agones protocols; TCPUDP is one host port serving both. */
export const PORT_PROTOCOLS = ['UDP', 'TCP', 'TCPUDP'] as const;
/** One of `PORT_PROTOCOLS`. */
export type PortProtocol = (typeof PORT_PROTOCOLS)[number];

/** A named host port range from the config: `size` ports from `first`. */
export interface HostPortRange {
  readonly name: string;
  readonly first: number;
  readonly size: number;
}

/** The last port of a range. */
export function lastPort(range: HostPortRange): number {
  return range.first + range.size - 1;
}
