/**
 * The network configuration the runtime hands the plugin on stdin. berth-cni is an IPAM plugin:
 * its options are the `ipam` section of a main plugin's configuration (such as `ptp`), which the
 * main plugin passes on whole, `prevResult` included on CHECK and DEL.
 */
import { parseIp } from '../shared/net/ip.js';
import { CNI_ERROR, CniError, shown } from './errors.js';

/** The family of every address berth's ENI pools hand out. */
export const POOL_FAMILY = 'IPv4';

/** CNI versions whose results berth-cni writes (CHECK exists from 0.4.0). */
export const SUPPORTED_VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] as const;
export type CniVersion = (typeof SUPPORTED_VERSIONS)[number];

/** How the plugin reaches berth's node IP API. */
export type ApiAuth =
  /** Plain requests: the local server (`berth serve --http`). */
  | { readonly kind: 'none' }
  /** SigV4 with the node's instance role (IMDSv2), for the stack's AWS_IAM function URL. */
  | { readonly kind: 'sigv4'; readonly region: string | undefined };

/** berth-cni's options, from the `ipam` section. */
export interface BerthIpamConfig {
  /** Base URL of the node IP API (`http://127.0.0.1:8443`, or the stack's NodeIps URL). */
  readonly endpoint: string;
  /** The Kubernetes node this plugin runs on (written per node by the installer). */
  readonly node: string;
  readonly auth: ApiAuth;
  /** Whole-call budget (at most 110 s), below the runtime's own (kubelet's CRI calls allow 2 min). */
  readonly timeoutMs: number;
  /**
   * The gateway the pod is given, which the main plugin (`ptp`) puts on the host end of every
   * pod link and routes to on-link, so it must lie in the pod's subnet. Absent: the subnet's
   * fourth address, which AWS reserves in every subnet and never gives a host. Never the VPC
   * router (the first): as a local address on the node it would capture the node's own egress.
   */
  readonly podGateway: string | undefined;
  /** Route table of the ENI with device index N: `routeTableBase + N`. */
  readonly routeTableBase: number;
  /** Whether the pod's traffic leaves through the ENI that owns its address (on by default). */
  readonly sourceRouting: boolean;
  /**
   * Where the node keeps the addresses it hands out (`handout/store.ts`): a directory that
   * survives a reboot, shared by the plugin and the node agent.
   */
  readonly dataDir: string;
}

/** What the plugin reads from stdin. */
export interface NetworkConfig {
  readonly cniVersion: CniVersion;
  readonly name: string;
  readonly ipam: BerthIpamConfig;
  /** The cached result of the ADD, on CHECK and DEL. */
  readonly prevResult: PreviousResult | undefined;
}

/** The part of a previous result berth-cni reads back: the addresses it gave. */
export interface PreviousResult {
  readonly ips: readonly { readonly address: string }[];
}

const DEFAULTS = {
  timeoutSeconds: 10,
  routeTableBase: 1000,
  dataDir: '/var/lib/berth-cni',
};

/** Parses stdin; every problem is a CNI error naming the field. */
export function parseNetworkConfig(stdin: string): NetworkConfig {
  let json: unknown;
  try {
    json = JSON.parse(stdin);
  } catch (error) {
    throw new CniError(
      CNI_ERROR.decodeFailure,
      'network configuration: stdin is not JSON',
      error instanceof Error ? error.message : undefined,
    );
  }
  const conf = object(json, 'network configuration');
  const cniVersion = cniVersionOf(conf);
  const ipam = object(conf.ipam, 'ipam');
  const problems: string[] = [];
  const text = (key: string, fallback?: string): string => {
    const value = ipam[key] ?? fallback;
    if (typeof value === 'string' && value !== '') return value;
    problems.push(`ipam.${key}: required, a non-empty string`);
    return '';
  };
  const number = (key: string, fallback: number, min: number, max: number): number => {
    const value = ipam[key] ?? fallback;
    if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)
      return value;
    problems.push(`ipam.${key}: must be a whole number from ${min} to ${max}, was ${shown(value)}`);
    return fallback;
  };
  const endpoint = text('endpoint');
  if (endpoint && !/^https?:\/\/[^/]+/.test(endpoint)) {
    problems.push(`ipam.endpoint: "${endpoint}" is not an http:// or https:// URL`);
  }
  const node = text('node');
  const authName = ipam.auth ?? 'none';
  let auth: ApiAuth = { kind: 'none' };
  if (authName === 'sigv4') {
    const region = ipam.region;
    if (region !== undefined && typeof region !== 'string')
      problems.push('ipam.region: must be a string');
    auth = { kind: 'sigv4', region: typeof region === 'string' ? region : undefined };
  } else if (authName !== 'none') {
    problems.push(`ipam.auth: ${shown(authName)} must be "none" (plain HTTP) or "sigv4" (AWS)`);
  }
  const podGateway = ipam.podGateway === undefined ? undefined : text('podGateway');
  // The pod's gateway is of its address's family, the pool's.
  if (podGateway && parseIp(podGateway)?.family !== POOL_FAMILY) {
    problems.push(`ipam.podGateway: ${shown(podGateway)} is not an ${POOL_FAMILY} address`);
  }
  const dataDir = text('dataDir', DEFAULTS.dataDir);
  if (dataDir && !dataDir.startsWith('/')) {
    problems.push(`ipam.dataDir: ${shown(dataDir)} must be an absolute path`);
  }
  const sourceRouting = ipam.sourceRouting ?? true;
  if (typeof sourceRouting !== 'boolean')
    problems.push('ipam.sourceRouting: must be true or false');
  const config: NetworkConfig = {
    cniVersion,
    name: typeof conf.name === 'string' ? conf.name : '',
    ipam: {
      endpoint: endpoint.replace(/\/+$/, ''),
      node,
      auth,
      timeoutMs: number('timeoutSeconds', DEFAULTS.timeoutSeconds, 1, 110) * 1000,
      podGateway,
      routeTableBase: number('routeTableBase', DEFAULTS.routeTableBase, 1, 2 ** 31 - 1000),
      sourceRouting: sourceRouting === true,
      dataDir,
    },
    prevResult: previousResult(conf.prevResult),
  };
  if (problems.length > 0) {
    throw new CniError(CNI_ERROR.invalidConfig, problems.join('; '));
  }
  return config;
}

/** The `cniVersion` of a configuration; one berth-cni does not speak fails the command. */
function cniVersionOf(conf: Readonly<Record<string, unknown>>): CniVersion {
  const version = conf.cniVersion;
  if (typeof version !== 'string' || !(SUPPORTED_VERSIONS as readonly string[]).includes(version)) {
    throw new CniError(
      CNI_ERROR.incompatibleVersion,
      `cniVersion: ${JSON.stringify(version)} is not supported; berth-cni speaks ${SUPPORTED_VERSIONS.join(', ')}`,
    );
  }
  return version as CniVersion;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    return value as Record<string, unknown>;
  }
  throw new CniError(CNI_ERROR.invalidConfig, `${what}: must be a JSON object`);
}

function previousResult(value: unknown): PreviousResult | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const ips = (value as { ips?: unknown }).ips;
  if (!Array.isArray(ips)) return undefined;
  return {
    ips: ips.flatMap((ip) =>
      typeof ip === 'object' && ip !== null && typeof ip.address === 'string'
        ? [{ address: ip.address as string }]
        : [],
    ),
  };
}
