/**
 * The `front` field of a `berth.dev/ports` entry: the public front a game-server port is reached
 * through when nodes have no public address. `nlb` is a listener of its own on one of the pool's
 * Network Load Balancers; `accelerator` is a destination of the Global Accelerator custom routing
 * endpoint group, whose destination port range is one host port range kept for it alone. Pure.
 */

import type { BerthConfig } from '../config/schema.js';
import type { HealthCheck } from './elbv2.js';
import { FRONT_KINDS, type FrontKind } from './model.js';

/** Whether a config asks for any front (nothing of fronts is built or deployed otherwise). */
export function hasFronts(config: Pick<BerthConfig, 'fronts'>): boolean {
  return config.fronts.nlb !== undefined || config.fronts.accelerator !== undefined;
}

/** The health check of every target group berth makes, from `fronts.nlb.healthCheck`. */
export function healthCheckOf(
  nlb: NonNullable<BerthConfig['fronts']['nlb']>['healthCheck'],
): HealthCheck {
  return nlb.protocol === 'HTTP'
    ? { protocol: 'HTTP', port: nlb.port, path: nlb.path }
    : { protocol: 'TCP', port: nlb.port };
}

/** Which fronts the config offers. */
export interface FrontsOffered {
  /** Whether any Network Load Balancer is configured. */
  readonly nlb: boolean;
  /** The host port range the accelerator's endpoint group covers, when one is configured. */
  readonly acceleratorRange?: string;
  /** The host port range of the NLB slots, in slots mode (`fronts.nlb.range`). */
  readonly slotRange?: string;
}

/** No front configured: what a config without `fronts` offers. */
export const NO_FRONTS: FrontsOffered = { nlb: false };

/** The parts of a port entry the front is checked against. */
export interface FrontedPort {
  readonly at: string;
  readonly front: unknown;
  /** The range the entry names, or undefined when it names none. */
  readonly namedRange: string | undefined;
  readonly portPolicy: string | undefined;
  readonly count: number | undefined;
}

/** The checked front, the range the port then takes, and every problem. */
export interface FrontCheck {
  readonly front?: FrontKind;
  /** The front's kept range (the accelerator's, or the NLB slots') the port takes its host port from. */
  readonly range?: string;
  readonly problems: readonly string[];
}

const quoted = (value: unknown): string =>
  typeof value === 'string' ? JSON.stringify(value.slice(0, 64)) : typeof value;

/**
 * Checks one entry's `front` against what the config offers. A port in the accelerator's range
 * must ask for the accelerator: berth allows destinations of that range in batches of addresses
 * times ports, so a port there that did not ask to be public could become public. So must a port
 * in the NLB slots' range ask for the NLB: every port of it on a game node is behind a listener.
 */
export function checkFront(port: FrontedPort, offered: FrontsOffered): FrontCheck {
  const { at, front } = port;
  const inAcceleratorRange =
    offered.acceleratorRange !== undefined && port.namedRange === offered.acceleratorRange;
  const inSlotRange = offered.slotRange !== undefined && port.namedRange === offered.slotRange;
  if (front === undefined || front === null || front === '') {
    if ((inAcceleratorRange || inSlotRange) && port.portPolicy !== 'None') {
      const [whose, fix] = inAcceleratorRange
        ? ["the Global Accelerator's", '"front": "accelerator"']
        : ["the NLB slots'", '"front": "nlb"'];
      return {
        problems: [
          `${at}.range: Invalid value: ${quoted(port.namedRange)}: this host port range is ${whose}: its ports are public; set ${fix} or name another range`,
        ],
      };
    }
    return { problems: [] };
  }
  if (typeof front !== 'string' || !(FRONT_KINDS as readonly string[]).includes(front)) {
    return {
      problems: [
        `${at}.front: Unsupported value: ${quoted(front)}: supported values: "nlb", "accelerator"`,
      ],
    };
  }
  const kind = front as FrontKind;
  const problems: string[] = [];
  if (port.portPolicy === 'None') {
    problems.push(
      `${at}.front: Forbidden: a front needs a host port; not with the None PortPolicy`,
    );
  }
  if (port.count !== undefined) {
    problems.push(
      `${at}.front: Forbidden: a front serves one port; not with a block of host ports (count)`,
    );
  }
  if (kind === 'nlb' && !offered.nlb) {
    problems.push(
      `${at}.front: Invalid value: "nlb": no Network Load Balancer is configured; add one to fronts.nlb.loadBalancers`,
    );
  }
  if (kind === 'nlb' && offered.slotRange !== undefined) {
    if (port.namedRange !== undefined && !inSlotRange) {
      problems.push(
        `${at}.range: Invalid value: ${quoted(port.namedRange)}: a port behind an NLB slot takes its host port from range "${offered.slotRange}"; leave range out`,
      );
    } else if (port.portPolicy === 'Static') {
      problems.push(
        `${at}.front: Forbidden: "nlb" slots serve the host ports of range "${offered.slotRange}", which berth hands out; use the Dynamic or Passthrough PortPolicy`,
      );
    }
  }
  if (kind === 'accelerator') {
    if (offered.acceleratorRange === undefined) {
      problems.push(
        `${at}.front: Invalid value: "accelerator": no Global Accelerator is configured; set fronts.accelerator`,
      );
    } else if (port.namedRange !== undefined && !inAcceleratorRange) {
      problems.push(
        `${at}.range: Invalid value: ${quoted(port.namedRange)}: a port behind the Global Accelerator takes its host port from range "${offered.acceleratorRange}"; leave range out`,
      );
    } else if (port.portPolicy === 'Static') {
      problems.push(
        `${at}.front: Forbidden: "accelerator" serves the host ports of range "${offered.acceleratorRange}", which berth hands out; use the Dynamic or Passthrough PortPolicy`,
      );
    }
  }
  if (problems.length > 0) return { problems };
  const kept = kind === 'accelerator' ? offered.acceleratorRange : offered.slotRange;
  return kept !== undefined ? { front: kind, range: kept, problems } : { front: kind, problems };
}

/** `BERTH_FRONT_<NAME>`: the address of a port behind an NLB, known when the pod is created. */
export function frontEnvVarName(portName: string): string {
  return `BERTH_FRONT_${portName.toUpperCase().replaceAll('-', '_')}`;
}
