/**
 * The `berth.dev/ports` annotation: a JSON array of port specs shaped like an
 * Agones GameServer `spec.ports` entry, parsed and validated in one pass so a user sees every
 * problem at once. Messages follow `field.ErrorList` (`<path>: <type>: <detail>`) and reuse
 * Agones' words where Agones has them. Pure: no I/O.
 */

import { checkFront, type FrontsOffered, NO_FRONTS } from '../fronts/front-spec.js';
import type { FrontKind } from '../fronts/model.js';
import { PORTS_ANNOTATION } from '../vocabulary/labels.js';
import { type HostPortRange, lastPort, PORT_PROTOCOLS, type PortProtocol } from './model.js';

/** Field path of the annotation, the prefix of every validation message. */
export const PORTS_PATH = `metadata.annotations[${PORTS_ANNOTATION}]`;

/** How a port gets its host port (Agones `portPolicy`). */
export const PORT_POLICIES = ['Dynamic', 'Passthrough', 'Static', 'None'] as const;
/** One of `PORT_POLICIES`. */
export type PortPolicy = (typeof PORT_POLICIES)[number];

/**
 * The container port entries one spec becomes: `<name>` for UDP or TCP, `<name>-tcp` and
 * `<name>-udp` for TCPUDP (a container port has one protocol).
 */
export function containerPortsOf(
  name: string,
  protocol: PortProtocol,
): { readonly name: string; readonly protocol: 'TCP' | 'UDP' }[] {
  return protocol === 'TCPUDP'
    ? [
        { name: `${name}-tcp`, protocol: 'TCP' },
        { name: `${name}-udp`, protocol: 'UDP' },
      ]
    : [{ name, protocol }];
}

/** Policies whose host port berth hands out from a range. */
export function isAllocated(policy: PortPolicy): boolean {
  return policy === 'Dynamic' || policy === 'Passthrough';
}

/**
 * At most this many Dynamic/Passthrough ports per pod: an allocation is one DynamoDB transaction
 * of at most 100 items (the owner record plus one count block per port at worst).
 */
export const MAX_ALLOCATED_PORTS = 99;

/** Where a port's container sits in the pod: a regular container or a sidecar init container. */
export interface ContainerRef {
  readonly field: 'containers' | 'initContainers';
  readonly index: number;
  readonly name: string;
}

/** One validated port spec, defaults filled in. */
export interface PortSpec {
  /** Position in the annotation, for messages. */
  readonly index: number;
  readonly name: string;
  readonly container: ContainerRef;
  readonly portPolicy: PortPolicy;
  readonly protocol: PortProtocol;
  /** Absent for Passthrough, whose container port is its host port. */
  readonly containerPort?: number;
  /** Present for Static only. */
  readonly hostPort?: number;
  /** The range a Dynamic or Passthrough port is allocated from. */
  readonly range: string;
  /**
   * A block of this many consecutive host ports (Dynamic only), present when the spec sets
   * `count`: the pod is told the first port and the count.
   */
  readonly count?: number;
  /** The public front the port is reached through, when it asks for one. */
  readonly front?: FrontKind;
}

/** The number of host port numbers a spec takes: its block's size, else one. */
export function portsOf(spec: Pick<PortSpec, 'count'>): number {
  return spec.count ?? 1;
}

/** `BERTH_PORT_<NAME>`: upper-cased, `-` to `_` (port names allow nothing else). */
export function envVarName(portName: string): string {
  return `BERTH_PORT_${portName.toUpperCase().replaceAll('-', '_')}`;
}

/** The environment variables a spec gives its container: the port, and a block's count. */
export function envVarsOf(spec: Pick<PortSpec, 'name' | 'count'>): string[] {
  const name = envVarName(spec.name);
  return spec.count === undefined ? [name] : [name, `${name}_COUNT`];
}

/** The parts of a pod the specs are checked against. */
export interface PodContainers {
  /** `spec.containers[*].name`. */
  readonly containers: readonly string[];
  /** `spec.initContainers[*]`: only sidecars (`restartPolicy: Always`) may take ports. */
  readonly initContainers: readonly { readonly name: string; readonly sidecar: boolean }[];
}

/** The outcome of parsing: specs, or the denial with every problem. */
export type PortSpecParse =
  | { readonly ok: true; readonly specs: readonly PortSpec[] }
  | { readonly ok: false; readonly code: 400 | 422; readonly problems: readonly string[] };

const FIELDS = [
  'name',
  'container',
  'containerPort',
  'portPolicy',
  'protocol',
  'hostPort',
  'range',
  'count',
  'front',
] as const;

const DEFAULT_RANGE = 'default';

/** Longest quoted value a message repeats back. */
const QUOTE_LIMIT = 64;
/** Longest annotation read: Kubernetes allows 256 KiB for all annotations together. */
const MAX_ANNOTATION_LENGTH = 64 * 1024;

/**
 * A value as a message shows it: scalars as JSON, cut short; arrays and objects by their shape,
 * never serialised (a deeply nested value would overflow the stack, a large one the message).
 */
function quote(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'object' && value !== null) return 'an object';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > QUOTE_LIMIT ? `${text.slice(0, QUOTE_LIMIT)}…` : text;
}
const supported = (values: readonly string[]): string => values.map((v) => `"${v}"`).join(', ');

/** Container port names are IANA service names (`IsValidPortName`): the apiserver's messages. */
function portNameProblems(name: string): string[] {
  const problems: string[] = [];
  if (name.length > 15) problems.push('must be no more than 15 characters');
  if (!/^[-a-z0-9]+$/.test(name)) {
    problems.push('must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)');
  }
  if (name.includes('--')) problems.push('must not contain consecutive hyphens');
  if (!/[a-z]/.test(name)) problems.push('must contain at least one letter (a-z)');
  if (name.startsWith('-') || name.endsWith('-')) {
    problems.push('must not begin or end with a hyphen');
  }
  return problems;
}

/** A port number field: 0, null and absent mean unset (Agones' int32 zero value). */
function portNumber(
  value: unknown,
  path: string,
  problems: string[],
): { set: boolean; value?: number } {
  if (value === undefined || value === null || value === 0) return { set: false };
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    problems.push(
      `${path}: Invalid value: ${quote(value)}: must be between 1 and 65535, inclusive`,
    );
    return { set: true };
  }
  return { set: true, value };
}

/**
 * The largest block: one count item of the store (64 port numbers), so a block is one
 * conditional write and its record stays within a write unit or two.
 */
export const MAX_BLOCK_PORTS = 64;

/** `count`: absent or null means a single port; otherwise an integer from 1 to the maximum. */
function blockCount(value: unknown, path: string, problems: string[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    typeof value !== 'number' ||
    !Number.isInteger(value) ||
    value < 1 ||
    value > MAX_BLOCK_PORTS
  ) {
    problems.push(
      `${path}: Invalid value: ${quote(value)}: must be an integer between 1 and ${MAX_BLOCK_PORTS}, inclusive`,
    );
    return undefined;
  }
  return value;
}

function enumValue<T extends string>(
  value: unknown,
  allowed: readonly T[],
  fallback: T,
  path: string,
  problems: string[],
): T | undefined {
  // An empty string is the unset value, as Agones defaults `portPolicy: ""` to Dynamic.
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) {
    return value as T;
  }
  problems.push(
    `${path}: Unsupported value: ${quote(value)}: supported values: ${supported(allowed)}`,
  );
  return undefined;
}

function resolveContainer(
  value: unknown,
  pod: PodContainers,
  path: string,
  problems: string[],
): ContainerRef | undefined {
  if (value === undefined || value === null || value === '') {
    const [only, ...others] = pod.containers;
    if (only === undefined) {
      problems.push(`${path}: Required value: the pod has no containers`);
      return undefined;
    }
    if (others.length > 0) {
      problems.push(
        `${path}: Required value: Container is required when using multiple containers in the pod template`,
      );
      return undefined;
    }
    return { field: 'containers', index: 0, name: only };
  }
  if (typeof value !== 'string') {
    problems.push(`${path}: Invalid value: ${quote(value)}: must be a container name`);
    return undefined;
  }
  const index = pod.containers.indexOf(value);
  if (index >= 0) return { field: 'containers', index, name: value };
  const init = pod.initContainers.findIndex((c) => c.name === value);
  if (init >= 0 && pod.initContainers[init]?.sidecar) {
    return { field: 'initContainers', index: init, name: value };
  }
  problems.push(
    init >= 0
      ? `${path}: Invalid value: ${quote(value)}: init container ${value} is not a sidecar (restartPolicy: Always), so it cannot take a port`
      : `${path}: Invalid value: ${quote(value)}: Could not find a container named ${value}`,
  );
  return undefined;
}

/**
 * Parses and validates the annotation against the pod's containers and the configured ranges
 * (by name, in config order). Bad JSON is 400; every other problem is 422, all of them listed.
 */
export function parsePortSpecs(
  annotation: string,
  pod: PodContainers,
  rangeByName: ReadonlyMap<string, HostPortRange>,
  fronts: FrontsOffered = NO_FRONTS,
): PortSpecParse {
  if (annotation.length > MAX_ANNOTATION_LENGTH) {
    return {
      ok: false,
      code: 422,
      problems: [
        `${PORTS_PATH}: Too long: ${annotation.length} characters: must have at most ${MAX_ANNOTATION_LENGTH}`,
      ],
    };
  }
  let document: unknown;
  try {
    document = JSON.parse(annotation);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      code: 400,
      problems: [
        `${PORTS_PATH}: Invalid value: not valid JSON (${reason}); write a JSON array of port specs`,
      ],
    };
  }
  if (!Array.isArray(document)) {
    return {
      ok: false,
      code: 422,
      problems: [
        `${PORTS_PATH}: Invalid value: must be a JSON array of port specs, e.g. [{"name":"game","containerPort":7777}]`,
      ],
    };
  }
  const problems: string[] = [];
  const specs: PortSpec[] = [];
  const seenNames = new Set<string>();
  const seenEntryNames = new Map<string, number>();
  const seenStatic = new Set<string>();
  const seenEnv = new Map<string, number>();

  document.forEach((element: unknown, index) => {
    const at = `${PORTS_PATH}[${index}]`;
    if (typeof element !== 'object' || element === null || Array.isArray(element)) {
      problems.push(
        `${at}: Invalid value: ${quote(element)}: must be an object with at least a name`,
      );
      return;
    }
    const entry = element as Record<string, unknown>;
    for (const key of Object.keys(entry)) {
      if (!(FIELDS as readonly string[]).includes(key)) {
        problems.push(
          `${at}.${key}: Forbidden: unknown field; the fields are ${FIELDS.join(', ')}`,
        );
      }
    }
    const before = problems.length;

    const rawName = entry.name;
    let name: string | undefined;
    if (typeof rawName !== 'string' || rawName === '') {
      problems.push(
        rawName === undefined || rawName === null || rawName === ''
          ? `${at}.name: Required value: every port needs a name, unique in the pod`
          : `${at}.name: Invalid value: ${quote(rawName)}: must be a string`,
      );
    } else if (seenNames.has(rawName)) {
      problems.push(`${at}.name: Duplicate value: ${quote(rawName)}`);
    } else {
      seenNames.add(rawName);
      name = rawName;
    }

    const portPolicy = enumValue(
      entry.portPolicy,
      PORT_POLICIES,
      'Dynamic',
      `${at}.portPolicy`,
      problems,
    );
    const protocol = enumValue(entry.protocol, PORT_PROTOCOLS, 'UDP', `${at}.protocol`, problems);
    const container = resolveContainer(entry.container, pod, `${at}.container`, problems);
    const containerPort = portNumber(entry.containerPort, `${at}.containerPort`, problems);
    const hostPort = portNumber(entry.hostPort, `${at}.hostPort`, problems);

    if (name !== undefined && protocol !== undefined) {
      // The container port entries the patch writes must be valid port names themselves.
      const entryNames = containerPortsOf(name, protocol).map((port) => port.name);
      const nameProblems = portNameProblems(name);
      if (nameProblems.length === 0 && protocol === 'TCPUDP' && name.length > 11) {
        nameProblems.push(
          `must be no more than 11 characters with protocol TCPUDP (the container ports are named ${name}-tcp and ${name}-udp)`,
        );
      }
      if (nameProblems.length > 0) {
        problems.push(`${at}.name: Invalid value: ${quote(name)}: ${nameProblems.join(', ')}`);
      }
      for (const entryName of entryNames) {
        const other = seenEntryNames.get(entryName);
        if (other !== undefined) {
          problems.push(
            `${at}.name: Duplicate value: ${quote(name)}: its container port ${entryName} clashes with port [${other}]`,
          );
        }
        seenEntryNames.set(entryName, index);
      }
    }

    if (portPolicy !== undefined) {
      if ((portPolicy === 'Dynamic' || portPolicy === 'Static') && !containerPort.set) {
        problems.push(
          `${at}.containerPort: Required value: ContainerPort must be defined for Dynamic and Static PortPolicies`,
        );
      }
      if (portPolicy === 'Passthrough' && containerPort.set) {
        problems.push(
          `${at}.containerPort: Forbidden: ContainerPort cannot be specified with Passthrough PortPolicy`,
        );
      }
      if (isAllocated(portPolicy) && hostPort.set) {
        problems.push(
          `${at}.hostPort: Forbidden: HostPort cannot be specified with a Dynamic or Passthrough PortPolicy`,
        );
      }
      if (portPolicy === 'None' && hostPort.set) {
        problems.push(
          `${at}.hostPort: Forbidden: HostPort cannot be specified with None PortPolicy`,
        );
      }
      if (portPolicy === 'Static' && !hostPort.set) {
        problems.push(
          `${at}.hostPort: Required value: HostPort must be defined for Static PortPolicy`,
        );
      }
      if (portPolicy === 'Static' && hostPort.value !== undefined) {
        // Agones lets this through and its counts then go wrong; berth refuses it.
        const inside = [...rangeByName.values()].find(
          (r) =>
            hostPort.value !== undefined &&
            hostPort.value >= r.first &&
            hostPort.value <= lastPort(r),
        );
        if (inside) {
          problems.push(
            `${at}.hostPort: Invalid value: ${hostPort.value}: a Static hostPort may not lie in host port range "${inside.name}" (${inside.first}-${lastPort(inside)}), whose ports berth hands out; pick a port outside every configured range`,
          );
        } else if (protocol !== undefined) {
          for (const p of protocol === 'TCPUDP' ? ['TCP', 'UDP'] : [protocol]) {
            const key = `${hostPort.value}/${p}`;
            if (seenStatic.has(key)) {
              problems.push(
                `${at}.hostPort: Duplicate value: ${hostPort.value}: already used for ${p} in this pod`,
              );
            }
            seenStatic.add(key);
          }
        }
      }
    }

    const namedRange =
      typeof entry.range === 'string' && entry.range !== '' ? entry.range : undefined;
    const frontCheck = checkFront(
      {
        at,
        front: entry.front,
        namedRange,
        portPolicy,
        count: typeof entry.count === 'number' ? entry.count : undefined,
      },
      fronts,
    );
    problems.push(...frontCheck.problems);

    let range = DEFAULT_RANGE;
    if (frontCheck.range !== undefined && namedRange === undefined) {
      // A port behind the accelerator takes the accelerator's range unless it names it.
      range = frontCheck.range;
    } else if (entry.range !== undefined && entry.range !== null && entry.range !== '') {
      if (typeof entry.range !== 'string') {
        problems.push(
          `${at}.range: Invalid value: ${quote(entry.range)}: must be a host port range name`,
        );
      } else if (!rangeByName.has(entry.range)) {
        problems.push(
          `${at}.range: Not found: ${quote(entry.range)}: no host port range has this name; configured: ${supported([...rangeByName.keys()])}`,
        );
      } else {
        range = entry.range;
      }
    } else if (
      portPolicy !== undefined &&
      isAllocated(portPolicy) &&
      !rangeByName.has(DEFAULT_RANGE)
    ) {
      problems.push(
        `${at}.range: Required value: no host port range is named "default"; name one of ${supported([...rangeByName.keys()])}`,
      );
    }

    const count = blockCount(entry.count, `${at}.count`, problems);
    if (count !== undefined) {
      if (portPolicy !== undefined && portPolicy !== 'Dynamic') {
        problems.push(
          `${at}.count: Forbidden: a block of consecutive host ports is only for the Dynamic PortPolicy`,
        );
      }
      const inRange = rangeByName.get(range);
      if (inRange && count > inRange.size) {
        problems.push(
          `${at}.count: Invalid value: ${count}: a block must fit host port range "${inRange.name}" (${inRange.first}-${lastPort(inRange)}), which holds ${inRange.size} ports`,
        );
      }
      if (containerPort.value !== undefined && containerPort.value + count - 1 > 65535) {
        problems.push(
          `${at}.count: Invalid value: ${count}: the block's container ports ${containerPort.value}-${containerPort.value + count - 1} must end at 65535 at most`,
        );
      }
    }
    if (name !== undefined) {
      // A block's BERTH_PORT_<NAME>_COUNT must not be another port's BERTH_PORT_<NAME>.
      for (const variable of envVarsOf({ name, ...(count === undefined ? {} : { count }) })) {
        const other = seenEnv.get(variable);
        if (other !== undefined) {
          problems.push(
            `${at}.name: Duplicate value: ${quote(name)}: its environment variable ${variable} clashes with port [${other}]`,
          );
        }
        seenEnv.set(variable, index);
      }
    }

    if (
      problems.length === before &&
      name !== undefined &&
      portPolicy !== undefined &&
      protocol !== undefined &&
      container !== undefined
    ) {
      specs.push({
        index,
        name,
        container,
        portPolicy,
        protocol,
        ...(containerPort.value !== undefined ? { containerPort: containerPort.value } : {}),
        ...(hostPort.value !== undefined ? { hostPort: hostPort.value } : {}),
        range,
        ...(count === undefined ? {} : { count }),
        ...(frontCheck.front === undefined ? {} : { front: frontCheck.front }),
      });
    }
  });

  if (problems.length === 0) problems.push(...demandProblems(specs, rangeByName));
  return problems.length > 0 ? { ok: false, code: 422, problems } : { ok: true, specs };
}

/**
 * One pod never holds a host port twice for one protocol, so it cannot ask one range for more
 * ports of a protocol than the range has (across pods, counts may grow without bound).
 */
function demandProblems(
  specs: readonly PortSpec[],
  ranges: ReadonlyMap<string, HostPortRange>,
): string[] {
  const problems: string[] = [];
  const allocated = specs.filter((s) => isAllocated(s.portPolicy));
  if (allocated.length > MAX_ALLOCATED_PORTS) {
    problems.push(
      `${PORTS_PATH}: Too many: ${allocated.length}: must have at most ${MAX_ALLOCATED_PORTS} Dynamic or Passthrough ports`,
    );
  }
  for (const range of ranges.values()) {
    const inRange = allocated.filter((s) => s.range === range.name);
    if (inRange.some((s) => s.count !== undefined)) {
      // A pod with a block takes distinct numbers for all its ports in the range.
      const wanted = inRange.reduce((sum, s) => sum + portsOf(s), 0);
      if (wanted > range.size) {
        problems.push(
          `${PORTS_PATH}: Invalid value: asks for ${wanted} distinct host ports in range "${range.name}" (${range.first}-${lastPort(range)}), which holds ${range.size}`,
        );
      }
      continue;
    }
    for (const protocol of ['UDP', 'TCP'] as const) {
      const wanted = inRange.filter(
        (s) => s.protocol === protocol || s.protocol === 'TCPUDP',
      ).length;
      if (wanted > range.size) {
        problems.push(
          `${PORTS_PATH}: Invalid value: asks for ${wanted} distinct ${protocol} host ports in range "${range.name}" (${range.first}-${lastPort(range)}), which holds ${range.size}`,
        );
      }
    }
  }
  return problems;
}
