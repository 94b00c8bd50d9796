/**
 * What the container runtime tells the plugin through its environment (CNI specification 1.0.0,
 * "Parameters"), checked per command.
 */
import { CNI_ERROR, CniError } from './errors.js';

/** The commands of the specification. */
export type CniCommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION';

const COMMANDS: ReadonlySet<string> = new Set(['ADD', 'DEL', 'CHECK', 'VERSION']);

/** The specification's container id: alphanumeric first, then alphanumerics, `_`, `.`, `-`. */
const CONTAINER_ID = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,255}$/;

/** One invocation, as the runtime describes it. */
export interface Invocation {
  readonly command: CniCommand;
  readonly containerId: string;
  readonly netns: string;
  readonly ifname: string;
  /** `CNI_ARGS` as key/value pairs (`K8S_POD_NAMESPACE`, `K8S_POD_NAME`, …). */
  readonly args: ReadonlyMap<string, string>;
}

/** The pod an invocation is for, as kubelet names it in `CNI_ARGS`. */
export interface PodRef {
  readonly namespace: string;
  readonly name: string;
  readonly containerId: string;
}

/** Reads the invocation; a missing variable the command needs is error 4, naming it. */
export function readInvocation(env: Readonly<Record<string, string | undefined>>): Invocation {
  const command = env.CNI_COMMAND ?? '';
  if (!COMMANDS.has(command)) {
    throw new CniError(
      CNI_ERROR.invalidEnvironment,
      `CNI_COMMAND: "${command}" is not one of ADD, DEL, CHECK, VERSION`,
    );
  }
  const invocation: Invocation = {
    command: command as CniCommand,
    containerId: env.CNI_CONTAINERID ?? '',
    netns: env.CNI_NETNS ?? '',
    ifname: env.CNI_IFNAME ?? '',
    args: parseArgs(env.CNI_ARGS ?? ''),
  };
  const required: Record<CniCommand, readonly (keyof Invocation)[]> = {
    ADD: ['containerId', 'netns', 'ifname'],
    CHECK: ['containerId', 'netns', 'ifname'],
    DEL: ['containerId', 'ifname'],
    VERSION: [],
  };
  const variable = { containerId: 'CNI_CONTAINERID', netns: 'CNI_NETNS', ifname: 'CNI_IFNAME' };
  const missing = required[invocation.command].filter((key) => invocation[key] === '');
  if (missing.length > 0) {
    const names = missing.map((key) => variable[key as keyof typeof variable]).join(', ');
    throw new CniError(
      CNI_ERROR.invalidEnvironment,
      `${names}: required for ${invocation.command} but not set`,
    );
  }
  // A DEL of a sandbox no ADD could have set up has nothing to undo: only ADD and CHECK refuse.
  if (
    invocation.command !== 'DEL' &&
    invocation.containerId !== '' &&
    !CONTAINER_ID.test(invocation.containerId)
  ) {
    throw new CniError(
      CNI_ERROR.invalidEnvironment,
      `CNI_CONTAINERID: "${invocation.containerId.slice(0, 80)}" must start with a letter or digit, then letters, digits, "_", "." and "-" (at most 256)`,
    );
  }
  return invocation;
}

/** `CNI_ARGS`: `K1=V1;K2=V2`, as the specification gives it. */
function parseArgs(text: string): Map<string, string> {
  const args = new Map<string, string>();
  for (const pair of text.split(';')) {
    const cut = pair.indexOf('=');
    if (cut > 0) args.set(pair.slice(0, cut), pair.slice(cut + 1));
  }
  return args;
}

/**
 * The pod of an invocation: kubelet's `K8S_POD_NAMESPACE` and `K8S_POD_NAME`, and the sandbox.
 * Without them it is error 4, or, `optional`, no pod at all (a DEL has nothing to undo then).
 */
export function podOf(invocation: Invocation): PodRef;
export function podOf(invocation: Invocation, options: { optional: true }): PodRef | undefined;
export function podOf(
  invocation: Invocation,
  options: { optional?: boolean } = {},
): PodRef | undefined {
  const namespace = invocation.args.get('K8S_POD_NAMESPACE') ?? '';
  const name = invocation.args.get('K8S_POD_NAME') ?? '';
  if (!namespace || !name) {
    if (options.optional) return undefined;
    throw new CniError(
      CNI_ERROR.invalidEnvironment,
      'CNI_ARGS: K8S_POD_NAMESPACE and K8S_POD_NAME are required: berth assigns addresses to Kubernetes pods',
      `CNI_ARGS was "${[...invocation.args].map(([k, v]) => `${k}=${v}`).join(';')}"`,
    );
  }
  return { namespace, name, containerId: invocation.containerId };
}
